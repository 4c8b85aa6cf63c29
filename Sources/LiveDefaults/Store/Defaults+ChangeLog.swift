public import Foundation
import Synchronization

/// One key's change as a domain's change log records it (Docs/OnDisk.md, "The change log"): when, from what,
/// to what, and who — what `defaults log` prints and a server can show of its own settings.
public struct LoggedChange: Sendable, Hashable {
    /// Who made the version the change is part of: the same type as a store's changes' (``ChangeOrigin``).
    @available(*, deprecated, renamed: "ChangeOrigin")
    public typealias Origin = ChangeOrigin

    /// A value before or after the change.
    public enum Value: Sendable, Hashable {
        /// The key was not in the file.
        case absent
        /// The value, logged whole.
        case value(PropertyList)
        /// A value too large to be logged whole: its type name and the size of its binary encoding.
        case summary(type: String, size: Int)
        /// An external change's old value that neither the log nor the process that noticed it held.
        case unknown
    }

    /// When the version was written (or, for an external one, noticed).
    public let time: Date
    /// Who made it: ``ChangeOrigin/local`` for a program through the library or the `defaults` command,
    /// ``ChangeOrigin/fleet`` for the fleet agent, ``ChangeOrigin/external`` for a writer that is not LiveDefaults.
    public let origin: ChangeOrigin
    /// The writing process's executable name; nil for an external change.
    public let executable: String?
    /// The writing process's ID; nil for an external change.
    public let processID: Int32?
    /// The writing process's effective user ID; nil for an external change.
    public let userID: UInt32?
    /// The etcd revision the fleet agent applied; nil for any other writer.
    public let revision: Int64?
    /// The key.
    public let key: String
    /// Its value before the change (named as ``KeyChange/oldValue`` is).
    public let oldValue: Value
    /// Its value after the change (named as ``KeyChange/newValue`` is).
    public let newValue: Value
    /// The version of the file the change is part of (the changes of one write share it), as a reader that runs
    /// it names it (``ReadingProcess/version``).
    public let version: DomainVersion
    /// The reading processes whose validators refused that version (``Defaults/addValidator(_:)``), oldest
    /// first: each kept serving the version before it.
    public let refusals: [VersionRefusal]
    /// Why the writer made the version, when it said: a transaction's `reason`
    /// (``Defaults/transaction(inDomain:layer:reason:_:)``), `defaults write --reason`, or `defaults write
    /// --wait` rolling back a version a reader refused ("rolled back: <reader> refused <version>: <its reason>").
    public let reason: String?

    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    @available(*, deprecated, renamed: "oldValue")
    public var old: Value { oldValue }
    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    @available(*, deprecated, renamed: "newValue")
    public var new: Value { newValue }
}

extension Defaults {
    /// The changes the change log of a domain's file records, newest first, each with the processes that refused
    /// its version: at most `limit`, and only of `key` when one is given. A version no LiveDefaults writer made is there once a LiveDefaults process has read
    /// it (this store, when it follows the domain; else the next process that opens it), shortly after that
    /// process's observers were told of it; this call first waits for what this process read to be recorded.
    /// An absent or unreadable log has no changes; unreadable lines are skipped.
    public func loggedChanges(
        inDomain domain: String? = nil, layer: PreferenceLayer = .currentUser, key: String? = nil, limit: Int = 100
    ) -> [LoggedChange] {
        // A version found by the watcher's thread is handed to the recorder before its delivery counts as done.
        for file in allFiles() { file.settle() }
        configuration.context.storage.recorder.waitUntilIdle()
        let path = ChangeLog.path(
            forDomainFile: configuration.locations.path(
                forDomain: domainOrOwn(domain), layer: layer))
        var changes: [LoggedChange] = []
        let log = ChangeLog.read(at: path, on: configuration.fileSystem)
        for entry in log.entries.reversed() {
            let refusals = (log.refusals[entry.version] ?? []).map { refusal in
                VersionRefusal(
                    processID: refusal.reader.pid, executable: refusal.reader.executable, userID: refusal.reader.uid,
                    version: DomainVersion(digest: entry.version), reason: refusal.reason, time: refusal.time)
            }
            for change in entry.changes.reversed() where key == nil || change.key == key {
                guard changes.count < limit else { return changes }
                changes.append(
                    LoggedChange(
                        time: entry.time, origin: entry.origin,
                        executable: entry.writer?.executable, processID: entry.writer?.pid,
                        userID: entry.writer?.uid, revision: entry.writer?.revision, key: change.key,
                        oldValue: LoggedChange.Value(change.old), newValue: LoggedChange.Value(change.new),
                        version: DomainVersion(digest: entry.version), refusals: refusals, reason: entry.reason))
            }
        }
        return changes
    }

    /// Why each of `values`' keys holds its value, as the domain's change log says: the reason of the key's latest
    /// logged change when that change set this value; when `version` (the version the values are of; nil for a key
    /// it does not have) is only announced — its writer renamed it into place and has not appended its entry yet —
    /// its intent's reason for the keys it set. A key whose value has no reason, or that no logged version set (an
    /// external writer's), is left out. What the fleet agent sends with the values it pushes.
    package func reasons(
        forValues values: [String: PropertyList?], ofVersion version: DomainVersion, inDomain domain: String,
        layer: PreferenceLayer = .currentUser
    ) -> [String: String] {
        let path = ChangeLog.path(forDomainFile: configuration.locations.path(forDomain: domain, layer: layer))
        return ChangeLog.reasons(of: values, held: version.digest, at: path, on: configuration.fileSystem)
    }

    /// Runs `body` with the versions it writes on this task or thread recorded in the change log as the
    /// fleet's, at etcd revision `revision`: how an agent that applies another system's changes (`defaults
    /// sync`) is told apart from a program's own writes. Only writes made before `body` returns count: a
    /// transaction or `synchronize()` inside it, not a `set` the store's writer writes later.
    package static func attributingWrites<Result>(toFleetRevision revision: Int64, _ body: () throws -> Result) rethrows
        -> Result
    {
        try ChangeLogAttribution.withFleetRevision(revision, body)
    }

    /// Runs `body` with the versions it writes on this task or thread logged with `reason` (`defaults log` shows it
    /// beside each of their changes), and with the edits it makes (`set`, `setPersistentDomain`) logged with it
    /// whenever they are written: a version's reason is the latest one among the edits it writes.
    package static func attributingWrites<Result>(reason: String, _ body: () throws -> Result) rethrows -> Result {
        try ChangeLogAttribution.withReason(reason, body)
    }

    /// The longest reason the change log keeps, in UTF-8 bytes (a longer one is cut): the `defaults` command
    /// refuses a longer one rather than cut it.
    package static var longestReason: Int { ChangeLogAttribution.longestReason }

    /// Whether this process writes change logs (on unless a benchmark turns it off to measure its cost).
    package static var changeLogIsEnabled: Bool {
        get { ProcessContext.system.changeLogIsEnabled }
        set { ProcessContext.system.changeLogIsEnabled = newValue }
    }

    /// What is wrong with reading `data` as a change log, nil when nothing is: every entry and intent read (and the last
    /// version's keys) is written back as a line that reads as the same, a log that knows its last version knows its keys,
    /// and the fleet agent's reason look walks it. What the fuzz target `FuzzChangeLog` holds the reader to (through LiveDefaultsTesting).
    package static func changeLogProblem(_ data: Data) -> String? {
        let log = ChangeLog(parsing: data)
        let ranges = ChangeLog.lineRanges(of: data)
        if ChangeLog.lastLineRange(of: data) != ranges.last {
            return "the backward scan finds the last line at \(String(describing: ChangeLog.lastLineRange(of: data))), "
                + "the forward scan at \(String(describing: ranges.last))"
        }
        // The quick look at the last line agrees with the whole read when that line is an entry or a checkpoint.
        if case .recorded(let version) = ChangeLog.tail(of: data), let range = ranges.last {
            let line = ChangeLog(parsing: data[range])
            if let recorded = line.lastVersion ?? line.entries.last?.version, recorded != version {
                return "the quick look at the last line says version \(version), the line records \(recorded)"
            }
        }
        if (log.lastVersion == nil) != (log.lastKeys == nil) {
            return "a last version without its keys, or keys without it"
        }
        for entry in log.entries {
            let again = ChangeLog(parsing: ChangeLog.line(entry)).entries
            guard again == [entry] else { return "an entry does not read back as itself: \(entry) → \(again)" }
        }
        for (version, intent) in log.intents {
            let line = ChangeLog.intentLine(
                ChangeLog.Entry(
                    time: Date(timeIntervalSince1970: 0), origin: intent.origin, writer: intent.writer,
                    version: version, changes: [], reason: intent.reason))
            let again = ChangeLog(parsing: line).intents
            guard again == [version: intent] else {
                return "an intent does not read back as itself: \(intent) → \(again)"
            }
        }
        if let version = log.lastVersion, let keys = log.lastKeys {
            let again = ChangeLog(parsing: ChangeLog.checkpointLine(version: version, keys: keys))
            guard again.lastVersion == version, again.lastKeys == keys else {
                return "a checkpoint does not read back as itself: \(version) \(keys) → \(again)"
            }
        }
        if let problem = LoggedVersions(log).problem { return problem }
        // The fleet agent's reason look walks any log's lines from its end without trapping, for keys it names and
        // keys it does not, and finds a key at most once.
        var keys: [String: PropertyList?] = ["Absent": nil]
        for entry in log.entries.suffix(4) { for change in entry.changes { keys[change.key] = .integer(1) } }
        var walk = ChangeLog.ReasonWalk(values: keys, held: log.intents.keys.first ?? log.lastVersion ?? 0)
        _ = walk.walk(data)
        if !Set(walk.reasons.keys).isSubset(of: keys.keys) { return "a reason found for a key not asked for" }
        return nil
    }
}

extension LoggedChange.Value {
    init(_ logged: ChangeLog.LoggedValue?) {
        switch logged {
        case nil: self = .absent
        case .value(let value, _)?: self = .value(value)
        case .summary(_, let type, let size)?: self = .summary(type: type, size: size)
        case .unknown?: self = .unknown
        }
    }
}
