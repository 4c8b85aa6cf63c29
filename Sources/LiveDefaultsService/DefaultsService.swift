public import LiveDefaults
public import ServiceLifecycle

/// A swift-service-lifecycle `Service` that shuts LiveDefaults stores down with the rest of the program:
/// when the service group starts a graceful shutdown (SIGTERM, SIGINT, or another service ending), it
/// writes every pending change to disk and ends the stores' change streams, so that `for await` loops over
/// `updates(forKey:)` or `changes()` — an HTTP handler streaming settings, a task reconfiguring a component —
/// end and let their tasks finish.
///
/// ```swift
/// let defaults = Defaults.standard                  // or Defaults(suiteName: "com.example.server")
/// let group = ServiceGroup(
///     services: [DefaultsService(defaults), server],
///     gracefulShutdownSignals: [.sigterm, .sigint],
///     logger: logger)
/// try await group.run()
/// ```
///
/// Put it **first** in the group's services: a group shuts its services down in reverse order and waits
/// for each, so it then runs after the others have stopped — their last writes are flushed, and a service
/// whose loop ended early would count as one that "finished unexpectedly". The other services end their own
/// loops over the store's streams on graceful shutdown (`for await x in stream.cancelOnGracefulShutdown()`);
/// this service ends whatever streams remain, such as those of HTTP handlers. With Hummingbird, pass it first
/// in the application's `services:` (or `app.addServices` before the others).
public struct DefaultsService: Service, CustomStringConvertible {
    /// The stores this service shuts down.
    public let stores: [Defaults]

    /// A service for one or more stores.
    public init(_ stores: Defaults...) {
        self.stores = stores
    }

    /// A service for an array of stores.
    public init(stores: [Defaults]) {
        self.stores = stores
    }

    /// Waits for the group's graceful shutdown (or cancellation), then flushes each store and ends its
    /// streams.
    ///
    /// - Throws: the first write failure met while flushing (the change stays in memory, and the store's
    ///   `lastError` and error handler have it too), after every store has been flushed and finished.
    public func run() async throws {
        // Returns when the group shuts down gracefully; throws CancellationError when the task is cancelled.
        // Either way the stores are shut down.
        try? await gracefulShutdown()
        var firstFailure: DefaultsError?
        for store in stores {
            do throws(DefaultsError) {
                try await store.flush()
            } catch {
                if firstFailure == nil { firstFailure = error }
            }
            store.finishStreams()
        }
        if let firstFailure { throw firstFailure }
    }

    /// The domains of the stores.
    public var description: String {
        "DefaultsService(\(stores.map(\.configuration.applicationDomain).joined(separator: ", ")))"
    }
}
