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

/// A consistent view of several keys at one moment: ``Defaults/updates(of:emitCurrentValue:)-(DefaultsKeys...,_)``.
public struct DefaultsSnapshot: Sendable, Equatable {
    /// The stored values of the snapshot's keys (missing keys absent).
    public let values: [String: PropertyList]
    let store: WeakStore

    /// A key's typed value in this snapshot (its default when it had none, or an unreadable one).
    public subscript<Value>(key: DefaultsKey<Value>) -> Value {
        guard let stored = values[key.name] else { return key.defaultValue }
        // A value the key refuses: what a typed read returns (the last valid value, else the default).
        if key.violation(stored) != nil { return store.store?.read(key) ?? key.defaultValue }
        return store.store?.decode(stored, for: key) ?? (try? Value(propertyList: stored)) ?? key.defaultValue
    }

    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    public static func == (lhs: DefaultsSnapshot, rhs: DefaultsSnapshot) -> Bool { lhs.values == rhs.values }
}

/// Snapshots of several keys (``Defaults/updates(of:emitCurrentValue:)-(DefaultsKeys...,_)``): the first is the state when
/// iteration started (unless it is not to be emitted), then one whenever a signal brings a different state.
struct SnapshotCursor: StreamCursor {
    let subscription: SignalSubscription?
    let keys: [String]
    let store: WeakStore
    /// The state last delivered, or the baseline changes are compared with (changes only: taken when the iterator
    /// was made). Nil until the first `next()` when the state then is to be delivered first.
    var last: [String: PropertyList]?

    mutating func next() async -> DefaultsSnapshot? {
        guard let subscription else { return nil }
        if last == nil, let store = store.store {
            let current = store.values(forKeys: keys)
            last = current
            return DefaultsSnapshot(values: current, store: self.store)
        }
        while await subscription.buffer.next() {
            guard let store = store.store else { break }
            let current = store.values(forKeys: keys)
            if current == last { continue }
            last = current
            return DefaultsSnapshot(values: current, store: self.store)
        }
        subscription.cancel()
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
    /// snapshots are dropped. Keys of other suites are read from this store's search list.
    public func updates(of keys: DefaultsKeys..., emitCurrentValue: Bool = true) -> DefaultsStream<DefaultsSnapshot> {
        updates(of: keys, emitCurrentValue: emitCurrentValue)
    }

    /// Consistent snapshots of a list of keys made at run time (the keys a program reads from its configuration,
    /// say), which the variadic form cannot take: the same stream.
    ///
    /// ```swift
    /// let followed: [DefaultsKeys] = configuredNames.map { DefaultsKey<String>($0, default: "") }
    /// for await settings in defaults.updates(of: followed) { reconfigure(settings) }
    /// ```
    public func updates(of keys: [DefaultsKeys], emitCurrentValue: Bool = true) -> DefaultsStream<DefaultsSnapshot> {
        let store = WeakStore(self)
        let names = keys.map(\.name)
        return DefaultsStream {
            let subscription = store.store?.subscribeSignal(forKeys: names)
            // Changes only: compared with the state when the iterator was made (after subscribing), so that a
            // change made before the first `next()` is delivered, not taken for the state to start from.
            let baseline = emitCurrentValue ? nil : store.store?.values(forKeys: names)
            return SnapshotCursor(subscription: subscription, keys: names, store: store, last: baseline)
        }
    }
}
