public import Observation

/// Typed settings for the Observation framework: reading `settings[.key]` inside `withObservationTracking`
/// (or a SwiftUI view, elsewhere) registers interest, and any change of that key's effective value — from
/// this object, another store, or another process — fires the observation.
///
/// ```swift
/// let settings = ObservableDefaults(defaults)
/// withObservationTracking {
///     render(limit: settings[.rateLimit])
/// } onChange: {
///     scheduleRender()        // after `defaults write <domain> RateLimit -int 50` in a shell, too
/// }
/// ```
///
/// Model types built on it are observable as they are, because tracking follows the reads:
///
/// ```swift
/// final class ServerSettings {
///     let settings = ObservableDefaults()
///     var rateLimit: Int {
///         get { settings[.rateLimit] }
///         set { settings[.rateLimit] = newValue }
///     }
/// }
/// ```
///
/// Changes by others arrive through a change stream, so their observation fires on that stream's task,
/// a moment after the change, not inside the writer's call.
public final class ObservableDefaults: Observable, Sendable {
    /// The store read and written.
    let store: Defaults
    private let registrar = ObservationRegistrar()
    /// For each key read so far (by suite and name), how to announce its change to the registrar.
    private let announcers = Lock<[String: @Sendable () -> Void]>([:])
    /// One change-stream listener per store (the main one and the stores of suites).
    private let listeners = Lock<[ObjectIdentifier: Task<Void, Never>]>([:])
    /// The value each slot was last announced with, so that the stream's echo of this object's own write
    /// (already announced by the setter) is not announced twice.
    private let announced = Lock<[String: PropertyList?]>([:])

    /// Settings backed by a store (``Defaults/standard`` by default).
    public init(_ store: Defaults = .standard) {
        self.store = store
    }

    deinit {
        for task in listeners.withLock({ $0.values }) { task.cancel() }
    }

    /// A key's value; reading registers interest with the Observation framework, writing stores it and
    /// notifies observers.
    public subscript<Value>(key: DefaultsKey<Value>) -> Value {
        get {
            registrar.access(self, keyPath: \.[key])
            follow(key)
            return store[key]
        }
        set {
            registrar.withMutation(of: self, keyPath: \.[key]) {
                store[key] = newValue
                let owner = store.store(for: key)
                let stored = owner.value(forKey: key.name)
                announced.withLock { $0[Self.slot(owner, key.name)] = .some(stored) }
            }
        }
    }

    private static func slot(_ suite: Defaults, _ name: String) -> String {
        "\(ObjectIdentifier(suite).hashValue)\u{0}\(name)"
    }

    /// Makes sure that a change of the key reaches the registrar.
    private func follow<Value>(_ key: DefaultsKey<Value>) {
        let owner = store.store(for: key)
        let slot = Self.slot(owner, key.name)
        let isNew = announcers.withLock { announcers in
            guard announcers[slot] == nil else { return false }
            announcers[slot] = { [weak self] in
                guard let self else { return }
                self.registrar.withMutation(of: self, keyPath: \.[key]) {}
            }
            return true
        }
        guard isNew else { return }
        listeners.withLock { listeners in
            let id = ObjectIdentifier(owner)
            guard listeners[id] == nil else { return }
            // Subscribed here, before the read returns, so that no change after it can be missed.
            let iterator = owner.changes().makeAsyncIterator()
            listeners[id] = Task { [weak self] in
                var iterator = iterator
                while let change = await iterator.next() {
                    guard let self else { return }
                    let slot = Self.slot(owner, change.key)
                    let isEcho = self.announced.withLock { announced in
                        defer { announced[slot] = .some(change.newValue) }
                        return announced[slot] == .some(change.newValue)
                    }
                    if isEcho { continue }
                    let announce = self.announcers.withLock { $0[slot] }
                    announce?()
                }
            }
        }
    }
}
