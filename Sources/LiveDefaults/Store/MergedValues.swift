/// The effective value of every key, as the merge of a store's layers makes it (``Defaults/merge(_:)``): the
/// largest layer's dictionary as it is, its storage shared with the file that holds it, and the few keys the other
/// layers add to it or override in it beside it.
///
/// Why two parts: a domain of 10,000 keys and an argument, a registration or a `.GlobalPreferences` key beside it
/// made one dictionary a copy of the large one with the few keys put in, on every open and every rebuild — a copy
/// whose first touch of fresh memory was most of its cost, and which no read needed. A lookup looks at the few
/// keys first. The first change of one key (``updateValue(_:forKey:)``, ``removeValue(forKey:)``) makes the two
/// one dictionary, as the single dictionary did on the first change of a shared one.
struct MergedValues: ExpressibleByDictionaryLiteral {
    /// The largest layer, as it is.
    private(set) var base: [String: PropertyList]
    /// What the other layers add to ``base`` or override in it; empty once a change made the two one.
    private(set) var overlay: [String: PropertyList]
    /// The number of keys.
    private(set) var count: Int

    init(_ values: [String: PropertyList] = [:]) {
        base = values
        overlay = [:]
        count = values.count
    }

    /// `base` with `overlay` on top; `overlay` holds only values that differ from `base`'s.
    init(base: [String: PropertyList], overlay: [String: PropertyList]) {
        self.base = base
        self.overlay = overlay
        count = base.count
        for key in overlay.keys where base[key] == nil { count += 1 }
    }

    init(dictionaryLiteral elements: (String, PropertyList)...) {
        self.init(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }

    subscript(key: String) -> PropertyList? {
        if overlay.isEmpty { return base[key] }
        return overlay[key] ?? base[key]
    }

    var isEmpty: Bool { count == 0 }

    /// Every key and its value, as one dictionary (a copy of ``base`` when something is on top of it).
    var dictionary: [String: PropertyList] {
        if overlay.isEmpty { return base }
        return base.merging(overlay) { _, top in top }
    }

    /// Calls `body` with every key once.
    func forEachKey(_ body: (String) -> Void) {
        for key in base.keys { body(key) }
        for key in overlay.keys where base[key] == nil { body(key) }
    }

    /// Sets a key's value; returns the value it had.
    @discardableResult
    mutating func updateValue(_ value: PropertyList, forKey key: String) -> PropertyList? {
        makeOne()
        let old = base.updateValue(value, forKey: key)
        count = base.count
        return old
    }

    /// Removes a key; returns the value it had.
    @discardableResult
    mutating func removeValue(forKey key: String) -> PropertyList? {
        makeOne()
        let old = base.removeValue(forKey: key)
        count = base.count
        return old
    }

    /// Puts ``overlay`` into ``base``, before a change of one key.
    private mutating func makeOne() {
        guard !overlay.isEmpty else { return }
        base.merge(overlay) { _, top in top }
        overlay = [:]
    }
}

extension KeyDelta {
    /// The keys whose values differ between two views, looked up part by part: neither view is made one
    /// dictionary (a rebuild that streams follow would otherwise copy a large domain twice to compare it).
    static func between(_ old: MergedValues, _ new: MergedValues) -> [KeyDelta] {
        var deltas: [KeyDelta] = []
        new.forEachKey { key in
            let value = new[key]
            if old[key] != value { deltas.append(KeyDelta(key: key, old: old[key], new: value)) }
        }
        old.forEachKey { key in
            if new[key] == nil { deltas.append(KeyDelta(key: key, old: old[key], new: nil)) }
        }
        return deltas
    }
}
