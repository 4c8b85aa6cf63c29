import Foundation
import Synchronization

/// The in-process state of one domain file, shared by every store in the process that uses it.
///
/// Readers see `disk ⊕ inFlight ⊕ pending`: what was last read from or written to the file, with this
/// process's unwritten edits on top. Writing goes through ``commit()``, which follows the protocol in
/// `Docs/Reliability.md`: exclusive `flock` on a sidecar lock file, re-read when the file changed, apply only
/// this process's edits, temp file + rename.
final class DomainFile: Sendable {
    enum Event: Sendable {
        /// Keys whose value in this file changed, by this process (`.local`) or another (`.external`).
        case changed([KeyDelta], KeyChange.Origin)
        /// One key changed by this process's `set` (no array to make on the path of every `set`).
        case changedKey(KeyDelta, KeyChange.Origin)
        case failed(DefaultsError)
    }

    typealias Observer = @Sendable (Event) -> Void

    /// An observer of the file, with its token: a node of the file's observers (an ``IntrusiveList`` in the
    /// order they were added; not an array of closures: see there). The list is made anew on every change (a
    /// store has a handful of observers of a file at most), so a notification takes it as it is under the
    /// lock and walks it outside.
    final class ObserverEntry: IntrusiveListNode, @unchecked Sendable {
        // @unchecked: `next` is set only while the list holding the node is built, under the state lock; a
        // list once published in the state is never changed (a change builds new nodes).
        let token: UInt64
        let observer: Observer
        var next: ObserverEntry?

        init(_ token: UInt64, _ observer: @escaping Observer) {
            self.token = token
            self.observer = observer
        }
    }

    /// `list` without the observer of `excluded` (nil: none left out), in new nodes.
    private static func copy(_ list: IntrusiveList<ObserverEntry>, without excluded: UInt64? = nil)
        -> IntrusiveList<ObserverEntry>
    {
        list.filter({ $0.token != excluded }, copying: { ObserverEntry($0.token, $0.observer) })
    }

    let path: String
    /// Files created for another user (a store opened with `init?(user:)` by root) are handed to them.
    let owner: (UserID, GroupID)?
    /// The time this file's waits follow (the settle pauses, the background writer's delay) and the clock
    /// that names a kept corrupt copy: that of the stores sharing the file (``DomainFileRegistry`` gives a
    /// store with another clock a file of its own).
    let clock: any DefaultsClock
    /// The file system the file lives on (``Defaults/Configuration/fileSystem``): every call the file makes goes
    /// through it.
    let fileSystem: any DefaultsFileSystem

    /// The file's state and the flags mirroring it, with one owner (see ``DomainFileState``).
    let state = DomainFileState()
    /// Serialises this process's disk operations on the file (commit and reload); `flock` does the same
    /// between processes.
    let diskLock = CriticalSection()
    /// The events found under `diskLock` and not yet told to the observers (they are told after the lock
    /// is released): ``settle()`` waits for them.
    let deliveries = Deliveries()

    /// The registry that made the file, which forgets it when it goes.
    private let registry: DomainFileRegistry?

    init(
        path: String, owner: (UserID, GroupID)? = nil, clock: any DefaultsClock = SystemDefaultsClock.shared,
        fileSystem: any DefaultsFileSystem = SystemFileSystem.shared, registry: DomainFileRegistry? = nil
    ) {
        self.path = path
        self.owner = owner
        self.clock = clock
        self.fileSystem = fileSystem
        self.registry = registry
    }

    deinit {
        registry?.forget(path: path, file: ObjectIdentifier(self))
    }

    var lockPath: String {
        let directory = PathComponents.directory(of: path)
        return "\(directory)/.\(PathComponents.name(of: path)).lock"
    }

    // MARK: Reading

    /// The current contents (loading the file on first use).
    var contents: [String: PropertyList] {
        loadIfNeeded()
        return state.read { $0.contents }
    }

    /// One key's current value (the file must have been loaded).
    func value(forKey key: String) -> PropertyList? {
        guard state.holdsKeys else { return nil }
        return state.read { $0.contents[key] }
    }

    /// The current values of several keys, from one version of the contents (absent keys missing).
    func values(forKeys keys: some Sequence<String>) -> [String: PropertyList] {
        state.read { state in
            var values: [String: PropertyList] = [:]
            for key in keys { values[key] = state.contents[key] }
            return values
        }
    }

    /// Whether the file exists on disk or holds edits not yet written; false as soon as the domain was
    /// replaced by an empty one (the write that removes the file may still be on its way).
    var exists: Bool {
        loadIfNeeded()
        return state.read { state in
            if !state.contents.isEmpty { return true }
            let removing = state.pending.replacement != nil || state.inFlight?.replacement != nil
            return state.stamp != nil && !removing
        }
    }

    /// Why the file as it is on disk now cannot be read (corrupt, not a dictionary, unreadable), if it cannot.
    var currentFailure: DefaultsError? {
        state.read { $0.failure }
    }

    /// Whether the version in memory keeps an index, so that the next version is read as what changed.
    var isIndexed: Bool {
        state.read { $0.index != nil }
    }

    func loadIfNeeded() {
        if state.isLoaded { return }
        reload()
    }

    /// Re-reads the file when its stamp changed, and reports the keys that changed as external changes.
    ///
    /// - Parameters:
    ///   - verifyContents: Set when the watcher saw a write to the file: the stamp alone cannot prove that
    ///     nothing changed (file timestamps have a granularity of a few milliseconds and inode numbers are
    ///     reused), so when it matches, the bytes are compared with the digest of the last version read or
    ///     written, and parsed only when they differ.
    ///   - deferringRemoval: Set when the watcher saw the file go: a file held in memory that is now gone (or
    ///     created again and still empty) is not taken as removed at once but looked at again later
    ///     (``RemovalSettling``), so that a replacement by unlink and create is read as one change.
    ///   - recordingExternal: Cleared by a transaction's look at the file before each attempt: a version no
    ///     LiveDefaults writer made is then recorded by its commit (a write records the version it writes over),
    ///     not by the look, which runs on every lost round and must stay as short as it was.
    func reload(verifyContents: Bool = false, deferringRemoval: Bool = false, recordingExternal: Bool = true) {
        if state.isJudged {
            reloadJudged(
                verifyContents: verifyContents, deferringRemoval: deferringRemoval, recordingExternal: recordingExternal
            )
        } else {
            _ = reload(
                verifyContents: verifyContents, deferringRemoval: deferringRemoval,
                recordingExternal: recordingExternal, judged: nil)
        }
        // A version refused or unreadable with none accepted before (a first look): the last known good is the
        // change log's.
        recoverFromLogIfNeeded()
    }

    /// A version read and judged (``reloadJudged(verifyContents:deferringRemoval:recordingExternal:)``), for the
    /// reload that adopts it or keeps it out.
    private struct JudgedVersion {
        var loaded: Loaded
        /// Why the judges refused it; nil: accepted.
        var refusal: String?
    }

    /// How many versions in a row a reload of a judged file reads and judges before it leaves the file to the
    /// next change it is told of (another process rewriting the file faster than the judges answer).
    static let judgedReloadAttempts = 10

    /// ``reload(verifyContents:deferringRemoval:recordingExternal:)`` of a file that validators judge
    /// (``FileJudges``): the new version is read and judged with no lock of ours held, then adopted, or kept out,
    /// under the disk lock if it is still the file's; a version that replaced it meanwhile is read and judged in
    /// its turn. A refused version is reported once, and not judged again while it stays on disk. A file that
    /// cannot be read and a file that is gone take the usual way: judges judge versions of the file, not its
    /// absence (the domain then reads its defaults, as anywhere). A first look is judged too: a file is judged
    /// from its first version when its judges came first (a layer whose directory appeared under a store with
    /// validators).
    private func reloadJudged(verifyContents: Bool, deferringRemoval: Bool, recordingExternal: Bool) {
        func plain() {
            _ = reload(
                verifyContents: verifyContents, deferringRemoval: deferringRemoval,
                recordingExternal: recordingExternal, judged: nil)
        }
        for _ in 0..<Self.judgedReloadAttempts {
            let (loaded, known, digest, refused, corrupt) = state.read {
                ($0.loaded, $0.stamp, $0.digest, $0.refused, $0.corruptStamp)
            }
            guard case .some(let stamp?) = try? fileSystem.stamp(atPath: path) else { return plain() }
            if loaded && stamp == known && !verifyContents { return }
            guard
                case .success(let read?) = Self.readContents(path, on: fileSystem, knownCorrupt: corrupt, clock: clock),
                read.version.digest != digest, case .whole(let contents) = read.contents
            else { return plain() }
            let refusal: String?
            if let refused, refused.version == read.version {
                refusal = refused.reason
            } else {
                // The version as its writer made it: this process's unwritten edits are judged on top of it when
                // they are written (refusing the other's version for them would keep a valid version out).
                refusal = state.read { $0.judges }.verdict(on: contents)
            }
            let judged = JudgedVersion(loaded: read, refusal: refusal)
            if reload(
                verifyContents: verifyContents, deferringRemoval: deferringRemoval,
                recordingExternal: recordingExternal, judged: judged)
            {
                return
            }
        }
    }

    /// The reload proper; with `judged`, the version read and judged before, adopted or kept out if the file is
    /// still that version. Returns false when it is not (nothing was done: the caller reads again).
    private func reload(
        verifyContents: Bool, deferringRemoval: Bool, recordingExternal: Bool, judged: JudgedVersion?
    ) -> Bool {
        var stillJudged = true
        // Observers (the stores, and through them error handlers and streams) are told after the disk lock
        // is released: a handler may call synchronize(), which takes it again.
        var readAVersion = false
        var toRecord: ExternalVersionRecorder.Request?
        var wasFirstLook = false
        let events: [Event] = diskLock.withLock {
            let (loaded, known) = state.read { ($0.loaded, $0.loaded ? $0.stamp : nil) }
            // The first look reads the file without a `stat` of its path first: there is no version to compare
            // with, the read's own `fstat` gives the stamp, and an absent file costs the `open` what it would
            // have cost the `stat` (one system call less for every file that exists).
            let firstLook = !loaded
            wasFirstLook = firstLook
            let current: FileStamp?
            do throws(SystemError) {
                current = firstLook && judged == nil ? nil : try fileSystem.stamp(atPath: path)
            } catch {
                let failure = state.change { state in
                    let failure = DefaultsError.readFailed(path: path, errno: error.errno, message: error.message)
                        .keepingLastKnownGood(state.readGoodVersion)
                    state.loaded = true
                    state.failure = failure
                    return failure
                }
                return [.failed(failure)]
            }
            if let judged {
                guard current == judged.loaded.version.stamp else {
                    stillJudged = false
                    return []
                }
                if let reason = judged.refusal {
                    // Not applied at all: `disk` and `contents` keep the last version accepted, the stamp moves on
                    // (the version is not read again), and the refusal is reported once.
                    let refusal = FileJudges.Refusal(
                        version: judged.loaded.version, contents: Self.wholeContents(judged.loaded), reason: reason)
                    let isNew = state.change { state in
                        defer { state.refused = refusal }
                        state.loaded = true
                        state.stamp = judged.loaded.version.stamp
                        return state.refused?.version != refusal.version
                    }
                    guard isNew else { return [] }
                    ExternalVersionRecorder.shared.submitRefusal(
                        version: judged.loaded.version.digest, reason: reason, path: path, lockPath: lockPath,
                        time: clock.now, owner: owner, fileSystem: fileSystem)
                    deliveries.begin()
                    return [
                        .failed(
                            .versionRefused(path: path, domain: DefaultsMetrics.domain(ofFile: path), reason: reason))
                    ]
                }
            }
            // Gone, or created again and not yet written (`install` and `git checkout` create the new file,
            // then fill it): not a removal yet (see `deferringRemoval`).
            if judged == nil, deferringRemoval, loaded, let known, RemovalSettling.defers(held: known, current: current)
            {
                scheduleRemovalCheck(look: 1)
                return []
            }
            if judged == nil, loaded && current == known {
                guard verifyContents, current != nil else { return [] }
                let bytes = try? fileSystem.read(atPath: path)
                if bytes.map({ FileVersion.digest(of: $0.data) }) == state.read({ $0.digest }) { return [] }
            }
            let (corruptStamp, index) = state.read { ($0.corruptStamp, $0.index) }
            // Only the disk lock, held here, changes `disk`: what it holds now is what the index describes.
            let previous = index.map { index in
                Previous(index: index, isKey: { key in self.state.read { $0.disk[key] != nil } })
            }
            // A file the stamp found absent is not opened as well. One that appears meanwhile has a stamp the
            // next reload (the watcher's) finds new.
            let result =
                if let judged {
                    ReadResult.success(judged.loaded)
                } else if current == nil && !firstLook {
                    ReadResult.success(nil)
                } else {
                    Self.readContents(
                        path, on: fileSystem, knownCorrupt: corruptStamp, clock: clock, indexing: true,
                        previous: previous)
                }
            // The stamp above may be of a version already replaced: the file read is then the next one, which the
            // settling rule judges in its turn (gone, or created again and not yet written, is not a removal).
            if judged == nil, deferringRemoval, loaded, let known, case .success(let read) = result,
                RemovalSettling.defers(held: known, current: read.map { $0.version.stamp })
            {
                scheduleRemovalCheck(look: 1)
                return []
            }
            let recording = recordingExternal && Self.mayNeedRecording(result, firstLook: firstLook)
            var report: DefaultsError?
            var held: ChangeLog.Held?
            var read = ChangeLog.ReadVersion.whole([:])
            let deltas: [KeyDelta] = state.change { state in
                // The version before, for the old values of what an external writer changed.
                let heldVersion: UInt64? =
                    recording && !firstLook && state.failure == nil ? (state.stamp == nil ? 0 : state.digest) : nil
                state.loaded = true
                if case .success(let loaded?) = result, case .changed(let reread) = loaded.contents {
                    let diskChanges = Self.diskChanges(of: reread)
                    // The old and new values of the entries read, not copies of `disk`, which the apply edits in
                    // place (a copy kept for the record made the next apply copy the whole domain).
                    if recording {
                        if let heldVersion {
                            var oldValues: [String: PropertyList?] = [:]
                            for key in diskChanges.keys { oldValues[key] = .some(state.disk[key]) }
                            held = .changed(version: heldVersion, oldValues: oldValues)
                        }
                        read = .changed(newValues: diskChanges)
                    }
                    // Only the entries that changed were read: the dictionaries are edited in place.
                    state.adopt(loaded.version, format: loaded.format, index: reread.index)
                    return Self.apply(diskChanges, to: &state, reporting: !state.observers.isEmpty)
                }
                if let heldVersion { held = .whole(version: heldVersion, contents: state.disk) }
                // Read whole: `disk` is replaced, never edited in place, and the record may keep it.
                defer { if recording { read = .whole(state.disk) } }
                let before = state.contents
                switch result {
                case .success(let loaded):
                    if case .whole(let contents) = loaded?.contents { state.disk = contents } else { state.disk = [:] }
                    state.adopt(loaded?.version, format: loaded?.format ?? state.format, index: loaded?.index)
                case .failure(let failure):
                    // Last known good: `disk` keeps the last version that parsed (empty when this process has
                    // read none), so that one bad save never takes a running program's settings away. The
                    // next good version is compared with it, key by key, like any other change.
                    let error = failure.error.keepingLastKnownGood(state.readGoodVersion)
                    state.stamp = failure.stamp
                    state.failure = error
                    if state.corruptStamp != failure.stamp {
                        state.corruptStamp = failure.stamp
                        report = error
                    }
                }
                state.contents = Self.overlay(state.disk, state.inFlight, state.pending)
                // The first load has no observers yet (stores observe after loading): nothing to compare.
                return state.observers.isEmpty ? [] : KeyDelta.between(before, state.contents)
            }
            if recording, case .success(let loaded) = result {
                toRecord = ExternalVersionRecorder.Request(
                    path: path, lockPath: lockPath, version: loaded?.version, contents: read, held: held,
                    firstLook: firstLook, time: clock.now,
                    owner: owner, fileSystem: fileSystem)
            }
            held = nil
            // A version read: any change, and a first look at a file that exists.
            if case .success(let loaded) = result, loaded != nil || !firstLook { readAVersion = true }
            var events: [Event] = []
            if let report { events.append(.failed(report)) }
            if !deltas.isEmpty { events.append(.changed(deltas, .external)) }
            if !events.isEmpty { deliveries.begin() }
            return events
        }
        // The version is handed to the change log's recorder once the observers have it (see there).
        deliver(events, then: toRecord.map { request in { ExternalVersionRecorder.shared.submit(request) } })
        reportMetrics(events, readAVersion: readAVersion, firstLook: wasFirstLook)
        if readAVersion || !events.isEmpty { ReaderAnnouncer.shared.changed(self) }
        return stillJudged
    }

    /// The version this process applied (the change log's number: its digest, 0 for no file; nil before the
    /// first look), and the version on disk it refused, if one is (``ReaderAnnouncer``).
    var announcedVersions: (applied: UInt64, refused: FileJudges.Refusal?) {
        state.read { state in
            // While a version is refused (or unreadable) the stamp is that version's; the digest stays the applied one's.
            (state.refused == nil && state.stamp == nil ? 0 : state.digest ?? 0, state.refused)
        }
    }

    /// The version of the file this process holds, in the change log's numbering (its digest; 0 for no file).
    var heldVersionNumber: UInt64 {
        loadIfNeeded()
        return announcedVersions.applied
    }

    /// A whole read's contents (a judged version is read whole: it has no index to be read against).
    private static func wholeContents(_ loaded: Loaded) -> [String: PropertyList] {
        if case .whole(let contents) = loaded.contents { return contents }
        return [:]
    }

    /// Reports a reload's outcome through swift-metrics (``DefaultsMetrics``), with no lock held: the
    /// backend's factory is the program's code.
    private func reportMetrics(_ events: [Event], readAVersion: Bool, firstLook: Bool) {
        let (path, time) = (path, clock.now)
        DefaultsMetrics.report {
            let domain = DefaultsMetrics.domain(ofFile: path)
            if firstLook { DefaultsMetrics.opened(domain: domain) }
            if readAVersion { DefaultsMetrics.reloaded(domain: domain, at: time) }
            for case .failed(let error) in events {
                if error.code == .versionRefused {
                    DefaultsMetrics.versionRefused(domain: domain)
                } else {
                    DefaultsMetrics.reloadFailed(domain: domain, servingLastKnownGood: error.keepsLastKnownGood)
                }
            }
            for case .changed(let deltas, .external) in events {
                DefaultsMetrics.changesApplied(deltas.count, domain: domain, origin: "external")
            }
        }
    }

    /// Whether a version a reload read may be one the change log has not recorded: the recorder
    /// (``ExternalVersionRecorder``) looks at the log's end to tell, after the observers were told. Not a failed
    /// read, and not a file absent at the first look (most layers of every domain): a removal made while nothing
    /// ran is recorded by the next write instead, and opening a domain costs nothing for its absent layers.
    private static func mayNeedRecording(_ result: ReadResult, firstLook: Bool) -> Bool {
        guard case .success(let loaded) = result, ChangeLog.isEnabled.load(ordering: .relaxed) else { return false }
        return !(firstLook && loaded == nil)
    }

    /// Schedules look number `look` at a file the watcher found gone (or empty), unless one is scheduled
    /// already (``RemovalSettling``).
    private func scheduleRemovalCheck(look: Int) {
        guard state.change({ $0.removal.schedule(holding: $0.stamp) }) else { return }
        clock.schedule(after: RemovalSettling.interval, on: RemovalSettling.queue) { [weak self] in
            self?.settleRemoval(look: look)
        }
    }

    /// A scheduled look at a file the watcher found gone: another look, or a read of the file as it is now.
    private func settleRemoval(look: Int) {
        let (scheduledFor, held) = state.change { ($0.removal.takeDue(), $0.stamp) }
        let current = (try? fileSystem.stamp(atPath: path)) ?? nil
        switch RemovalSettling.next(afterLook: look, scheduledFor: scheduledFor, held: held, current: current) {
        case .look(let next): scheduleRemovalCheck(look: next)
        case .reload: reload()
        }
    }

    /// Waits until the observers were told of every change found so far by another thread (the watcher's
    /// reload of a file this thread then found unchanged), so that a store that re-read its files shows
    /// what they hold. Returns at once on a thread that is itself telling observers of a change (a handler
    /// that calls `synchronize()`), which must not wait for itself.
    func settle() {
        deliveries.waitUntilDone()
    }

    // MARK: Editing

    /// Sets or removes one key in memory at once; the background writer persists it.
    ///
    /// - Throws: ``DefaultsError/Code/versionRefused`` when a validator refuses the domain with the change
    ///   (nothing changes).
    func set(_ value: PropertyList?, forKey key: String) throws(DefaultsError) {
        loadIfNeeded()
        if state.isJudged {
            try judge { edits in edits.keys[key] = .some(value) }
        }
        // The observers to tell are taken under the same lock as the edit (one lock per `set`, not two).
        let (delta, mustSchedule, observers): (KeyDelta?, Bool, IntrusiveList<ObserverEntry>) = state.change {
            state in
            let mustSchedule = !state.scheduled
            state.scheduled = true
            let old =
                value.map { state.contents.updateValue($0, forKey: key) } ?? state.contents.removeValue(forKey: key)
            state.pending.keys[key] = .some(value)
            if old == value { return (nil, mustSchedule, IntrusiveList()) }
            return (KeyDelta(key: key, old: old, new: value), mustSchedule, state.observers)
        }
        if mustSchedule { BackgroundWriter.shared.schedule(self) }
        if let delta {
            let event = Event.changedKey(delta, .local)
            for entry in observers { entry.observer(event) }
        }
    }

    /// Replaces the whole domain in memory at once; the background writer persists it.
    ///
    /// - Throws: ``DefaultsError/Code/versionRefused`` when a validator refuses the new contents.
    func replace(with contents: [String: PropertyList]) throws(DefaultsError) {
        loadIfNeeded()
        if state.isJudged {
            try judge { edits in edits = DomainEdits(replacement: contents) }
        }
        let deltas: [KeyDelta] = state.change { state in
            let before = state.contents
            state.pending = DomainEdits(replacement: contents)
            state.scheduled = true
            state.contents = contents
            return KeyDelta.between(before, contents)
        }
        BackgroundWriter.shared.schedule(self)
        if !deltas.isEmpty { notify(.changed(deltas, .local)) }
    }

    // MARK: Judging

    /// Adds a judge of the file's versions (``FileJudges``), under `id`.
    func addJudge(_ judge: @escaping FileJudges.Judge, id: UInt64) {
        loadIfNeeded()
        state.change { $0.judges.add(judge, id: id) }
    }

    /// Removes the judge added under `id`.
    func removeJudge(id: UInt64) {
        state.change { $0.judges.remove(id: id) }
    }

    /// What a write of this process goes onto, with its edits on top: the version on disk as this process knows
    /// it, which is the one readers see unless the judges refused it (a transaction reads this, so that its
    /// check holds against the file as it is).
    var contentsToWriteOver: [String: PropertyList] {
        loadIfNeeded()
        return state.read { state in
            guard let refused = state.refused else { return state.contents }
            return Self.overlay(refused.contents, state.inFlight, state.pending)
        }
    }

    /// The contents this process would write with `edit` made to its pending edits (onto the version on disk as
    /// it knows it), and the judges to ask.
    private func candidate(_ edit: (inout DomainEdits) -> Void) -> ([String: PropertyList], FileJudges) {
        state.read { state in
            var pending = state.pending
            edit(&pending)
            return (Self.overlay(state.refused?.contents ?? state.disk, state.inFlight, pending), state.judges)
        }
    }

    /// Asks the judges, with no lock held, about the file with `edit` made to this process's pending edits.
    private func judge(_ edit: (inout DomainEdits) -> Void) throws(DefaultsError) {
        let (candidate, judges) = candidate(edit)
        if let reason = judges.verdict(on: candidate) { throw refusedChange(reason) }
    }

    /// A change of this process the judges refused for `reason`: counted in the domain's metric, as the error
    /// its caller throws.
    private func refusedChange(_ reason: String) -> DefaultsError {
        let domain = DefaultsMetrics.domain(ofFile: path)
        DefaultsMetrics.report { DefaultsMetrics.versionRefused(domain: domain) }
        return .changeRefused(path: path, domain: domain, reason: reason)
    }

    // MARK: Writing

    /// Writes this process's pending edits to disk, merged with whatever other processes wrote meanwhile.
    ///
    /// - Throws: ``DefaultsError/Code/writeFailed``; the edits then stay pending.
    func commit() throws(DefaultsError) {
        _ = try commit(nil)
    }

    /// A transaction's part of a commit: its writes, and the values its reads saw (nil: the key was absent).
    struct TransactionEdits {
        var writes: DomainEdits
        var expected: [String: PropertyList?]
    }

    /// Writes this process's pending edits followed by a transaction's `writes` as one version of the file, if
    /// every key in `expected` still has the value given there in the file as it is now (re-read under the
    /// file lock) with this process's pending edits on top.
    ///
    /// The writes reach this process's observers as one `.local` event, after the keys other processes changed
    /// meanwhile (one `.external` event), so that readers only ever see versions someone wrote.
    ///
    /// - Returns: false, having written nothing (this process's earlier edits stay pending), when a key read
    ///   was changed since: the caller runs the transaction again on the new version.
    /// - Throws: what ``commit()`` throws; the transaction's writes are then dropped, the earlier edits kept.
    func commit(transaction writes: [String: PropertyList?], expecting expected: [String: PropertyList?])
        throws(DefaultsError) -> Bool
    {
        loadIfNeeded()
        return try commit(TransactionEdits(writes: DomainEdits(keys: writes), expected: expected))
    }

    /// How many times a commit of a judged file judges what it would write before it gives up on a file that
    /// changes under it each time (or edits that keep coming while it judges).
    static let judgedCommitAttempts = 20

    /// ``commit()``, with a transaction's writes and check when given one; false when its check failed.
    ///
    /// A judged file's write is judged first, with no lock held: the edits on top of the version on disk as this
    /// process knows it. The write then goes on only if, on the file as it is under the file lock, it writes
    /// exactly what was judged; else the file is read again (and judged, as another process's version is) and
    /// the edits are judged anew. Refused, a transaction throws having written nothing (the earlier edits stay
    /// pending); a plain commit drops its edits, which readers of this process then no longer see, and throws.
    private func commit(_ transaction: TransactionEdits?) throws(DefaultsError) -> Bool {
        guard state.isJudged else { return try commit(transaction, judged: nil) }
        for _ in 0..<Self.judgedCommitAttempts {
            let (candidate, judges) = candidate { pending in
                if let transaction { pending = pending.followed(by: transaction.writes) }
            }
            if let reason = judges.verdict(on: candidate) {
                let error = refusedChange(reason)
                guard transaction == nil else { throw error }
                dropPendingEdits(refused: error)
                throw error
            }
            if try commit(transaction, judged: candidate) { return true }
            if transaction != nil { return false }
            // Written over by another process meanwhile: its version is judged, then the edits on top of it.
            reload(recordingExternal: false)
        }
        throw .transactionConflict(domain: DefaultsMetrics.domain(ofFile: path), attempts: Self.judgedCommitAttempts)
    }

    /// Drops this process's pending edits (a validator refused them on top of the file as it now is): readers
    /// see the file's contents again, and the store's observers hear of the refusal.
    private func dropPendingEdits(refused error: DefaultsError) {
        let deltas: [KeyDelta] = diskLock.withLock {
            let deltas = state.change { state in
                let before = state.contents
                state.pending = DomainEdits()
                state.scheduled = false
                state.contents = Self.overlay(state.disk, state.inFlight, state.pending)
                return KeyDelta.between(before, state.contents)
            }
            deliveries.begin()
            return deltas
        }
        deliver(deltas.isEmpty ? [.failed(error)] : [.changed(deltas, .local), .failed(error)])
    }

    /// The commit proper; with `judged`, the contents the judges accepted, which the write must be exactly (else
    /// it writes nothing and answers false).
    private func commit(_ transaction: TransactionEdits?, judged: [String: PropertyList]?) throws(DefaultsError)
        -> Bool
    {
        // As in reload(), observers are told after the disk lock is released.
        var written: (keys: Int, nanoseconds: Int64)?
        let (result, events): (Result<Bool, DefaultsError>, [Event]) = diskLock.withLock {
            let (pending, edits, held, loggedVersion) = state.change { state in
                let pending = state.pending
                let edits = transaction.map { pending.followed(by: $0.writes) } ?? pending
                state.pending = DomainEdits()
                state.scheduled = false
                state.inFlight = edits.isEmpty ? nil : edits
                let held = CurrentVersion.Held(
                    stamp: state.stamp, contents: state.disk, digest: state.digest, format: state.format,
                    knownCorrupt: state.corruptStamp, refused: state.refused?.version?.stamp)
                return (pending, edits, held, state.loggedVersion)
            }
            if edits.isEmpty { return (.success(true), []) }
            // The transaction saw the file with this process's edits on top: so is each key checked.
            let transactionCheck = transaction.map { transaction in
                { (base: [String: PropertyList]) -> Bool in
                    transaction.expected.allSatisfy { key, seen in pending.value(forKey: key, over: base[key]) == seen }
                }
            }
            let check: (([String: PropertyList]) -> Bool)? =
                if let judged {
                    { base in (transactionCheck?(base) ?? true) && edits.applied(to: base) == judged }
                } else {
                    transactionCheck
                }
            let start = ContinuousClock.now
            let outcome = writeSettled(
                DomainWrite(
                    path: path, lockPath: lockPath, fileSystem: fileSystem, owner: owner, clock: clock, edits: edits,
                    held: held, check: check, loggedVersion: loggedVersion))
            if case .written = outcome {
                written = (edits.keyCount, Int64((ContinuousClock.now - start).clampedNanoseconds))
            }
            switch outcome {
            case .conflict:
                state.change { state in
                    state.pending = pending.followed(by: state.pending)
                    state.inFlight = nil
                }
                if !pending.isEmpty { BackgroundWriter.shared.schedule(self) }
                return (.success(false), [])
            case .written(let version):
                let (external, local) = state.change { state in
                    Self.adopt(version, into: &state, transactionKeys: transaction?.writes.keys.keys)
                }
                var events: [Event] = []
                if let kept = version.keptAside { events.append(.failed(kept)) }
                if !external.isEmpty { events.append(.changed(external, .external)) }
                if !local.isEmpty { events.append(.changed(local, .local)) }
                if !events.isEmpty { deliveries.begin() }
                return (.success(true), events)
            case .failed(let error):
                state.change { state in
                    // A transaction commits nothing when its write fails: only the earlier edits stay pending.
                    state.pending = (transaction == nil ? state.inFlight ?? DomainEdits() : pending)
                        .followed(by: state.pending)
                    state.inFlight = nil
                }
                if transaction != nil && !pending.isEmpty { BackgroundWriter.shared.schedule(self) }
                deliveries.begin()
                return (.failure(error), [.failed(error)])
            }
        }
        deliver(events)
        if let written {
            ReaderAnnouncer.shared.changed(self)
            // After the locks: the metrics backend's factory is the program's code.
            let origin = ChangeLogAttribution.fleetRevision == nil ? "local" : "fleet"
            let path = path
            DefaultsMetrics.report {
                let domain = DefaultsMetrics.domain(ofFile: path)
                DefaultsMetrics.wrote(domain: domain, nanoseconds: written.nanoseconds)
                DefaultsMetrics.changesApplied(written.keys, domain: domain, origin: origin)
                // Not reportMetrics: a commit's failure event is a file kept aside, not a failed reload.
                for case .changed(let deltas, .external) in events {
                    DefaultsMetrics.changesApplied(deltas.count, domain: domain, origin: "external")
                }
            }
        }
        return try result.get()
    }

    /// Takes a written version as the one `disk` holds, and works out what readers of `contents` see change:
    /// keys another process changed (external) and, for a transaction, the keys it wrote (local).
    private static func adopt(
        _ version: WrittenVersion, into state: inout State, transactionKeys: Dictionary<String, PropertyList?>.Keys?
    ) -> (external: [KeyDelta], local: [KeyDelta]) {
        state.disk = version.contents
        // Written by this process: the next version read is parsed whole (no index).
        state.adopt(version.version, format: version.format, index: nil)
        state.inFlight = nil
        state.corruptStamp = nil
        switch version.logged {
        case .unchanged: break
        case .logged(let logged): state.loggedVersion = logged
        case .failed: state.loggedVersion = nil
        }
        if version.reread {
            let before = state.contents
            state.contents = overlay(state.disk, nil, state.pending)
            let deltas = KeyDelta.between(before, state.contents)
            guard let transactionKeys else { return (deltas, []) }
            let written = Set(transactionKeys)
            return (deltas.filter { !written.contains($0.key) }, deltas.filter { written.contains($0.key) })
        }
        // The file held what this process last knew: the new disk contents are exactly the cached contents
        // without the newer pending edits, so nothing changed for readers but a transaction's keys, which are
        // changed in place (recomputing the cache would share the disk dictionary and make the next `set` copy
        // the whole domain).
        guard let transactionKeys else { return ([], []) }
        var contents = state.contents
        state.contents = [:]
        var local: [KeyDelta] = []
        for key in transactionKeys {
            let new = state.pending.value(forKey: key, over: state.disk[key])
            let old = new.map { contents.updateValue($0, forKey: key) } ?? contents.removeValue(forKey: key)
            if old != new { local.append(KeyDelta(key: key, old: old, new: new)) }
        }
        state.contents = contents
        return ([], local)
    }

    /// A write of `edits` (``DomainWrite``), attempted again after a pause while the file reads as unreadable
    /// and may be mid-write. The pause is taken with the file lock released: sleeping under it would stall
    /// every other writer of the domain, in every process.
    private func writeSettled(_ write: DomainWrite) -> WriteOutcome {
        var attempt = 1
        while true {
            switch write.attempt(attempt) {
            case .done(let outcome): return outcome
            case .unsettled:
                clock.pause(for: Self.settlePause)
                attempt += 1
            }
        }
    }

    // MARK: Observers

    func addObserver(_ observer: @escaping Observer) -> UInt64 {
        state.change { state in
            state.nextObserver += 1
            var observers = Self.copy(state.observers)
            observers.append(ObserverEntry(state.nextObserver, observer))
            state.observers = observers
            return state.nextObserver
        }
    }

    func removeObserver(_ token: UInt64) {
        state.change { state in
            state.observers = Self.copy(state.observers, without: token)
        }
    }

    /// Calls observers outside the lock (they may read this file again). Failures are not logged here: the
    /// stores that observe the file log them to their own loggers, and a failed write of a file no store
    /// observes is reported to the caller of `synchronize()` or `flush()`.
    /// Tells the observers of events found under the disk lock (counted there by `deliveries.begin()`).
    ///
    /// `then` runs after the observers were told and before the delivery is counted done, so that a thread that
    /// waits in ``settle()`` finds what it did (the change log's recorder given the version) done too.
    func deliver(_ events: [Event], then: (() -> Void)? = nil) {
        guard !events.isEmpty else {
            then?()
            return
        }
        Deliveries.whileDelivering {
            for event in events { notify(event) }
        }
        then?()
        deliveries.end()
    }

    private func notify(_ event: Event) {
        let observers = state.read { $0.observers }
        for entry in observers { entry.observer(event) }
    }

    // MARK: Helpers

    static func overlay(
        _ disk: [String: PropertyList], _ inFlight: DomainEdits?, _ pending: DomainEdits
    ) -> [String: PropertyList] {
        var result = disk
        if let inFlight { result = inFlight.applied(to: result) }
        if !pending.isEmpty { result = pending.applied(to: result) }
        return result
    }

    /// The entries a version read as changed entries changes on disk: each key's new value, nil when removed.
    private static func diskChanges(of reread: XMLDictionaryIndex.Reread) -> [String: PropertyList?] {
        var diskChanges: [String: PropertyList?] = [:]
        for key in reread.removedKeys { diskChanges[key] = .some(nil) }
        for (key, value) in reread.entries { diskChanges[key] = value }
        return diskChanges
    }

    /// Applies a version read as changed entries (``diskChanges(of:)``) to `disk` and `contents`, editing both in
    /// place (the whole domain is not copied), and returns the keys whose effective value changed (none when not
    /// `reporting`).
    private static func apply(
        _ diskChanges: [String: PropertyList?], to state: inout State, reporting: Bool
    ) -> [KeyDelta] {
        let before = reporting ? diskChanges.keys.map { ($0, state.contents[$0]) } : []
        // Without edits of this process in flight, `contents` is `disk` (usually the same storage): release
        // it so that `disk` is edited in place, then share it again.
        let noEdits = state.inFlight == nil && state.pending.isEmpty
        if noEdits { state.contents = [:] }
        var disk = state.disk
        state.disk = [:]
        for (key, value) in diskChanges {
            if let value { disk[key] = value } else { disk.removeValue(forKey: key) }
        }
        state.disk = disk
        if noEdits {
            state.contents = disk
        } else {
            var contents = state.contents
            state.contents = [:]
            for key in diskChanges.keys {
                var value = disk[key]
                if let inFlight = state.inFlight { value = inFlight.value(forKey: key, over: value) }
                value = state.pending.value(forKey: key, over: value)
                if let value { contents[key] = value } else { contents.removeValue(forKey: key) }
            }
            state.contents = contents
        }
        return before.compactMap { key, old in
            let new = state.contents[key]
            return old == new ? nil : KeyDelta(key: key, old: old, new: new)
        }
    }

    /// A time as whole seconds since 1970 for a file name; a clock set beyond what a name can say gives 0.
    static func wholeSeconds(_ date: Date) -> Int {
        let seconds = date.timeIntervalSince1970.rounded(.down)
        return seconds.magnitude < 1e15 ? Int(seconds) : 0
    }
}
