import Foundation

/// Why keys hold their values, as the log says: what the fleet agent sends with the values it pushes
/// (`defaults history` shows it), read from the entries — and from the intent of a version renamed into place
/// whose entry is not appended yet, the moment a watcher sees it.
extension ChangeLog {
    /// What the log says of each key of `values` (each key's value in the version `held`; nil: absent).
    struct Reasons: Equatable {
        /// The reason of each key whose value the log attributes to a version that has one.
        var reasons: [String: String] = [:]
        /// The keys the log read says nothing of: no change of them in it, and no checkpoint to tell whether the
        /// version held made them. A longer read of the log may know.
        var unknown: Set<String> = []
    }

    /// The reason of each key's value in `values`, the contents of version `held`: the reason of the latest
    /// version, up to `held`, that set the key to that value. A value no logged version set (an external
    /// writer's, or the log lags) has none: no reason is ever given to a value its version did not set.
    ///
    /// `held` may be recorded by an entry (its changes and those before it are walked), or only announced by an
    /// intent (its writer renamed it into place and has not appended its entry): a key whose value differs from
    /// the value the log last recorded was then set by `held`, and has the intent's reason.
    func reasons(of values: [String: PropertyList?], held: UInt64) -> Reasons {
        var result = Reasons()
        var open = Set(values.keys)
        let heldIndex = entries.lastIndex { $0.version == held }
        let announced = heldIndex == nil ? intents[held] : nil
        let digests = values.mapValues { $0.map { FastHash.hash(ChangeLog.encode($0)) } }
        let walked = heldIndex.map { entries[...$0] } ?? entries[...]
        for entry in walked.reversed() where !open.isEmpty {
            for change in entry.changes where open.contains(change.key) {
                open.remove(change.key)
                let reason: String?
                if change.new?.digest == digests[change.key] ?? nil {
                    reason = entry.reason
                } else {
                    // The value is newer than the key's last logged change: the announced version's, or nobody's
                    // the log knows.
                    reason = announced?.reason
                }
                if let reason { result.reasons[change.key] = reason }
            }
        }
        for key in open {
            // No logged change of the key in what was read: the checkpoint says whether the version held made it.
            guard let announced, let lastKeys else {
                result.unknown.insert(key)
                continue
            }
            if lastKeys[key] != digests[key] ?? nil, let reason = announced.reason { result.reasons[key] = reason }
        }
        return result
    }

    /// ``reasons(of:held:)`` of the log at `path`: its last 64 KiB first (the usual case: the keys' changes are
    /// the newest lines), the whole log when they leave a key unknown.
    static func reasons(
        of values: [String: PropertyList?], held: UInt64, at path: String, on fileSystem: any DefaultsFileSystem
    ) -> [String: String] {
        let tail = ChangeLog.read(at: path, maximumBytes: tailBytes, on: fileSystem).reasons(of: values, held: held)
        guard !tail.unknown.isEmpty else { return tail.reasons }
        return ChangeLog.read(at: path, on: fileSystem).reasons(of: values, held: held).reasons
    }

    /// How much of the log's end ``reasons(of:held:at:on:)`` reads first.
    static let tailBytes = 64 << 10
}
