import Foundation

/// Why keys hold their values, as the log says: what the fleet agent sends with the values it pushes
/// (`defaults history` shows it), read from the entries — and from the intent of a version renamed into place
/// whose entry is not appended yet, the moment a watcher sees it.
///
/// The log is read from its end, a line at a time, until every key is found: the agent looks before each push,
/// right after the change, whose entry (or intent) is the log's last line, so a push pays for a line or two.
extension ChangeLog {
    /// A walk through log lines, newest first, finding the reason of each key's value in the version `held`.
    struct ReasonWalk {
        /// Each key's value digest in `held` (a key absent there has none).
        let digests: [String: UInt64]
        let held: UInt64
        /// The keys not found yet.
        private(set) var open: Set<String>
        private(set) var reasons: [String: String] = [:]
        /// Intents after the newest entry or checkpoint: versions renamed into place whose entry is not written.
        private var pending: [UInt64: Intent] = [:]
        /// Set once the newest entry or checkpoint is passed.
        private var started = false
        /// The intent of `held`, when it is only announced: a key whose value differs from what the log last
        /// recorded of it was set by `held`, with this intent's reason.
        private var announced: Intent?

        init(values: [String: PropertyList?], held: UInt64) {
            digests = ChangeLog.keyDigests(of: values.compactMapValues { $0 })
            self.held = held
            open = Set(values.keys)
        }

        /// Takes the next line, older than those taken so far (its bytes as ``ChangeLog/init(parsing:)`` reads
        /// them: a line that is no entry, intent or checkpoint changes nothing).
        mutating func take(_ line: ChangeLog) {
            if !started {
                for (version, intent) in line.intents { pending[version] = intent }
                let newest = line.entries.last?.version ?? line.lastVersion
                guard let newest else { return }
                started = true
                if newest != held { announced = pending[held] }
            }
            for entry in line.entries {
                for change in entry.changes where open.contains(change.key) {
                    open.remove(change.key)
                    // A value newer than the key's latest logged change is the announced version's, or nobody's
                    // the log knows (an external writer's, a version the log lags behind): no reason then.
                    let matches = change.new?.digest == digests[change.key]
                    if let reason = matches ? entry.reason : announced?.reason { reasons[change.key] = reason }
                }
            }
            if let announced, let keys = line.lastKeys {
                // A checkpoint: what the log recorded of each key not changed since. A key that differs was set by
                // the announced version.
                for key in open where keys[key] != digests[key] {
                    open.remove(key)
                    if let reason = announced.reason { reasons[key] = reason }
                }
            }
        }

        /// Walks `data`'s lines from the last; whether every key was found.
        mutating func walk(_ data: Data) -> Bool {
            for range in ChangeLog.lineRanges(of: data).reversed() where !open.isEmpty {
                take(ChangeLog(parsing: data[range]))
            }
            return open.isEmpty
        }
    }

    /// The reason of each key's value in `values` (nil: absent), the contents of version `held`, as the log at
    /// `path` says: the reason of the key's latest logged change when it set that value; for a version only
    /// announced, its intent's reason for the keys it set. No reason is ever given to a value its version did not
    /// set. The log's last 8 KiB first, the whole log when a key is not found there.
    static func reasons(
        of values: [String: PropertyList?], held: UInt64, at path: String, on fileSystem: any DefaultsFileSystem
    ) -> [String: String] {
        var walk = ReasonWalk(values: values, held: held)
        guard let tail = fileSystem.readTail(atPath: path, maximumBytes: tailBytes) else { return [:] }
        // Not all there (a key changed long ago; or one no logged version set, found nowhere): the whole log, which
        // costs no more than the tail when it is that small.
        if walk.walk(tail) { return walk.reasons }
        walk = ReasonWalk(values: values, held: held)
        _ = walk.walk(fileSystem.readTail(atPath: path, maximumBytes: maximumReadSize) ?? Data())
        return walk.reasons
    }

    /// How much of the log's end ``reasons(of:held:at:on:)`` reads first.
    static let tailBytes = 8 << 10
}
