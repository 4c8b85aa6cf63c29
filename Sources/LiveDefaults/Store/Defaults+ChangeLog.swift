package import Foundation

/// One key's change as a domain file's change log records it: what `defaults log` and `defaults doctor` print.
package struct LoggedChange: Sendable, Hashable {
    /// A value before or after the change.
    package enum Value: Sendable, Hashable {
        /// The key was not in the file.
        case absent
        case value(PropertyList)
        /// A value too large to be logged whole: its type and the size of its binary encoding.
        case summary(type: String, size: Int)
        /// An external change's old value that neither the log nor the process that noticed it held.
        case unknown
    }

    package var time: Date
    /// `local` (a program through the library, or the `defaults` command), `fleet` (the agent), `external`.
    package var origin: String
    /// The writing process, nil for an external change.
    package var executable: String?
    package var processID: Int32?
    package var userID: UInt32?
    /// The etcd revision the fleet agent applied.
    package var revision: Int64?
    package var key: String
    package var old: Value
    package var new: Value
}

extension Defaults {
    /// The changes the change log of the domain file at `path` records, newest first: at most `limit`, of
    /// `key` alone when given. An absent or unreadable log has none (Docs/OnDisk.md, "The change log").
    package static func loggedChanges(ofFile path: String, key: String? = nil, limit: Int = .max) -> [LoggedChange] {
        var changes: [LoggedChange] = []
        for entry in ChangeLog.read(at: ChangeLog.path(forDomainFile: path)).entries.reversed() {
            for change in entry.changes.reversed() where key == nil || change.key == key {
                guard changes.count < limit else { return changes }
                changes.append(
                    LoggedChange(
                        time: entry.time, origin: entry.origin.rawValue, executable: entry.writer?.executable,
                        processID: entry.writer?.pid, userID: entry.writer?.uid, revision: entry.writer?.revision,
                        key: change.key, old: LoggedChange.Value(change.old), new: LoggedChange.Value(change.new)))
            }
        }
        return changes
    }

    /// What is wrong with reading `data` as a change log, nil when nothing is: every entry read is written back
    /// as a line that reads as the same entry, and a log that knows its last version knows its keys. What the
    /// fuzz target `FuzzChangeLog` holds the reader to (through LiveDefaultsTesting).
    package static func changeLogProblem(_ data: Data) -> String? {
        let log = ChangeLog(parsing: data)
        if (log.lastVersion == nil) != (log.lastKeys == nil) {
            return "a last version without its keys, or keys without it"
        }
        for entry in log.entries {
            let again = ChangeLog(parsing: ChangeLog.line(entry)).entries
            guard again == [entry] else { return "an entry does not read back as itself: \(entry) → \(again)" }
        }
        return nil
    }
}

extension LoggedChange.Value {
    init(_ logged: ChangeLog.LoggedValue?) {
        switch logged {
        case nil: self = .absent
        case .value(let value)?: self = .value(value)
        case .summary(_, let type, let size)?: self = .summary(type: type, size: size)
        case .unknown?: self = .unknown
        }
    }
}
