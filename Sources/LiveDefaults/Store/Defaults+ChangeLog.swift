package import Foundation

extension Defaults {
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
