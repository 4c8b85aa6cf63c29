import Foundation
import Synchronization

/// Undoing temporary changes (``PendingReverts``): at their expiry, by every process that has the domain open
/// (``RevertTimers``), and before the first read of a process that opens the domain after it, so that no reader
/// sees an expired value as current.
extension DomainFile {
    /// The domain's pending reverts as they are on disk.
    var pendingReverts: Result<PendingReverts, PendingReverts.Unreadable> {
        PendingReverts.read(domainFile: path, on: fileSystem)
    }

    /// The process's first look at the file (before its first load): what expired while nobody had the domain
    /// open is undone now, and the next expiry scheduled. Once per file; the revert's own load passes through.
    func undoExpiredOnFirstLook() {
        guard revertsLooked.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged else {
            return
        }
        if let next = applyExpiredReverts() { context.revertTimers.schedule(self, at: next) }
    }

    /// Schedules the file's next revert, as the pending reverts on disk say now (another process's temporary
    /// change: this process reads its version, then looks here, on its records queue).
    ///
    /// The reader announcer's first look after the open reads the file again after ``undoExpiredOnFirstLook()``:
    /// skipping it soundly would need the domain's stamp taken before the first look (an entry is written before
    /// its version's rename, so only a version already in place then is covered) — a `stat` on the cold-open path
    /// to save one `open` off it.
    func scheduleReverts() {
        guard case .success(let reverts) = pendingReverts else { return }
        reportPendingReverts(reverts.entries.count)
        if let next = reverts.entries.map(\.expiry).min() { context.revertTimers.schedule(self, at: next) }
    }

    /// Reports how many temporary changes are pending (`livedefaults_pending_reverts`) when it is not what was
    /// reported last: a domain that never had one reports nothing.
    func reportPendingReverts(_ count: Int) {
        guard reportedPendingReverts.exchange(count, ordering: .relaxed) != count else { return }
        let domain = DefaultsMetrics.domain(ofFile: path)
        DefaultsMetrics.report { DefaultsMetrics.pendingReverts(domain: domain, count: count) }
    }

    /// How many times a revert is tried against writers that keep changing its keys under it.
    static let revertAttempts = 20

    /// Undoes every temporary change whose expiry has passed, oldest first: each as one version (a transaction of
    /// the keys that still hold the value the change set, each back to its value before: a key changed again
    /// since keeps the newer value), logged with the change's reason; then its entry is dropped. Returns the next
    /// expiry still pending (a failed write's revert: ``RevertTimers/retryDelay`` from now).
    ///
    /// Safe from any number of processes at once: the first writes the revert, the others find the values
    /// already back and write nothing; a revert interrupted after its version and before its entry is dropped is
    /// found done the next time.
    @discardableResult
    func applyExpiredReverts() -> Date? {
        let reverts: PendingReverts
        switch pendingReverts {
        case .success(let read): reverts = read
        case .failure(let unreadable):
            report(
                .readFailed(
                    path: PendingReverts.path(forDomainFile: path), errno: 0,
                    message: "its pending reverts are unreadable (\(unreadable.reason)); none is applied"))
            return unreadable.mayPass ? retryTime() : nil
        }
        let now = clock.now
        var done: [PendingReverts.Entry] = []
        var retry = false
        for entry in reverts.entries.filter({ $0.expiry <= now }).sorted(by: { $0.expiry < $1.expiry }) {
            switch revert(entry) {
            case .success: done.append(entry)
            case .failure(let error) where error.code == .writeFailed:
                // Reported by the commit. A write that failed for a while (a full disk, an I/O error) is tried
                // again; one this process may not make (a read-only reader of a file others write) is left to
                // those that may, and to the next open.
                if !SystemError.isDenial(error.errno ?? 0) { retry = true }
            case .failure(let error) where error.code == .transactionConflict:
                // Other writers kept changing its keys: tried again later.
                retry = true
            case .failure(let error):
                // A validator refused it (it would refuse it again), or its keys cannot be written: dropped.
                report(error)
                done.append(entry)
            }
        }
        let left = reverts.entries.filter { !done.contains($0) }
        // Entries done but not dropped (their file could not be rewritten) are dropped by the retry, which finds
        // their keys back and writes nothing.
        if !drop(done) { retry = true }
        reportPendingReverts(left.count)
        let next = left.map(\.expiry).min()
        guard retry else { return next }
        return min(next ?? retryTime(), retryTime())
    }

    /// Tells the file's observers (the stores' error handlers) of a problem found outside the disk lock.
    private func report(_ error: DefaultsError) {
        deliveries.begin()
        deliver([.failed(error)])
    }

    /// When a revert that could not be written is tried again.
    private func retryTime() -> Date {
        clock.now.addingTimeInterval(RevertTimers.retryDelay.timeInterval)
    }

    /// Writes one expired change's revert: nothing when its keys no longer hold what it set.
    private func revert(_ entry: PendingReverts.Entry) -> Result<Void, DefaultsError> {
        let reason =
            "temporary change expired"
            + (entry.reason.map { ": \($0)" } ?? " (version \(FileVersion.hex(entry.version)))")
        do throws(DefaultsError) {
            for _ in 0..<Self.revertAttempts {
                // Recording: a revert that finds its work done writes nothing, so no commit records the version
                // it found (another process's revert, whose writer may have died before its log entry).
                reload()
                let base = contentsToWriteOver
                var writes: [String: PropertyList?] = [:]
                var expected: [String: PropertyList?] = [:]
                for (key, change) in entry.keys {
                    expected[key] = base[key]
                    if base[key] == change.set { writes[key] = change.before }
                }
                if writes.isEmpty { return .success(()) }
                let committed = ChangeLogAttribution.withReason(reason) {
                    Result { () throws(DefaultsError) in try commit(transaction: writes, expecting: expected) }
                }
                if try committed.get() { return .success(()) }
            }
            throw DefaultsError.transactionConflict(
                domain: DefaultsMetrics.domain(ofFile: path), attempts: Self.revertAttempts)
        } catch {
            return .failure(error)
        }
    }

    /// Drops `done` from the pending reverts under the file lock (other processes may have added entries or
    /// dropped these); false when the file could not be rewritten (they stay; applying them again writes nothing).
    private func drop(_ done: [PendingReverts.Entry]) -> Bool {
        guard !done.isEmpty else { return true }
        do throws(SystemError) {
            let lock = try fileSystem.lockExclusively(lockPath)
            defer { fileSystem.close(lock) }
            guard case .success(var reverts) = pendingReverts else { return false }
            let count = reverts.entries.count
            reverts.entries.removeAll { done.contains($0) }
            if reverts.entries.count != count {
                try reverts.write(domainFile: path, on: fileSystem, owner: owner, pid: context.pid)
            }
            return true
        } catch {
            return false
        }
    }
}
