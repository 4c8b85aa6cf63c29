import Foundation
import Synchronization

/// Reading a domain file's versions: the first look, a reload when the watcher or a writer says the file
/// changed (judged when validators judge the file), the settling of a removal, and what readers are told.
extension DomainFile {
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
    func reload(verifyContents: Bool = false, deferringRemoval asked: Bool = false, recordingExternal: Bool = true) {
        // Before the first load: a value whose temporary change expired is never read as current.
        if !state.isLoaded { undoExpiredOnFirstLook() }
        let deferringRemoval = asked && !context.hasReintroduced(.removalSettlingOff)
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
        var loaded: VersionReading.Loaded
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
                ($0.loaded, $0.stamp, $0.servedDigest, $0.refused, $0.corruptStamp)
            }
            guard case .some(let stamp?) = try? fileSystem.stamp(atPath: path) else { return plain() }
            if loaded && stamp == known && !verifyContents { return }
            guard
                case .success(let read?) = VersionReading.readContents(
                    path, on: fileSystem, knownCorrupt: corrupt, clock: clock),
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
                    let refusal = FileJudges.RefusedVersion(
                        version: judged.loaded.version, contents: Self.wholeContents(judged.loaded), reason: reason)
                    let isNew = state.change { state in
                        defer { state.refused = refusal }
                        state.loaded = true
                        state.onDisk = .other(judged.loaded.version.stamp)
                        return state.refused?.version != refusal.version
                    }
                    guard isNew else { return [] }
                    recordRefusal(of: judged.loaded.version.digest, reason: reason)
                    deliveries.begin()
                    return [.failed(refusedVersion(reason))]
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
                if bytes.map({ FileVersion.digest(of: $0.data) }) == state.read({ $0.servedDigest }) { return [] }
            }
            let (corruptStamp, index) = state.read { ($0.corruptStamp, $0.index) }
            // Only the disk lock, held here, changes `disk`: what it holds now is what the index describes.
            let previous = index.map { index in
                VersionReading.Previous(index: index, isKey: { key in self.state.read { $0.disk[key] != nil } })
            }
            // A file the stamp found absent is not opened as well. One that appears meanwhile has a stamp the
            // next reload (the watcher's) finds new.
            let result =
                if let judged {
                    VersionReading.ReadResult.success(judged.loaded)
                } else if current == nil && !firstLook {
                    VersionReading.ReadResult.success(nil)
                } else {
                    VersionReading.readContents(
                        path, on: fileSystem, knownCorrupt: corruptStamp, clock: clock, indexing: true,
                        previous: previous)
                }
            // The stamp above may be of a version already replaced: the file read is then the next one, which the
            // settling rule judges in its turn (gone, or created again and not yet written, is not a removal).
            if judged == nil, deferringRemoval, loaded, let known, case .success(let read) = result,
                !context.hasReintroduced(.staleStampRead),
                RemovalSettling.defers(held: known, current: read.map { $0.version.stamp })
            {
                scheduleRemovalCheck(look: 1)
                return []
            }
            let recording = recordingExternal && mayNeedRecording(result, firstLook: firstLook)
            var report: DefaultsError?
            var held: ChangeLog.Held?
            var read = ChangeLog.ReadVersion.whole([:])
            let deltas: [KeyDelta] = state.change { state in
                // The version before, for the old values of what an external writer changed.
                let heldVersion: UInt64? =
                    recording && !firstLook && state.failure == nil
                    ? (state.stamp == nil ? 0 : state.servedDigest) : nil
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
                    state.onDisk = .other(failure.stamp)
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
        deliver(events, then: toRecord.map { request in { self.context.recorder.submit(request) } })
        reportMetrics(events, readAVersion: readAVersion, firstLook: wasFirstLook)
        if readAVersion || !events.isEmpty { context.announcer.changed(self) }
        return stillJudged
    }

    /// The version this process applied (the change log's number: its digest, 0 for no file; nil before the
    /// first look), the version on disk it refused, if one is, and what it serves instead of the file's version,
    /// if it serves a fallback (``ReaderAnnouncer``): one read of the state, so the three agree.
    var announcedVersions: (applied: UInt64, refused: FileJudges.RefusedVersion?, fallback: Fallback?) {
        state.read { state in
            // While a version is refused (or unreadable) the stamp is that version's; the digest is the served one's.
            (state.refused == nil && state.stamp == nil ? 0 : state.servedDigest ?? 0, state.refused, state.fallback)
        }
    }

    /// The version of the file this process holds, in the change log's numbering (its digest; 0 for no file).
    var heldVersionNumber: UInt64 {
        loadIfNeeded()
        return announcedVersions.applied
    }

    /// A whole read's contents (a judged version is read whole: it has no index to be read against).
    private static func wholeContents(_ loaded: VersionReading.Loaded) -> [String: PropertyList] {
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
    private func mayNeedRecording(_ result: VersionReading.ReadResult, firstLook: Bool) -> Bool {
        guard case .success(let loaded) = result, context.changeLogIsEnabled else { return false }
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

    // MARK: Applying a version read as changed entries

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
}
