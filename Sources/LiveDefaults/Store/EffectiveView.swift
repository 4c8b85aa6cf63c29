/// What a store shows: the effective value of every key, and everything that must follow it — the typed keys'
/// lock-free read slots, the missing-key filter, and the buffers of the change streams.
///
/// One owner, one way in: every change of the effective values — a local `set`, another process's write, a
/// new search list, a registration, a volatile domain — goes through ``apply(_:)``, which updates the merged
/// dictionary, the slots and the filter together and hands back what the streams must be told. The view lives
/// in the store's state, under its lock; ``apply(_:)`` runs under that lock and returns the resumptions to
/// run after it (never a continuation resumed under a lock).
///
/// A change computed outside the lock (``Change/all(_:domain:basedOn:)``, a full rebuild that reads every
/// file) names the ``generation`` it was computed from; if the view moved on meanwhile the change is refused
/// (`apply` returns nil) and the caller computes it again, so a rebuild never publishes over a newer value.
///
/// The slots, the filter and the value cache are reference types because readers use them without the lock
/// (see ``ScalarReadSlots``, ``MissingKeyFilter`` and ``ValueReadCache``); the store keeps the same three
/// objects for those readers, and this view is their only writer.
struct EffectiveView {
    /// A key whose effective value was resolved again (after a file that provides it changed).
    struct ResolvedKey {
        var key: String
        /// The key's effective value now; nil when no domain has it.
        var value: PropertyList?
    }

    /// A change of the effective values.
    enum Change {
        /// Some keys were resolved again, under the lock: a file of `domain` changed, by this process or another.
        case keys([ResolvedKey], domain: String, origin: ChangeOrigin)
        /// One key resolved again (a single `set`: no array to make).
        case key(ResolvedKey, domain: String, origin: ChangeOrigin)
        /// The whole view, computed from the sources as they were at generation `basedOn`: the search list, a
        /// volatile domain or the registration domain changed (attributed to `domain`).
        case all(MergedValues, domain: String, basedOn: Int)
    }

    /// What applying a change did.
    struct Applied {
        /// Whether any effective value changed (for a full view that no stream follows, true: the two views
        /// are not compared).
        var changed = false
        /// The stream consumers to resume once the lock is released.
        var resumptions: [Resumption] = []
        /// Stored values that typed keys refuse and that no typed read will return (each reported once by
        /// the store, after the lock is released).
        var refusals: [SchemaViolation] = []
    }

    /// What a typed key's slot shows when the stored value is one the key refuses (``DefaultsKeys/validate``):
    /// the last valid value the store saw for the key, else nothing (the key's default).
    struct SlotGuard {
        /// The read slot it guards.
        let slot: Int
        let validate: @Sendable (PropertyList) -> SchemaViolation?
        /// The last stored value the key accepted; nil when there was none or the key was removed since.
        var lastValid: PropertyList?
        /// The refused value the slot is holding back, if it is holding one back now.
        var refused: PropertyList?
    }

    /// The consumers of change streams, by kind.
    struct Subscribers {
        var next: UInt64 = 0
        var values: [String: [UInt64: ValueBuffer]] = [:]
        var valueKeys: [UInt64: String] = [:]
        var all: [UInt64: ChangeBuffer] = [:]
        var domains: [String: [UInt64: ChangeBuffer]] = [:]
        var domainOfSubscriber: [UInt64: String] = [:]
        var signals: [String: [UInt64: SignalBuffer]] = [:]
        var signalKeys: [UInt64: [String]] = [:]

        var count: Int { valueKeys.count + all.count + domainOfSubscriber.count + signalKeys.count }

        mutating func nextID() -> UInt64 {
            next += 1
            return next
        }
    }

    /// A subscription that ended (see ``unsubscribe(_:)``).
    enum Unsubscribed {
        case none
        /// A store-wide change stream; its buffer is released by the caller, outside the lock.
        case all(ChangeBuffer)
        /// A domain's change stream: the store detaches the domain if nothing else needs it.
        case domain(String, ChangeBuffer?)
    }

    /// The effective value of every key: what ``Defaults/value(forKey:)`` returns.
    private(set) var merged = MergedValues()
    /// Counts changes of ``merged``; a full rebuild computed at an older generation is refused.
    private(set) var generation = 0
    /// The ``KeyChange/batch`` of the changes the last ``apply(_:)`` (or ``beginBatch()``) delivered.
    private(set) var batch: UInt64 = 0
    private(set) var subscribers = Subscribers()
    /// Whether ``finishStreams()`` ended the streams: a stream subscribed later ends at once.
    private(set) var streamsFinished = false
    /// The filled read slots of each key name, each with its guard (every typed key has one): validation
    /// happens here, when a value changes, so that a typed read costs no check. Kept by name, and changed in
    /// place, so that a change costs one lookup of the name whatever the number of slots.
    private var slotsByName: [String: [SlotGuard]] = [:]
    /// Two bits per name in ``slotsByName``, from the FNV hash a change computes anyway: a change of a key no
    /// typed key reads (a clear bit) skips the dictionary, whose lookup hashes the name again.
    private var slotNames = SlotNameBits()
    let readSlots: ScalarReadSlots
    let missingKeys: MissingKeyFilter
    let valueCache: ValueReadCache
    /// Around every change of the three above: lock-free readers see whole versions.
    let gate: ViewGate

    init(readSlots: ScalarReadSlots, missingKeys: MissingKeyFilter, valueCache: ValueReadCache, gate: ViewGate) {
        self.readSlots = readSlots
        self.missingKeys = missingKeys
        self.valueCache = valueCache
        self.gate = gate
    }

    // MARK: Changing the view

    /// Applies a change to the merged view, the read slots, the missing-key filter and the value cache, and
    /// delivers the effective changes to the streams.
    ///
    /// - Returns: nil, having changed nothing, for a full view computed at an older generation.
    mutating func apply(_ change: Change) -> Applied? {
        defer { valueCache.releaseRetired() }
        if case .all(_, _, let basedOn) = change, basedOn != generation { return nil }
        beginBatch()
        let gate = gate
        return gate.changing(&self) { $0.applyUngated(change) }
    }

    /// ``apply(_:)``'s work, while lock-free readers give up.
    private mutating func applyUngated(_ change: Change) -> Applied {
        var applied = Applied()
        switch change {
        case .keys(let keys, let domain, let origin):
            for resolved in keys { apply(resolved, domain: domain, origin: origin, to: &applied) }
            if applied.changed { keysChanged() }
        case .key(let resolved, let domain, let origin):
            apply(resolved, domain: domain, origin: origin, to: &applied)
            if applied.changed { keysChanged() }
        case .all(let view, let domain, _):
            generation &+= 1
            let before = merged
            missingKeys.insert(all: view)
            merged = view
            valueCache.refresh(from: view)
            for index in slotsByName.indices {
                let name = slotsByName.keys[index]
                for position in slotsByName.values[index].indices {
                    Self.write(
                        &slotsByName.values[index][position], view[name], to: readSlots, refusals: &applied.refusals)
                }
            }
            // Nobody to tell (always so when the store opens): no need to compare the two views.
            applied.changed = true
            guard subscribers.count > 0 else { return applied }
            let deltas = KeyDelta.between(before, view)
            applied.changed = !deltas.isEmpty
            for delta in deltas {
                let change = KeyChange(
                    domain: domain, key: delta.key, oldValue: delta.old, newValue: delta.new, origin: .local,
                    batch: batch)
                applied.resumptions += deliver(change)
            }
        }
        return applied
    }

    /// One key of a ``Change/keys(_:domain:origin:)`` or ``Change/key(_:domain:origin:)`` change.
    private mutating func apply(
        _ resolved: ResolvedKey, domain: String, origin: ChangeOrigin, to applied: inout Applied
    ) {
        let key = resolved.key
        let hash = FastHash.hash(key)  // the filter's and the cache's
        // Bits first: a reader that finds the key in the filter then looks under the lock.
        if resolved.value != nil { missingKeys.insert(hash: hash) }
        let old = resolved.value.map { merged.updateValue($0, forKey: key) } ?? merged.removeValue(forKey: key)
        guard old != resolved.value else { return }
        applied.changed = true
        valueCache.update(key, hash: hash, to: resolved.value)
        if slotNames.mayContain(hash), let index = slotsByName.index(forKey: key) {
            for position in slotsByName.values[index].indices {
                Self.write(
                    &slotsByName.values[index][position], resolved.value, to: readSlots, refusals: &applied.refusals)
            }
        }
        if subscribers.count > 0 {
            let change = KeyChange(
                domain: domain, key: key, oldValue: old, newValue: resolved.value, origin: origin, batch: batch)
            applied.resumptions += deliver(change)
        }
    }

    /// Starts a new ``batch``: the changes delivered until the next one came together.
    mutating func beginBatch() {
        batch &+= 1
    }

    /// After keys changed one by one: a new generation, and a filter large enough for the view.
    private mutating func keysChanged() {
        generation &+= 1
        missingKeys.grow(toHold: merged)
    }

    /// Fills a typed key's read slot with what a typed read of the key returns (once; ``apply(_:)`` keeps it
    /// current): the effective value when the key accepts it, else the last valid value (none at first).
    ///
    /// - Returns: that value, and the effective value's refusal when the key refuses it.
    mutating func fillSlot(
        _ slot: Int, forKey name: String, validate: @escaping @Sendable (PropertyList) -> SchemaViolation?
    ) -> (value: PropertyList?, refusals: [SchemaViolation]) {
        let value = merged[name]
        guard slot >= 0, slot < ScalarReadSlots.capacity else { return (value, []) }
        if let existing = slotsByName[name]?.first(where: { $0.slot == slot }) {
            return (existing.refused == nil ? value : existing.lastValid, [])
        }
        var guarded = SlotGuard(slot: slot, validate: validate)
        var refusals: [SchemaViolation] = []
        let shown = Self.write(&guarded, value, to: readSlots, refusals: &refusals)
        slotsByName[name, default: []].append(guarded)
        slotNames.insert(FastHash.hash(name))
        return (shown, refusals)
    }

    /// What a typed read of the key in `slot` returns now: the effective value, or the last valid value
    /// while the slot holds back a refused one.
    func typedValue(_ slot: Int, forKey name: String) -> PropertyList? {
        guard let guarded = slotsByName[name]?.first(where: { $0.slot == slot }), guarded.refused != nil else {
            return merged[name]
        }
        return guarded.lastValid
    }

    /// Writes a guarded slot: the value when its key accepts it (remembered as the last valid one), else the
    /// last valid value, with the refusal added to `refusals` once per refused value.
    ///
    /// - Returns: what the slot shows.
    @discardableResult
    private static func write(
        _ guarded: inout SlotGuard, _ value: PropertyList?, to readSlots: ScalarReadSlots,
        refusals: inout [SchemaViolation]
    ) -> PropertyList? {
        guard let value else {
            guarded.lastValid = nil
            guarded.refused = nil
            readSlots.write(guarded.slot, nil)
            return nil
        }
        if let violation = guarded.validate(value) {
            if guarded.refused != value {
                guarded.refused = value
                refusals.append(violation)
            }
            readSlots.write(guarded.slot, guarded.lastValid, held: true)
            return guarded.lastValid
        }
        guarded.lastValid = value
        guarded.refused = nil
        readSlots.write(guarded.slot, value)
        return value
    }

    /// A key's effective value, added to the value cache (from then on ``apply(_:)`` keeps it current).
    /// `hash` is the key's ``FastHash``.
    func cacheValue(forKey key: String, hash: UInt64) -> PropertyList? {
        let value = merged[key]
        valueCache.fill(key, hash: hash, value: value, viewCount: merged.count)
        return value
    }

    // MARK: Streams

    /// Follows a key's effective value; with `emitCurrentValue`, the buffer gets the value now, under the
    /// same lock as the registration, so no change slips between the two.
    mutating func subscribeValue(forKey key: String, buffer: ValueBuffer, emitCurrentValue: Bool) -> UInt64 {
        let id = subscribers.nextID()
        subscribers.values[key, default: [:]][id] = buffer
        subscribers.valueKeys[id] = key
        if emitCurrentValue { _ = buffer.push(merged[key]) }
        if streamsFinished { _ = buffer.finish(keepingPending: true) }
        return id
    }

    /// Follows every effective change.
    mutating func subscribeChanges(buffer: ChangeBuffer) -> UInt64 {
        let id = subscribers.nextID()
        subscribers.all[id] = buffer
        if streamsFinished { _ = buffer.finish(keepingPending: true) }
        return id
    }

    /// Follows one persistent domain's own changes (see ``deliverDomainChange(_:)``).
    mutating func subscribeChanges(inDomain domain: String, buffer: ChangeBuffer) -> UInt64 {
        let id = subscribers.nextID()
        subscribers.domains[domain, default: [:]][id] = buffer
        subscribers.domainOfSubscriber[id] = domain
        if streamsFinished { _ = buffer.finish(keepingPending: true) }
        return id
    }

    /// Signals the buffer whenever one of the keys changes.
    mutating func subscribeSignal(forKeys keys: [String], buffer: SignalBuffer) -> UInt64 {
        let id = subscribers.nextID()
        for key in Set(keys) { subscribers.signals[key, default: [:]][id] = buffer }
        subscribers.signalKeys[id] = keys
        if streamsFinished { _ = buffer.finish(keepingPending: true) }
        return id
    }

    mutating func unsubscribe(_ id: UInt64) -> Unsubscribed {
        if let keys = subscribers.signalKeys.removeValue(forKey: id) {
            for key in Set(keys) {
                subscribers.signals[key]?.removeValue(forKey: id)
                if subscribers.signals[key]?.isEmpty == true { subscribers.signals.removeValue(forKey: key) }
            }
            return .none
        }
        if let key = subscribers.valueKeys.removeValue(forKey: id) {
            subscribers.values[key]?.removeValue(forKey: id)
            if subscribers.values[key]?.isEmpty == true { subscribers.values.removeValue(forKey: key) }
            return .none
        }
        if let buffer = subscribers.all.removeValue(forKey: id) { return .all(buffer) }
        guard let domain = subscribers.domainOfSubscriber.removeValue(forKey: id) else { return .none }
        let buffer = subscribers.domains[domain]?.removeValue(forKey: id)
        if subscribers.domains[domain]?.isEmpty == true { subscribers.domains.removeValue(forKey: domain) }
        return .domain(domain, buffer)
    }

    /// Whether a stream follows this domain's own changes.
    func followsDomain(_ domain: String) -> Bool {
        !subscribers.domains.isEmpty && subscribers.domains[domain]?.isEmpty == false
    }

    /// Pushes a change of a domain's own value to the streams that follow the domain. Such changes are not
    /// changes of the view (the domain may be shadowed, or outside the search list).
    func deliverDomainChange(_ change: KeyChange) -> [Resumption] {
        subscribers.domains[change.domain]?.values.compactMap { $0.push(change) } ?? []
    }

    /// Ends every stream now and every stream subscribed later (a graceful shutdown).
    mutating func finishStreams() -> [Resumption] {
        streamsFinished = true
        return finishAll(keepingPending: true)
    }

    /// Ends every stream (the store is going away: what was not taken is dropped, unless `keepingPending`).
    func finishAll(keepingPending: Bool = false) -> [Resumption] {
        // Most stores end with no stream: then nothing is walked. Walking the empty tables made the runtime
        // build their iterators' types by name, a large part of a store's release in a fresh process;
        // the walk is a function of its own, whose types are looked up where it starts.
        if subscribers.count == 0 { return [] }
        return finishEvery(keepingPending: keepingPending)
    }

    @inline(never)
    private func finishEvery(keepingPending: Bool) -> [Resumption] {
        var resumptions: [Resumption] = []
        for buffers in subscribers.values.values {
            resumptions += buffers.values.compactMap { $0.finish(keepingPending: keepingPending) }
        }
        resumptions += subscribers.all.values.compactMap { $0.finish(keepingPending: keepingPending) }
        for buffers in subscribers.domains.values {
            resumptions += buffers.values.compactMap { $0.finish(keepingPending: keepingPending) }
        }
        for buffers in subscribers.signals.values {
            resumptions += buffers.values.compactMap { $0.finish(keepingPending: keepingPending) }
        }
        return resumptions
    }

    /// Pushes an effective change to the key's value streams, the store-wide change streams and the snapshot
    /// signals, in the order of the changes (the caller holds the lock).
    private func deliver(_ change: KeyChange) -> [Resumption] {
        var resumptions: [Resumption] = []
        for buffer in subscribers.values[change.key]?.values ?? [:].values {
            if let resume = buffer.push(change.newValue) { resumptions.append(resume) }
        }
        for buffer in subscribers.all.values {
            if let resume = buffer.push(change) { resumptions.append(resume) }
        }
        for buffer in subscribers.signals[change.key]?.values ?? [:].values {
            if let resume = buffer.signal() { resumptions.append(resume) }
        }
        return resumptions
    }
}

/// A set of names that answers "certainly not in it" without hashing a name again: two bits of 512 per name,
/// taken from independent parts of its ``FastHash``. Bits are only added (a slot is never given up), so a clear
/// bit is proof.
struct SlotNameBits {
    /// Inline, not an `[UInt64]`: an array of eight words was made by the standard library's unspecialised
    /// allocation, its type looked up at run time, on every store's open.
    private var words = InlineArray<8, UInt64>(repeating: 0)

    mutating func insert(_ hash: UInt64) {
        let (first, second) = Self.bits(hash)
        words[first >> 6] |= 1 << UInt64(first & 63)
        words[second >> 6] |= 1 << UInt64(second & 63)
    }

    func mayContain(_ hash: UInt64) -> Bool {
        let (first, second) = Self.bits(hash)
        return words[first >> 6] & (1 << UInt64(first & 63)) != 0
            && words[second >> 6] & (1 << UInt64(second & 63)) != 0
    }

    private static func bits(_ hash: UInt64) -> (Int, Int) {
        (Int(truncatingIfNeeded: hash & 511), Int(truncatingIfNeeded: (hash >> 23) & 511))
    }
}
