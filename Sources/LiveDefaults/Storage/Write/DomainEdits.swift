/// Edits to one domain file that this process has made and not yet written: key sets and removals, and
/// possibly a replacement of the whole domain that came first. A disk write applies exactly these on top of
/// what is on disk at that moment, so keys written by other processes in between survive.
struct DomainEdits: Sendable, Equatable {
    /// Contents that replace the whole file before `keys` apply (`setPersistentDomain`, `removePersistentDomain`).
    var replacement: [String: PropertyList]?
    /// Key → new value, or nil for a removal.
    var keys: [String: PropertyList?] = [:]
    /// Why the latest of the edits made inside a reason's attribution was made
    /// (``ChangeLogAttribution/currentReason``): the change log's reason for the version that writes them.
    var reason: String?

    var isEmpty: Bool { replacement == nil && keys.isEmpty }

    /// How many keys the edits name (a replacement's keys and the key edits after it): what a write of them
    /// counts as changes in its metrics.
    var keyCount: Int { (replacement?.count ?? 0) + keys.count }

    func applied(to base: [String: PropertyList]) -> [String: PropertyList] {
        var result = replacement ?? base
        for (key, value) in keys {
            if let value { result[key] = value } else { result.removeValue(forKey: key) }
        }
        return result
    }

    /// One key's value once these edits apply to a base in which it is `base`.
    func value(forKey key: String, over base: PropertyList?) -> PropertyList? {
        if let edit = keys[key] { return edit }
        if let replacement { return replacement[key] }
        return base
    }

    /// These edits followed by `later` ones.
    func followed(by later: DomainEdits) -> DomainEdits {
        if let replacement = later.replacement {
            return DomainEdits(replacement: replacement, keys: later.keys, reason: later.reason ?? reason)
        }
        var merged = self
        for (key, value) in later.keys { merged.keys[key] = value }
        merged.reason = later.reason ?? reason
        return merged
    }
}

/// One key's value before and after a change in a domain file or a store.
struct KeyDelta: Sendable, Equatable {
    var key: String
    var old: PropertyList?
    var new: PropertyList?

    /// The keys whose values differ between two dictionaries.
    static func between(_ old: [String: PropertyList], _ new: [String: PropertyList]) -> [KeyDelta] {
        var deltas: [KeyDelta] = []
        for (key, value) in new where old[key] != value {
            deltas.append(KeyDelta(key: key, old: old[key], new: value))
        }
        for (key, value) in old where new[key] == nil {
            deltas.append(KeyDelta(key: key, old: value, new: nil))
        }
        return deltas
    }
}
