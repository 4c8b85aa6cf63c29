/// Change streams: a key's effective value, every effective change, one domain's changes.
extension Defaults {
    /// The effective value of a key now and after every change, from this process or any other.
    ///
    /// ```swift
    /// for await value in defaults.updates(forKey: "LogLevel") {
    ///     logger.logLevel = value?.stringValue.flatMap(Logger.Level.init) ?? .info
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - key: The key to follow.
    ///   - emitCurrentValue: Whether the first element is the value when iteration starts (the default), so
    ///     that a loop configures itself once and then follows changes. Pass false to get changes only.
    /// - Returns: A sequence whose elements are the key's effective values (nil when no domain has the key);
    ///   see ``DefaultsStream`` for buffering and lifetime.
    public func updates(forKey key: String, emitCurrentValue: Bool = true) -> DefaultsStream<PropertyList?> {
        let store = WeakStore(self)
        return DefaultsStream {
            ValueCursor(subscription: store.store?.subscribeValue(forKey: key, emitCurrentValue: emitCurrentValue))
        }
    }

    /// Every change of an effective value in this store (see ``KeyChange``), whoever made it.
    /// There is no initial element: each element is a change made after iteration started. Pending changes
    /// are coalesced per key (see ``DefaultsStream``).
    ///
    /// ```swift
    /// for await change in defaults.changes() where change.origin == .external {
    ///     log.info("\(change.key) is now \(change.newValue.map { "\($0)" } ?? "unset")")
    /// }
    /// ```
    public func changes() -> DefaultsStream<KeyChange> {
        changeStream(inDomain: nil)
    }

    /// Every change of one persistent domain's own values, whether or not the domain is in this store's
    /// search list (its files are watched while a stream follows it).
    ///
    /// - Throws: ``DefaultsError/Code/invalidDomainName``.
    public func changes(inDomain domain: String) throws(DefaultsError) -> DefaultsStream<KeyChange> {
        try DomainName.validate(domain)
        return changeStream(inDomain: domain)
    }

    /// Changes of the store's effective values (`domain` nil) or of one domain's own values.
    private func changeStream(inDomain domain: String?) -> DefaultsStream<KeyChange> {
        let store = WeakStore(self)
        return DefaultsStream { ChangeCursor(subscription: store.store?.subscribeChanges(inDomain: domain)) }
    }

    /// Ends every change stream of this store, for a graceful shutdown: each `for await` loop over
    /// ``updates(forKey:emitCurrentValue:)``, ``changes()``, typed updates or snapshots ends once it has
    /// taken what it was already given, and a stream asked for later ends at once (after its current value,
    /// when it emits one). Reads and writes go on working; nothing is flushed (see ``flush()``).
    ///
    /// `DefaultsService` (the `LiveDefaultsService` module) calls it when a service group shuts down.
    public func finishStreams() {
        let resumptions = state.withLock { $0.view.finishStreams() }
        for resume in resumptions { resume() }
    }

    /// Whether ``finishStreams()`` was called (public as `streamsFinished` in LiveDefaultsTesting).
    package var streamsAreFinished: Bool {
        state.withLock { $0.view.streamsFinished }
    }

    /// The number of live stream iterators on this store (public as `activeObserverCount` in
    /// LiveDefaultsTesting).
    package var liveIteratorCount: Int {
        state.withLock { $0.view.subscribers.count }
    }

    // MARK: Subscriptions

    func subscribeValue(forKey key: String, emitCurrentValue: Bool) -> ValueSubscription {
        let buffer = ValueBuffer()
        let id = state.withLock { state in
            state.view.subscribeValue(forKey: key, buffer: buffer, emitCurrentValue: emitCurrentValue)
        }
        return ValueSubscription(id: id, buffer: buffer, store: WeakStore(self))
    }

    func subscribeChanges(inDomain domain: String?) -> ChangeSubscription {
        let buffer = ChangeBuffer()
        guard let domain else {
            let id = state.withLock { $0.view.subscribeChanges(buffer: buffer) }
            return ChangeSubscription(id: id, buffer: buffer, store: WeakStore(self))
        }
        let attached = state.withLock { $0.search.persistent[domain] != nil }
        let fresh = attached ? nil : attach(domain)
        let (id, unused): (UInt64, PersistentDomain?) = state.withLock { state in
            var unused = fresh
            if state.search.persistent[domain] == nil, let fresh {
                state.search.persistent[domain] = fresh
                unused = nil
            }
            state.search.persistent[domain]?.streams += 1
            return (state.view.subscribeChanges(inDomain: domain, buffer: buffer), unused)
        }
        if let unused { detach(unused) }
        return ChangeSubscription(id: id, buffer: buffer, store: WeakStore(self))
    }

    /// Subscribes one signal to keys of several stores (`keys` here, and `others`' in their stores): a change of
    /// any of them wakes the one consumer. The subscriptions end together when the buffer finishes.
    func subscribeSignal(forKeys keys: [String], andIn others: [(store: Defaults, keys: [String])])
        -> [SignalSubscription]
    {
        let buffer = SignalBuffer()
        return [subscribeSignal(forKeys: keys, buffer: buffer)]
            + others.map { other in other.store.subscribeSignal(forKeys: other.keys, buffer: buffer) }
    }

    func subscribeSignal(forKeys keys: [String], buffer: SignalBuffer = SignalBuffer()) -> SignalSubscription {
        let id = state.withLock { $0.view.subscribeSignal(forKeys: keys, buffer: buffer) }
        return SignalSubscription(id: id, buffer: buffer, store: WeakStore(self))
    }

    /// The stored values of several keys, read under one lock.
    func values(forKeys keys: [String]) -> [String: PropertyList] {
        state.withLock { state in
            var values: [String: PropertyList] = [:]
            for key in keys { values[key] = state.view.merged[key] }
            return values
        }
    }

    func unsubscribe(_ id: UInt64) {
        // A released buffer may be the last reference to a finished stream: released after the lock.
        let (buffer, detached): (ChangeBuffer?, PersistentDomain?) = state.withLock { state in
            switch state.view.unsubscribe(id) {
            case .none:
                return (nil, nil)
            case .all(let buffer):
                return (buffer, nil)
            case .domain(let domain, let buffer):
                state.search.persistent[domain]?.streams -= 1
                if let attachment = state.search.persistent[domain], attachment.streams == 0, !attachment.inSearchList {
                    state.search.persistent.removeValue(forKey: domain)
                    return (buffer, attachment)
                }
                return (buffer, nil)
            }
        }
        _ = buffer
        if let detached { detach(detached) }
    }
}
