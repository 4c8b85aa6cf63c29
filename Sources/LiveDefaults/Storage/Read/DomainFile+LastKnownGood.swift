import Foundation

/// What a process serves of a file whose version it never accepted: the last known good across restarts.
///
/// A running process keeps the last version it accepted when a new one is refused or cannot be read. A process
/// that starts on such a file, or that is given its validators after it read the file, has no such version of
/// its own: it takes the newest version the file's change log gives back whole (``LoggedVersions``) that its
/// judges accept, else nothing of the file (the domain then reads the layers below it, its defaults). The
/// refused or unreadable version is reported as any other; the fallback is announced to the readers' records.
extension DomainFile {
    /// What `disk` holds instead of the file's own version (``State/fallback``).
    struct Fallback: Sendable, Equatable {
        /// The change log's number of the version served (the file's digest then; 0 for no file), nil when the log
        /// gave back none the judges accept and the file's layer serves nothing.
        var logged: UInt64?
    }

    /// The fallback served now, if any.
    var fallback: Fallback? {
        state.read { $0.fallback }
    }

    /// Judges the version the file serves, with no lock held: called when a judge was added, as the versions
    /// before were served unjudged (or judged without it). Refused, it is served no more: a version of the file
    /// is kept out as any refused version is, and the readers see the newest version the log gives back that the
    /// judges accept (``recoverFromLogIfNeeded()``). The refusal is reported as any other.
    ///
    /// Returns once the stores were told: the watcher's thread may meet the refusal first (its reload ends in
    /// ``recoverFromLogIfNeeded()`` too) and take the fallback in this thread's place, and a read made right
    /// after this call must not find the refused version still in the store's view while that thread tells it.
    func judgeHeldVersion() {
        defer { settle() }
        loadIfNeeded()
        for _ in 0..<Self.judgedReloadAttempts {
            let (held, judges) = state.read {
                state -> ((stamp: FileStamp?, contents: [String: PropertyList])?, FileJudges) in
                // Only a version served: a file's own, or the log's. Nothing of the file served (no file, or the
                // layers below a version refused or unreadable) is the defaults, which are not judged.
                guard state.loaded, state.readGoodVersion else { return (nil, state.judges) }
                return ((state.stamp, state.disk), state.judges)
            }
            guard let held, !judges.isEmpty else { return }
            guard let reason = judges.verdict(on: held.contents) else { return }
            let refusal: FileJudges.RefusedVersion?? = diskLock.withLock {
                let refusal: FileJudges.RefusedVersion?? = state.change { state in
                    guard state.stamp == held.stamp, state.readGoodVersion, state.disk == held.contents else {
                        return nil
                    }
                    var refusal: FileJudges.RefusedVersion?
                    // The file's own version, read and served as it is: refused on disk, as a newer one would be.
                    if state.failure == nil, state.refused == nil, state.fallback == nil, state.onDisk == .served,
                        let version = state.served
                    {
                        refusal = FileJudges.RefusedVersion(version: version, contents: state.disk, reason: reason)
                        state.refused = refusal
                    }
                    // Looked for again with the judges (recoverFromLogIfNeeded): what is served is no longer accepted.
                    state.readGoodVersion = false
                    state.fallback = nil
                    return .some(refusal)
                }
                if refusal != nil { deliveries.begin() }
                return refusal
            }
            guard let refusal else { continue }
            if let version = refusal?.version { recordRefusal(of: version.digest, reason: reason) }
            deliver([.failed(refusedVersion(reason))])
            let path = path
            DefaultsMetrics.report { DefaultsMetrics.versionRefused(domain: DefaultsMetrics.domain(ofFile: path)) }
            recoverFromLogIfNeeded()
            return
        }
    }

    /// The error a refused version of the file is reported as.
    func refusedVersion(_ reason: String) -> DefaultsError {
        .versionRefused(path: path, domain: DefaultsMetrics.domain(ofFile: path), reason: reason)
    }

    /// Records in the change log, in the background, that this process refused the version `digest`.
    func recordRefusal(of digest: UInt64, reason: String) {
        context.recorder.submitRefusal(
            version: digest, reason: reason, path: path, lockPath: lockPath, time: clock.now, owner: owner,
            fileSystem: fileSystem)
    }

    /// When the file holds no version this process accepted (its version refused, or unreadable, and none
    /// accepted before), serves the newest version the change log gives back that the judges accept, or nothing
    /// of the file when the log has none. The log is read and the judges asked with no lock held; the fallback is
    /// taken only if the file is still the version that called for it.
    func recoverFromLogIfNeeded() {
        for _ in 0..<Self.judgedReloadAttempts {
            let need = state.read {
                state -> (stamp: FileStamp?, refused: FileJudges.RefusedVersion?, judges: FileJudges)? in
                guard state.needsFallback else { return nil }
                return (state.stamp, state.refused, state.judges)
            }
            guard let need else { return }
            let log = ChangeLog.read(at: ChangeLog.path(forDomainFile: path), on: fileSystem)
            let versions = LoggedVersions(log, known: need.refused?.contents ?? [:])
            let excluded: Set<UInt64> = need.refused?.version.map { [$0.digest] } ?? []
            let found = versions.newest(excluding: excluded) { need.judges.verdict(on: $0) == nil }
            let deltas: [KeyDelta]? = diskLock.withLock {
                let deltas: [KeyDelta]? = state.change { state in
                    guard state.stamp == need.stamp, state.needsFallback else { return nil }
                    let before = state.contents
                    state.disk = found?.contents ?? [:]
                    state.fallback = Fallback(logged: found?.number)
                    // What is served now is a version: a later failure keeps it, as it keeps any last known good.
                    state.readGoodVersion = found != nil
                    if let failure = state.failure { state.failure = failure.keepingLastKnownGood(found != nil) }
                    state.contents = Self.overlay(state.disk, state.inFlight, state.pending)
                    return state.observers.isEmpty ? [] : KeyDelta.between(before, state.contents)
                }
                if let deltas, !deltas.isEmpty { deliveries.begin() }
                return deltas
            }
            guard let deltas else { continue }
            if !deltas.isEmpty { deliver([.changed(deltas, .external)]) }
            context.announcer.changed(self)
            return
        }
    }
}
