import Foundation

/// The change log's part of one write of a domain file (Docs/OnDisk.md, "The change log"), a step of the
/// write protocol (``DomainWrite``), called with the file lock held, in this order:
///
/// 1. ``recordWrittenOver(version:contents:held:)``: the version on disk, when no LiveDefaults writer logged
///    it, is recorded as the change it was (external, or the writer whose intent names it), so that this
///    write's entry follows it;
/// 2. ``announce(_:over:baseVersion:giving:version:)``: this write's intent (who, and the new version's
///    digest), before the rename;
/// 3. ``confirm(_:giving:over:baseVersion:)``: its entry (the keys, old and new), once the version landed.
///
/// So the log lists only versions that landed, a process that reads the version meanwhile leaves it to this
/// writer (the lock is held), and a writer stopped between 2 and 3 is named by its intent when the version is
/// recorded later. A log that cannot be written changes nothing about the write: it is a record, not data.
struct WriteLogging {
    let logPath: String
    let fileSystem: any DefaultsFileSystem
    let owner: (UserID, GroupID)?
    let time: Date
    /// Who writes (``ProcessIdentity``).
    let writer: ChangeLog.Writer
    /// The log, opened for the intent and kept open for the entry: one `open` and one `close` of it a write.
    private var log: AppendingFile?

    init(
        domainFile path: String, on fileSystem: any DefaultsFileSystem, owner: (UserID, GroupID)?, time: Date,
        writer: ChangeLog.Writer
    ) {
        logPath = ChangeLog.path(forDomainFile: path)
        self.fileSystem = fileSystem
        self.owner = owner
        self.time = time
        self.writer = writer
    }

    /// Step 1: records the version the write replaces (`version`, 0 for no file, whose contents are
    /// `contents`) unless the log's last line has it. `held`: the version this process held before, when the
    /// file had changed since (for the old values).
    func recordWrittenOver(version: UInt64, contents: [String: PropertyList], held: ChangeLog.Held?) {
        ChangeLog.recordExternal(
            version: version, contents: contents, held: held, at: logPath, time: time, owner: owner, on: fileSystem)
    }

    /// A write's entry, announced: the version it records, and its line, made while the version is written.
    struct Announced {
        let version: UInt64
        fileprivate let line: OverlappedWork<Data>
    }

    /// From how many changed keys an entry's line is made on another thread while the version is written and
    /// flushed (its values encoded, the line written), rather than after: for fewer, the other thread's
    /// wake-up would cost about what it saves.
    static let overlappedKeys = 32

    /// Step 2: the entry of the version about to be written (`version`, 0 for a removal; the keys `edits`
    /// change over `base`), announced as an intent; nil when no key changes (nothing is logged).
    ///
    /// The intent names no key, so only the changed keys are found here; their values are encoded into the
    /// entry's line while the version is written and flushed (``OverlappedWork``), on another thread for a write
    /// of many keys: that work, most of what the log costs such a write, then overlaps the wait for the disk.
    mutating func announce(
        _ edits: DomainEdits, over base: [String: PropertyList], baseVersion: UInt64,
        giving contents: [String: PropertyList], version: UInt64
    ) -> Announced? {
        let keys = edits.replacement.map { Set($0.keys).union(base.keys) } ?? Set(edits.keys.keys)
        let changed = ChangeLog.changedKeys(ofKeys: keys, old: { base[$0] }, new: { contents[$0] })
        guard !changed.isEmpty else { return nil }
        var writer = self.writer
        writer.revision = ChangeLogAttribution.currentFleetRevision
        let header = ChangeLog.Entry(
            time: time, origin: writer.revision == nil ? .local : .fleet, writer: writer, version: version,
            changes: [], reason: ChangeLogAttribution.recordedReason(ChangeLogAttribution.currentReason ?? edits.reason)
        )
        let line = OverlappedWork(overlapping: changed.count >= Self.overlappedKeys) {
            var entry = header
            entry.changes = ChangeLog.changes(ofChangedKeys: changed, old: { base[$0] }, new: { contents[$0] })
            return ChangeLog.line(entry)
        }
        // A log that cannot be opened is tried again by the entry's append (the intent only names a writer).
        log = try? AppendingFile(path: logPath, owner: owner, on: fileSystem)
        if let log { ChangeLog.appendIntent(header, previous: base, previousVersion: baseVersion, to: log) }
        return Announced(version: version, line: line)
    }

    /// Step 3: appends the entry of the version now in place. Returns whether it was appended (the writer then
    /// knows the log holds its version).
    func confirm(
        _ announced: Announced, giving contents: [String: PropertyList], over base: [String: PropertyList],
        baseVersion: UInt64
    ) -> Bool {
        ChangeLog.append(
            line: announced.line.value(), version: announced.version, contents: contents, previous: base,
            previousVersion: baseVersion, at: logPath, owner: owner, through: log, on: fileSystem, pid: writer.pid)
            == nil
    }
}
