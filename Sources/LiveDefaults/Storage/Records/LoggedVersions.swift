import Foundation

/// The versions of a domain file that its change log can give back whole, newest first: the last known good
/// across restarts (Docs/Reliability.md, "What a program runs when its file is refused or unreadable").
///
/// The log holds no copy of the file. It holds, for each version someone wrote, the new value of every key that
/// changed, and checkpoints of each key's value digest. Played forward from a checkpoint, the entries give each
/// later version as key → value digest; a version comes back whole when every one of its digests names a value
/// the log holds whole (an entry's old or new value) or one the caller knows (the file as it is, when it can be
/// read). A version with a large value the log kept only as a digest, and changed since, cannot come back.
struct LoggedVersions: Sendable {
    /// A version the log gives back: its number in the log (the file's digest, 0 for no file) and what it held.
    struct Version: Sendable, Equatable {
        var number: UInt64
        var contents: [String: PropertyList]
    }

    /// Each logged version as key → value digest, oldest first (a version logged twice appears twice).
    private let digests: [(number: UInt64, keys: [String: UInt64])]
    /// Every value known whole, by its digest.
    private let values: [UInt64: PropertyList]

    /// The versions `log` records, with `known` (values the caller holds, such as the file's current contents)
    /// beside the values the log holds whole.
    init(_ log: ChangeLog, known: [String: PropertyList] = [:]) {
        var values: [UInt64: PropertyList] = [:]
        for value in known.values {
            values[FastHash.hash(ChangeLog.encode(value))] = value
        }
        for entry in log.entries {
            for change in entry.changes {
                for case .value(let value, let encoding)? in [change.old, change.new] {
                    values[FastHash.hash(encoding)] = value
                }
            }
        }
        var digests: [(number: UInt64, keys: [String: UInt64])] = []
        var keys: [String: UInt64]?
        var checkpoints = log.checkpoints[...]
        for (index, entry) in log.entries.enumerated() {
            while let checkpoint = checkpoints.first, checkpoint.entriesBefore <= index {
                keys = checkpoint.keys
                digests.append((checkpoint.version, checkpoint.keys))
                checkpoints = checkpoints.dropFirst()
            }
            // Entries before the log's first checkpoint say what changed, not what the rest held.
            guard var current = keys else { continue }
            for change in entry.changes {
                current[change.key] = change.new?.digest
            }
            keys = current
            digests.append((entry.version, current))
        }
        for checkpoint in checkpoints { digests.append((checkpoint.version, checkpoint.keys)) }
        self.digests = digests
        self.values = values
    }

    /// How many versions the log records (given back whole or not).
    var count: Int { digests.count }

    /// The newest version whole that is not in `excluded` and that `accepts` (asked newest first, once for each
    /// version) takes; nil when none is.
    func newest(excluding excluded: Set<UInt64> = [], where accepts: ([String: PropertyList]) -> Bool) -> Version? {
        var asked = excluded
        for (number, keys) in digests.reversed() where asked.insert(number).inserted {
            guard let contents = whole(keys) else { continue }
            if accepts(contents) { return Version(number: number, contents: contents) }
        }
        return nil
    }

    /// What is wrong with the versions given back, nil when nothing is: each holds, for every key, a value whose
    /// digest is the one the log gives for it (what the change log's fuzz target holds them to).
    var problem: String? {
        for (number, keys) in digests {
            guard let contents = whole(keys) else { continue }
            if ChangeLog.keyDigests(of: contents) != keys { return "version \(number) comes back with other values" }
        }
        return nil
    }

    /// The values `keys` name, when every one is known.
    private func whole(_ keys: [String: UInt64]) -> [String: PropertyList]? {
        var contents: [String: PropertyList] = [:]
        contents.reserveCapacity(keys.count)
        for (key, digest) in keys {
            guard let value = values[digest] else { return nil }
            contents[key] = value
        }
        return contents
    }
}
