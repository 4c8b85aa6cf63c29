/// A key's typed values (``Defaults/updates(_:emitCurrentValue:)``): a stored value the key refuses is never
/// delivered, and consecutive equal values are dropped.
struct TypedValueCursor<Value: DefaultsSerializable>: StreamCursor {
    var base: ValueCursor
    let key: DefaultsKey<Value>
    let store: WeakStore
    var last: Value?

    mutating func next() async -> Value? {
        while let stored = await base.next() {
            let value: Value
            if let stored, let violation = key.violation(stored) {
                // Never a value the key refuses: reported (once), and the stream goes on from the
                // last value it delivered; a first value is what a typed read returns now (the last
                // valid value the store saw, else the default).
                store.store?.reportRefusal(violation)
                guard last == nil else { continue }
                value = store.store?.read(key) ?? key.defaultValue
            } else {
                value = stored.map { store.store?.decode($0, for: key) ?? key.defaultValue } ?? key.defaultValue
            }
            if let last, areEqual(last, value) { continue }
            last = value
            return value
        }
        return nil
    }
}

/// Whether two values are equal, when their type is `Equatable`; false otherwise.
func areEqual<T>(_ lhs: T, _ rhs: T) -> Bool {
    guard let lhs = lhs as? any Equatable else { return false }
    return isEqual(lhs, rhs)
}

private func isEqual<E: Equatable>(_ lhs: E, _ rhs: Any) -> Bool {
    guard let rhs = rhs as? E else { return false }
    return lhs == rhs
}

/// A consistent view of several keys at one moment: ``Defaults/snapshot(of:)-(AnyDefaultsKey...)`` and
/// ``Defaults/updates(of:emitCurrentValue:)-(AnyDefaultsKey...,_)``.
///
/// Each key is read from the store that holds it, as `defaults[key]` reads it: the store's own keys from its
/// search list, a key of another suite from that suite's store. The keys of one store are read together under its
/// lock.
public struct DefaultsSnapshot: Sendable, Equatable {
    /// The stored values of the snapshot's keys of this store (missing keys absent).
    public let values: [String: PropertyList]
    /// The stored values of its keys of other suites, by suite.
    let suiteValues: [String: [String: PropertyList]]
    let store: WeakStore

    init(values: [String: PropertyList], suiteValues: [String: [String: PropertyList]] = [:], store: WeakStore) {
        self.values = values
        self.suiteValues = suiteValues
        self.store = store
    }

    /// A key's typed value in this snapshot (its default when it had none, or an unreadable one).
    public subscript<Value>(key: DefaultsKey<Value>) -> Value {
        let holder = store.store?.store(for: key)
        let stored =
            if let suite = key.suite, let values = suiteValues[suite] { values[key.name] } else { values[key.name] }
        guard let stored else { return key.defaultValue }
        // A value the key refuses: what a typed read returns (the last valid value, else the default).
        if key.violation(stored) != nil { return holder?.read(key) ?? key.defaultValue }
        return holder?.decode(stored, for: key) ?? (try? Value(propertyList: stored)) ?? key.defaultValue
    }

    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    public static func == (lhs: DefaultsSnapshot, rhs: DefaultsSnapshot) -> Bool {
        lhs.values == rhs.values && lhs.suiteValues == rhs.suiteValues
    }
}

/// The keys of a snapshot by the store that holds each (``Defaults/store(forSuite:)``), as the subscript finds
/// them: the store's own, and each other suite's with its store.
struct SnapshotKeys: Sendable {
    /// The names of the keys the store itself holds.
    let own: [String]
    /// The keys of other suites: the suite, its store, the names.
    let suites: [(suite: String, store: WeakStore, names: [String])]

    /// Groups `keys` for `store`, guarding each in the store that holds it (a value refused later reads as the
    /// last valid one).
    init(_ keys: [AnyDefaultsKey], of store: Defaults) {
        var own: [String] = []
        var suites: [(suite: String, store: WeakStore, names: [String])] = []
        for key in keys {
            let holder = store.store(forSuite: key.suite)
            holder.guardKey(key)
            guard let suite = key.suite, holder !== store else {
                own.append(key.name)
                continue
            }
            if let index = suites.firstIndex(where: { $0.suite == suite }) {
                suites[index].names.append(key.name)
            } else {
                suites.append((suite, WeakStore(holder), [key.name]))
            }
        }
        self.own = own
        self.suites = suites
    }

    /// The snapshot now: each store's keys read under its lock.
    func snapshot(of store: Defaults) -> DefaultsSnapshot {
        var suiteValues: [String: [String: PropertyList]] = [:]
        for suite in suites { suiteValues[suite.suite] = suite.store.store?.values(forKeys: suite.names) ?? [:] }
        return DefaultsSnapshot(values: store.values(forKeys: own), suiteValues: suiteValues, store: WeakStore(store))
    }

    /// Subscribes one signal buffer to every store's keys: a change in any of them wakes the snapshot's stream.
    func subscribe(in store: Defaults) -> [SignalSubscription] {
        store.subscribeSignal(
            forKeys: own, andIn: suites.compactMap { suite in suite.store.store.map { ($0, suite.names) } })
    }
}

/// Snapshots of several keys (``Defaults/updates(of:emitCurrentValue:)-(AnyDefaultsKey...,_)``): the first is the state when
/// iteration started (unless it is not to be emitted), then one whenever a signal brings a different state.
struct SnapshotCursor: StreamCursor {
    /// One per store whose keys the snapshot holds, all on one buffer; empty when the store was gone.
    let subscriptions: [SignalSubscription]
    let keys: SnapshotKeys
    let store: WeakStore
    /// The state last delivered, or the baseline changes are compared with (changes only: taken when the iterator
    /// was made). Nil until the first `next()` when the state then is to be delivered first.
    var last: DefaultsSnapshot?

    mutating func next() async -> DefaultsSnapshot? {
        guard let buffer = subscriptions.first?.buffer else { return nil }
        if last == nil, let store = store.store {
            let current = keys.snapshot(of: store)
            last = current
            return current
        }
        while await buffer.next() {
            guard let store = store.store else { break }
            let current = keys.snapshot(of: store)
            if current == last { continue }
            last = current
            return current
        }
        for subscription in subscriptions { subscription.cancel() }
        return nil
    }
}

/// Typed change streams over the store's ``Defaults/updates(forKey:emitCurrentValue:)``.
extension Defaults {
    /// A key's typed value now and after every change, from this process or any other.
    ///
    /// ```swift
    /// for await limit in defaults.updates(.rateLimit) {
    ///     limiter.rate = limit
    /// }
    /// ```
    ///
    /// A stored value the key refuses (wrong shape, out of range, not a choice) is never delivered: it is
    /// reported once and the stream waits for the next valid value. Consecutive equal values are dropped:
    /// equal stored values always, and equal typed values too when `Value` is `Equatable` (for example a
    /// number written as `"42"` and then as `42`). Buffering and lifetime: ``DefaultsStream``.
    ///
    /// - Parameters:
    ///   - key: The typed key to follow.
    ///   - emitCurrentValue: Whether the first element is the value when iteration starts (the default);
    ///     pass false for changes only.
    public func updates<Value>(_ key: DefaultsKey<Value>, emitCurrentValue: Bool = true) -> DefaultsStream<Value> {
        let store = store(for: key)
        // The key's guard follows the key from now on: a value refused later reads as the last valid one.
        store.guardKey(key)
        let weakStore = WeakStore(store)
        return DefaultsStream {
            TypedValueCursor(
                base: ValueCursor(
                    subscription: weakStore.store?.subscribeValue(forKey: key.name, emitCurrentValue: emitCurrentValue)
                ),
                key: key, store: weakStore)
        }
    }

    /// Consistent snapshots of several keys, one whenever any of them changes.
    ///
    /// ```swift
    /// for await settings in defaults.updates(of: .rateLimit, .maintenance) {
    ///     apply(limit: settings[.rateLimit], maintenance: settings[.maintenance])
    /// }
    /// ```
    ///
    /// Each snapshot is taken under the store's lock, so it never mixes the state before a change of one key
    /// with the state after a simultaneous change of another. The first snapshot is the current state (unless
    /// `emitCurrentValue` is false: then the first change after the iterator was made, even one made before the
    /// first `next()`). A slow consumer gets the newest snapshot, never a queue; equal consecutive
    /// snapshots are dropped. A key of another suite is read from that suite's store, as `defaults[key]` reads it
    /// (``DefaultsSnapshot``).
    public func updates(of keys: AnyDefaultsKey..., emitCurrentValue: Bool = true) -> DefaultsStream<DefaultsSnapshot> {
        updates(of: keys, emitCurrentValue: emitCurrentValue)
    }

    /// Consistent snapshots of a list of keys made at run time (the keys a program reads from its configuration,
    /// say), which the variadic form cannot take: the same stream.
    ///
    /// ```swift
    /// let followed: [AnyDefaultsKey] = configuredNames.map { DefaultsKey<String>($0, default: "") }
    /// for await settings in defaults.updates(of: followed) { reconfigure(settings) }
    /// ```
    public func updates(of keys: [AnyDefaultsKey], emitCurrentValue: Bool = true) -> DefaultsStream<DefaultsSnapshot> {
        let store = WeakStore(self)
        let grouped = SnapshotKeys(keys, of: self)
        return DefaultsStream {
            let subscriptions = store.store.map { grouped.subscribe(in: $0) } ?? []
            // Changes only: compared with the state when the iterator was made (after subscribing), so that a
            // change made before the first `next()` is delivered, not taken for the state to start from.
            let baseline = emitCurrentValue ? nil : store.store.map { grouped.snapshot(of: $0) }
            return SnapshotCursor(subscriptions: subscriptions, keys: grouped, store: store, last: baseline)
        }
    }
}
