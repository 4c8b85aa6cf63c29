import Foundation

/// Recording versions no LiveDefaults writer made (an editor, a script): what a reader held and read, and
/// the changes between them.
extension ChangeLog {
    /// A version a process read, as its record needs it: whole, or the new values of the keys an incremental read
    /// changed (nil: removed) — the keys of the ``Held/changed(version:oldValues:)`` version held before it; the
    /// whole version is then read again from the file only if the record needs it (a log to start, a log whose
    /// last version is not the one held). Keeping the whole dictionary for the record made the next incremental
    /// read, which edits it in place, copy the whole domain on its way to the observers.
    enum ReadVersion: Sendable {
        case whole([String: PropertyList])
        case changed(newValues: [String: PropertyList?])

        /// The whole version, when it was kept.
        var whole: [String: PropertyList]? {
            if case .whole(let contents) = self { contents } else { nil }
        }

        /// The version read after `self` as `newer`, recorded as one (a burst's versions, recorded as the newest).
        func followed(by newer: ReadVersion) -> ReadVersion {
            switch (self, newer) {
            case (_, .whole): newer
            case (.changed(let first), .changed(let second)):
                .changed(newValues: first.merging(second) { _, latest in latest })
            case (.whole(let contents), .changed(let second)):
                .whole(ChangeLog.apply(second, to: contents))
            }
        }
    }

    /// `contents` with `values` laid over it (nil: removed).
    static func apply(_ values: [String: PropertyList?], to contents: [String: PropertyList]) -> [String: PropertyList]
    {
        var result = contents
        for (key, value) in values {
            if let value { result[key] = value } else { result.removeValue(forKey: key) }
        }
        return result
    }

    /// The version a process held before the one it now reads (for the old values of the keys an external
    /// writer changed, when it is the version the log recorded last): whole, or as the old values of the keys an
    /// incremental read changed (``changed(version:oldValues:)``), the rest being the new version's.
    ///
    /// Why the second form: an incremental read edits the held dictionary in place, and a copy of it kept for the
    /// record made that edit copy the whole domain (10,000 keys) on the way to the observers; and the record then
    /// compared every key of the two versions, sorted, on a core the next delivery wanted. The few changed keys'
    /// old values are kept instead: they are the whole difference.
    enum Held: Sendable {
        case whole(version: UInt64, contents: [String: PropertyList])
        /// The digest, and each changed key's old value (nil: it was not there); every other key as in the new
        /// version.
        case changed(version: UInt64, oldValues: [String: PropertyList?])

        /// The version's digest.
        var version: UInt64 {
            switch self {
            case .whole(let version, _), .changed(let version, _): version
            }
        }

        /// The value `key` had, given the version read after it (`new`).
        func value(ofKey key: String, new: [String: PropertyList]) -> PropertyList? {
            switch self {
            case .whole(_, let contents): contents[key]
            case .changed(_, let oldValues): oldValues[key] ?? new[key]
            }
        }

        /// The whole version, given the version read after it (`new`).
        func contents(new: [String: PropertyList]) -> [String: PropertyList] {
            switch self {
            case .whole(_, let contents):
                return contents
            case .changed(_, let oldValues):
                return ChangeLog.apply(oldValues, to: new)
            }
        }

        /// The version `older` held before a version whose reading in turn held `newer`: the one held before both,
        /// so that a burst's versions, recorded once as the newest, are compared with the version the log has
        /// (without it the record read the whole log). `newer` when `older` held none (the older was the process's
        /// first look at the file, or read after a version that failed to parse): the older version itself is then
        /// the base, as it would have been had the two been recorded one by one, and a domain with no log yet
        /// starts its log from it. Also `newer` when it does not follow
        /// `olderVersion` (a version between them, such as this process's own write, was logged already). Nil when
        /// `older` held the changed form and `newer` none.
        static func combining(_ older: Held?, olderVersion: UInt64, _ newer: Held?) -> Held? {
            // Without the newer's held version the older's changed form has nothing to be laid over: it describes
            // the older read, not the newer one. Only a whole version stands alone.
            guard let newer else {
                if case .whole = older { return older }
                return nil
            }
            guard newer.version == olderVersion, let older else { return newer }
            switch (older, newer) {
            case (.whole, _):
                return older
            case (.changed(let version, let olderValues), .changed(_, let newerValues)):
                // A key the first version changed had, before both, its first old value.
                return .changed(version: version, oldValues: newerValues.merging(olderValues) { _, first in first })
            case (.changed(let version, _), .whole(_, let between)):
                return .whole(version: version, contents: older.contents(new: between))
            }
        }

        /// The changes from this version to the one read after it, `read`, in key order; nil when they need the
        /// whole version read and `whole` cannot give it.
        func changes(to read: ReadVersion, whole: () -> [String: PropertyList]?) -> [Change]? {
            if case .changed(_, let oldValues) = self, case .changed(let newValues) = read {
                return ChangeLog.changes(
                    ofKeys: Set(oldValues.keys).union(newValues.keys), old: { oldValues[$0] ?? nil },
                    new: { newValues[$0] ?? nil })
            }
            guard let new = read.whole ?? whole() else { return nil }
            return changes(to: new)
        }

        /// The changes from this version to `new`, in key order.
        func changes(to new: [String: PropertyList]) -> [Change] {
            switch self {
            case .whole(_, let contents):
                return ChangeLog.changes(ofKeys: Set(contents.keys).union(new.keys), from: contents, to: new)
            case .changed(_, let oldValues):
                return ChangeLog.changes(ofKeys: oldValues.keys, old: { oldValues[$0] ?? nil }, new: { new[$0] })
            }
        }
    }

    /// With the domain's file lock held and `version` (whose contents are `contents`) the file on disk: records
    /// it as an `external` entry — the keys whose values differ from the last version the log recorded — unless
    /// the log recorded it already (a LiveDefaults writer made it, or another process noticed it first).
    ///
    /// The old values come from `held` when it is the log's last version, else from the log's last whole value
    /// of the key with the digest the log holds, else are unknown. A log that does not exist is started (a
    /// checkpoint of `held`, then the entry) only by a process that held the version before; without one there
    /// is nothing to compare with, and the next write starts the log. A log that knows no last version gets a
    /// checkpoint of `version`. Returns whether a line was appended; failures are ignored (a record, not data).
    ///
    /// When the log's last line records the version held (the usual case: a running program follows the
    /// domain), the changes are the keys whose values differ between the two, and the log is not read.
    @discardableResult
    static func recordExternal(
        version: UInt64, contents: [String: PropertyList], held: Held?, at path: String, time: Date,
        owner: (UserID, GroupID)? = nil, on fileSystem: any DefaultsFileSystem
    ) -> Bool {
        recordExternal(
            version: version, read: .whole(contents), whole: { contents }, held: held, at: path, time: time,
            owner: owner, on: fileSystem)
    }

    /// ``recordExternal(version:contents:held:at:time:owner:on:)`` of a version `read` as a record needs it;
    /// `whole` gives the whole version when it was not kept (read again from the file: nil when it is no longer
    /// that version, and nothing is recorded).
    @discardableResult
    static func recordExternal(
        version: UInt64, read: ReadVersion, whole: () -> [String: PropertyList]?, held: Held?, at path: String,
        time: Date, owner: (UserID, GroupID)? = nil, on fileSystem: any DefaultsFileSystem
    ) -> Bool {
        let tail = tail(at: path, on: fileSystem)
        if tail == .recorded(version) { return false }
        if let held, tail == .recorded(held.version) {
            guard let changes = held.changes(to: read, whole: whole) else { return false }
            if !changes.isEmpty {
                // The last line is a recorded version, so no intent follows it: nobody announced this one.
                let entry = Entry(time: time, origin: .external, writer: nil, version: version, changes: changes)
                return (try? fileSystem.append(line(entry), toPath: path, owner: owner)) != nil
            }
        }
        guard let contents = read.whole ?? whole() else { return false }
        var log: ChangeLog
        if tail == .absent {
            guard let held, held.version != version else { return false }
            log = ChangeLog()
            log.lastVersion = held.version
            log.lastKeys = keyDigests(of: held.contents(new: contents))
        } else {
            log = ChangeLog.read(at: path, on: fileSystem)
            if log.lastVersion == version { return false }
        }
        guard let lastKeys = log.lastKeys, let lastVersion = log.lastVersion else {
            let checkpoint = checkpointLine(version: version, keys: keyDigests(of: contents))
            return (try? fileSystem.append(checkpoint, toPath: path, owner: owner)) != nil
        }
        let digests = keyDigests(of: contents)
        var changes: [Change] = []
        for key in Set(lastKeys.keys).union(digests.keys).sorted() where lastKeys[key] != digests[key] {
            let old: LoggedValue? =
                if lastKeys[key] == nil {
                    nil
                } else if let held, held.version == lastVersion, let value = held.value(ofKey: key, new: contents) {
                    LoggedValue(value)
                } else {
                    log.lastLoggedValue(ofKey: key, digest: lastKeys[key]) ?? .unknown
                }
            changes.append(Change(key: key, old: old, new: contents[key].map(LoggedValue.init)))
        }
        var data = Data()
        if tail == .absent { data.append(checkpointLine(version: lastVersion, keys: lastKeys)) }
        if changes.isEmpty {
            // The same values in other bytes: the version is recorded as a checkpoint, so it is not looked at again.
            data.append(checkpointLine(version: version, keys: digests))
        } else {
            // A writer that announced this version and stopped before its entry is named; else nobody is.
            let intent = log.intents[version]
            data.append(
                line(
                    Entry(
                        time: time, origin: intent?.origin ?? .external, writer: intent?.writer, version: version,
                        changes: changes, reason: intent?.reason)))
        }
        return (try? fileSystem.append(data, toPath: path, owner: owner)) != nil
    }

    /// The changes of `keys` between two whole versions, in key order: a key whose value differs (or is there in
    /// one only) with both values. What a writer logs of its own version and what a reader logs of another's when
    /// it held the version before.
    static func changes(
        ofKeys keys: some Sequence<String>, from old: [String: PropertyList], to new: [String: PropertyList]
    ) -> [Change] {
        changes(ofKeys: keys, old: { old[$0] }, new: { new[$0] })
    }

    /// ``changes(ofKeys:from:to:)`` with each version's value of a key given by a lookup (a version kept as the
    /// changed keys' values: ``Held``, ``ReadVersion``).
    static func changes(
        ofKeys keys: some Sequence<String>, old: (String) -> PropertyList?, new: (String) -> PropertyList?
    ) -> [Change] {
        changes(ofChangedKeys: changedKeys(ofKeys: keys, old: old, new: new), old: old, new: new)
    }

    /// Those of `keys` whose value differs between two versions (or is in one only), in key order: what
    /// ``changes(ofKeys:old:new:)`` logs, without encoding a value.
    static func changedKeys(
        ofKeys keys: some Sequence<String>, old: (String) -> PropertyList?, new: (String) -> PropertyList?
    ) -> [String] {
        keys.sorted().filter { old($0) != new($0) }
    }

    /// The changes of keys known to have changed (``changedKeys(ofKeys:old:new:)``), each value as logged.
    static func changes(
        ofChangedKeys keys: [String], old: (String) -> PropertyList?, new: (String) -> PropertyList?
    ) -> [Change] {
        keys.map { key in Change(key: key, old: old(key).map(LoggedValue.init), new: new(key).map(LoggedValue.init)) }
    }

    /// The last value of `key` an entry logged, if it is the one whose digest is `digest`.
    private func lastLoggedValue(ofKey key: String, digest: UInt64?) -> LoggedValue? {
        for entry in entries.reversed() {
            guard let change = entry.changes.last(where: { $0.key == key }) else { continue }
            guard let new = change.new, new.digest == digest else { return nil }
            return new
        }
        return nil
    }
}
