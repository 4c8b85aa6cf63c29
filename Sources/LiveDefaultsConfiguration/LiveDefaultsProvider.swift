public import Configuration
public import LiveDefaults

/// A swift-configuration provider over a LiveDefaults store: the same files as `UserDefaults` and the
/// `defaults` command, read live. Another process's write (the `defaults` command, an editor, a second
/// server) reaches ``watchValue(forKey:type:updatesHandler:)`` and ``watchSnapshot(updatesHandler:)`` as fast
/// as it reaches the store's own `updates(forKey:)` — through inotify, without polling.
///
/// ```swift
/// let defaults = Defaults.standard                  // or Defaults(suiteName: "com.example.server")
/// let config = ConfigReader(provider: LiveDefaultsProvider(defaults: defaults))
/// let port = config.int(forKey: "http.port", default: 8080)  // {"http": {"port": 8080}} or "http.port"
/// ```
///
/// Keys and values map as swift-configuration's `PropertyListSnapshot` maps a property-list file (see
/// ``LiveDefaultsConfigMapping``): dot-separated components through nested dictionaries, numbers readable
/// as int, double and bool, arrays of scalars. Values are read from the store's whole search list (argument
/// domain, application domain, suites, global domain, registered defaults), as `Defaults` reads them.
public struct LiveDefaultsProvider: ConfigProvider, CustomStringConvertible {
    /// The store read.
    public let defaults: Defaults
    /// The name swift-configuration reports for values from this provider.
    public let providerName: String
    /// Which values are secrets (redacted in swift-configuration's logs and access reports). The rule sees
    /// the dot-separated key and the stored `PropertyList`. Keys that the domain's published schema marks
    /// secret (``DefaultsKey`` with `isSecret: true`, ``Defaults/publishSchema(for:)``) are secrets whatever
    /// the rule says, and so is everything below them.
    public let secretsSpecifier: SecretsSpecifier<String, any Sendable>

    /// A provider reading `defaults` (contract: `LiveDefaultsProvider(defaults:)`).
    public init(defaults: Defaults) {
        self.init(defaults: defaults, secretsSpecifier: .none)
    }

    /// A provider reading `defaults`, with a rule for secrets and, optionally, a name of its own.
    public init(
        defaults: Defaults, secretsSpecifier: SecretsSpecifier<String, any Sendable>, providerName: String? = nil
    ) {
        self.defaults = defaults
        // The schema as published when the provider is made (a program publishes at start-up); one that
        // cannot be read marks nothing, and the rule given still applies.
        let schema = try? defaults.publishedSchema()
        let marked = Set(schema?.keys.values.filter(\.isSecret).map(\.name) ?? [])
        if marked.isEmpty {
            self.secretsSpecifier = secretsSpecifier
        } else {
            self.secretsSpecifier = .dynamic { key, value in
                marked.contains(key) || marked.contains { key.hasPrefix($0 + ".") }
                    || secretsSpecifier.isSecret(key: key, value: value)
            }
        }
        self.providerName = providerName ?? "LiveDefaultsProvider[\(defaults.configuration.applicationDomain)]"
    }

    /// The provider's name.
    public var description: String { providerName }

    // MARK: ConfigProvider

    /// The value from the store's current view (lock-free reads; no disk access).
    public func value(forKey key: AbsoluteConfigKey, type: ConfigType) throws -> LookupResult {
        try Self.lookup(key, type: type, secrets: secretsSpecifier) { defaults.value(forKey: $0) }
    }

    /// The value after writing this process's pending changes and re-reading every file of the search list
    /// (a write failure is the store's to report, through `lastError` and its error handler; the value is
    /// then the one in memory).
    public func fetchValue(forKey key: AbsoluteConfigKey, type: ConfigType) async throws -> LookupResult {
        try? await defaults.flush()
        return try value(forKey: key, type: type)
    }

    /// The value now, then each time it changes — by this process or another — until the handler returns.
    /// Changes that leave the value as it was are not delivered; when several arrive before the handler reads,
    /// it sees the newest.
    public func watchValue<Return: ~Copyable>(
        forKey key: AbsoluteConfigKey,
        type: ConfigType,
        updatesHandler:
            nonisolated(nonsending) (
                _ updates: ConfigUpdatesAsyncSequence<Result<LookupResult, any Error>, Never>
            ) async throws -> Return
    ) async throws -> Return {
        let names = LiveDefaultsConfigMapping.topLevelNames(forComponents: key.components)
        // Subscribed (the iterator made) before the first value is read, so no change slips between the two.
        let changes = defaults.changes().makeAsyncIterator()
        let (stream, continuation) = AsyncStream<Result<LookupResult, any Error>>.makeStream(
            bufferingPolicy: .bufferingNewest(1))
        let read: @Sendable () -> Result<LookupResult, any Error> = { [self] in
            Result { try value(forKey: key, type: type) }
        }
        let first = read()
        continuation.yield(first)
        let follower = Task {
            var previous = first
            var changes = changes
            while let change = await changes.next() {
                guard names.contains(change.key) else { continue }
                let next = read()
                if !Self.same(next, previous) {
                    continuation.yield(next)
                    previous = next
                }
            }
            continuation.finish()
        }
        return try await Self.handle(stream, followedBy: follower, with: updatesHandler)
    }

    /// One consistent view of the whole search list.
    public func snapshot() -> any ConfigSnapshot {
        LiveDefaultsSnapshot(
            values: defaults.dictionaryRepresentationValues(), providerName: providerName,
            secretsSpecifier: secretsSpecifier)
    }

    /// A snapshot now, then a new one after each change of the view — by this process or another — until the
    /// handler returns. When several arrive before the handler reads, it sees the newest.
    public func watchSnapshot<Return: ~Copyable>(
        updatesHandler:
            nonisolated(nonsending) (_ updates: ConfigUpdatesAsyncSequence<any ConfigSnapshot, Never>)
            async throws -> Return
    ) async throws -> Return {
        // Subscribed before the first snapshot is taken, so no change slips between the two.
        let changes = defaults.changes().makeAsyncIterator()
        let (stream, continuation) = AsyncStream<any ConfigSnapshot>.makeStream(bufferingPolicy: .bufferingNewest(1))
        continuation.yield(snapshot())
        let follower = Task { [self] in
            var changes = changes
            while await changes.next() != nil { continuation.yield(snapshot()) }
            continuation.finish()
        }
        return try await Self.handle(stream, followedBy: follower, with: updatesHandler)
    }

    // MARK: Internals

    /// Runs a watch's handler over its stream, then ends the follower feeding the stream and waits for it, whether
    /// the handler returned or threw: when a watch returns, its subscription to the store is gone (a cancelled
    /// follower's next change is nil at once, and it unsubscribes).
    nonisolated(nonsending) private static func handle<Element: Sendable, Return: ~Copyable>(
        _ stream: AsyncStream<Element>,
        followedBy follower: Task<Void, Never>,
        with updatesHandler:
            nonisolated(nonsending) (_ updates: ConfigUpdatesAsyncSequence<Element, Never>) async throws -> Return
    ) async throws -> Return {
        let result: Result<Return, any Error>
        do {
            result = .success(try await updatesHandler(ConfigUpdatesAsyncSequence(stream)))
        } catch {
            result = .failure(error)
        }
        follower.cancel()
        await follower.value
        return try result.get()
    }

    /// The lookup both the provider and its snapshots make.
    static func lookup(
        _ key: AbsoluteConfigKey, type: ConfigType, secrets: SecretsSpecifier<String, any Sendable>,
        in values: (String) -> PropertyList?
    ) throws -> LookupResult {
        let encodedKey = key.components.joined(separator: ".")
        guard let stored = LiveDefaultsConfigMapping.value(forComponents: key.components, lookup: values) else {
            return LookupResult(encodedKey: encodedKey, value: nil)
        }
        let content = try LiveDefaultsConfigMapping.content(of: stored, as: type, key: encodedKey)
        return LookupResult(
            encodedKey: encodedKey,
            value: ConfigValue(content, isSecret: secrets.isSecret(key: encodedKey, value: stored)))
    }

    /// Whether two lookups give the same answer (a failure is never the same as another).
    private static func same(_ first: Result<LookupResult, any Error>, _ second: Result<LookupResult, any Error>)
        -> Bool
    {
        guard case .success(let a) = first, case .success(let b) = second else { return false }
        return a == b
    }
}
