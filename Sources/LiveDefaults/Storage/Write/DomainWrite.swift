import Foundation
import Synchronization

/// One write of a domain file: the write protocol (Docs/Reliability.md, Docs/Architecture.md "A write") as its
/// steps, in order. ``DomainFile`` makes one for a commit, runs ``attempt(_:)`` until it answers (pausing
/// between attempts without the lock), and adopts and delivers what it answers.
///
/// 1. take the file lock (making the directory when it is missing);
/// 2. find where the write goes (through symbolic links) and, once per directory and process, sweep the
///    temporary files killed writers left (``TemporarySweeps``);
/// 3. read and verify the current version (``CurrentVersion``);
/// 4. a transaction's check against it;
/// 5. keep an unreadable file aside;
/// 6. record the version written over in the change log, when no LiveDefaults writer did (``WriteLogging``);
/// 7. merge the edits onto it and encode; a temporary change's entry in the pending reverts (``PendingReverts``);
/// 8. announce the new version, replace the file (or remove it), confirm the version in the log.
struct DomainWrite {
    let path: String
    let lockPath: String
    let fileSystem: any DefaultsFileSystem
    let owner: (UserID, GroupID)?
    let clock: any DefaultsClock
    let edits: DomainEdits
    /// What this process holds of the file.
    let held: CurrentVersion.Held
    /// A transaction's check: given the file as it is now with this process's earlier edits on top, false when
    /// a key it read has changed (nothing is written).
    let check: (([String: PropertyList]) -> Bool)?
    /// The version this process last logged as its own write (``DomainFile/State/loggedVersion``).
    let loggedVersion: UInt64?
    /// Where the process swept dead writers' temporaries.
    let sweeps: TemporarySweeps
    /// Whether the process writes change logs (``StorageContext/changeLogIsEnabled``).
    let logsChanges: Bool
    /// Who writes, as the change log, a kept copy's name and a temporary's name say (``StorageContext/identity``).
    let identity: ProcessIdentity
    /// Which processes run: a dead writer's temporaries are swept (``StorageContext/processes``).
    let processes: any ProcessTable
    /// Whether the change log's intent follows the rename (``ReintroducedBug/logIntentAfterRename``; a test's).
    var intentAfterRename = false
    /// A temporary transaction's part: its entry is written before its version.
    var temporary: TemporaryChange?

    /// What an attempt came to.
    enum Attempt {
        case done(WriteOutcome)
        /// The file reads as unreadable in a way a writer in progress explains: nothing was done; try again
        /// after a pause, without the lock.
        case unsettled
    }

    /// Attempt `number` (from 1; the last one, ``VersionReading/settleAttempts``, always answers): the protocol,
    /// one step per line. A step that fails ends the attempt with its error; nothing before it changed the file.
    func attempt(_ number: Int) -> Attempt {
        do throws(StepFailure) {
            let lock = try takeLock()
            defer { fileSystem.close(lock) }
            let destination = try findDestination()
            let current = try findCurrentVersion(attempt: number)
            if let check, !check(current.contents) { return .done(.conflict) }
            let keptAside = try keepAsideIfUnreadable(current, at: destination)
            var logging = recordWrittenOver(current)
            var merged = try merge(onto: current)
            try recordPendingRevert(of: merged, over: current)
            let written = try replace(destination, with: &merged, over: current, logging: &logging)
            return .done(
                .written(
                    WrittenVersion(
                        contents: merged.contents, version: written, format: merged.format, keptAside: keptAside,
                        reread: current.reread,
                        logged: confirm(
                            merged.entry, logging, giving: merged.contents, over: current.contents,
                            current.logVersion ?? 0))))
        } catch {
            switch error {
            case .unsettled: return .unsettled
            case .failed(let error): return .done(.failed(error))
            }
        }
    }

    /// Why a step ended an attempt.
    enum StepFailure: Error {
        /// The file reads as a writer in progress would leave it: try again after a pause, without the lock.
        case unsettled
        case failed(DefaultsError)
    }

    /// A system call's failure, as the write's error.
    private func failed(_ error: SystemError) -> StepFailure {
        .failed(.writeFailed(path: path, errno: error.errno, message: error.message))
    }

    /// 1. The lock. The directory is made only when the lock file cannot be opened for want of it: one system
    /// call less on every write.
    private func takeLock() throws(StepFailure) -> Int32 {
        do throws(SystemError) {
            do throws(SystemError) {
                return try fileSystem.lockExclusively(lockPath)
            } catch  where error.isNoSuchFile {
                try fileSystem.createDirectories(PathComponents.directory(of: path))
                return try fileSystem.lockExclusively(lockPath)
            }
        } catch {
            throw failed(error)
        }
    }

    /// 2. Where the write goes. A domain file that is a symbolic link (into a Kubernetes volume, a dotfiles
    /// repository) is written through: the file it resolves to is replaced, beside itself, and the link stays a
    /// link. Replacing the link would quietly cut the domain off from what it points to; a target in a read-only
    /// volume makes the write fail and be reported instead. One lstat for a plain file. The directory is swept of
    /// dead writers' temporaries once per process.
    private func findDestination() throws(StepFailure) -> String {
        let destination: String
        do throws(SystemError) { destination = try Self.destination(of: path, on: fileSystem) } catch {
            throw failed(error)
        }
        sweeps.sweepOnce(PathComponents.directory(of: destination), on: fileSystem, processes: processes)
        return destination
    }

    /// 3. The current version (``CurrentVersion``).
    private func findCurrentVersion(attempt number: Int) throws(StepFailure) -> CurrentVersion {
        switch CurrentVersion.find(path, on: fileSystem, held: held, attempt: number) {
        case .version(let found): return found
        case .unsettled: throw .unsettled
        case .failed(let error): throw .failed(error)
        }
    }

    /// 5. Never overwrite what cannot be read: an unreadable file is kept aside first (after the check, step 4:
    /// a corrupt file is kept aside only by a write that goes on).
    private func keepAsideIfUnreadable(_ current: CurrentVersion, at destination: String) throws(StepFailure)
        -> DefaultsError?
    {
        guard let reason = current.corrupt else { return nil }
        do throws(SystemError) {
            let kept = try CurrentVersion.keepAside(
                destination, on: fileSystem, owner: owner, time: clock.now, pid: identity.pid)
            return .corruptFile(path: path, reason, keptAs: kept)
        } catch {
            throw failed(error)
        }
    }

    /// 6. The version on disk, if no LiveDefaults writer made it and nobody noticed, is recorded before this one
    /// — unless it is the very file this process wrote and logged last (not replaced since: the same stamp),
    /// which the log holds; then the look at the log's end is saved. Nil when the process writes no log.
    private func recordWrittenOver(_ current: CurrentVersion) -> WriteLogging? {
        guard logsChanges else { return nil }
        let log = WriteLogging(
            domainFile: path, on: fileSystem, owner: owner, time: clock.now, writer: identity.writer)
        if let version = current.logVersion, current.reread || version != loggedVersion {
            log.recordWrittenOver(
                version: version, contents: current.contents, held: current.reread ? held.forChangeLog : nil)
        }
        return log
    }

    /// The new version, merged and encoded (step 7).
    private struct Merged {
        var contents: [String: PropertyList]
        var format: PropertyList.Format
        /// The encoded file; nil when the edits leave nothing of a file a replacement emptied (it is removed).
        var data: Data?
        /// Its change-log entry, once announced (step 8).
        var entry: WriteLogging.Announced?
    }

    /// 7. Merge the edits onto the current version and encode it in the file's format (old-style files are
    /// written as XML).
    private func merge(onto current: CurrentVersion) throws(StepFailure) -> Merged {
        let contents = edits.applied(to: current.contents)
        let format = current.format == .openStep ? .xml : current.format
        if contents.isEmpty && edits.replacement != nil {
            return Merged(contents: [:], format: format, data: nil)
        }
        do throws(PropertyListError) {
            return Merged(
                contents: contents, format: format, data: try PropertyList.dictionary(contents).encoded(as: format))
        } catch {
            // A value the file's format cannot hold (an XML file and a date beyond year 9999): the file keeps its
            // last good version rather than losing the value or every other key.
            throw .failed(.unrepresentableValue(path: path, error))
        }
    }

    /// 7's end. A temporary change's entry, before its version: the keys the transaction changes, each with its
    /// value before (this process's earlier edits, written in the same version, included) and the value it sets.
    /// An entry that cannot be written fails the write: a temporary change without its revert must not land.
    private func recordPendingRevert(of merged: Merged, over current: CurrentVersion) throws(StepFailure) {
        guard let temporary else { return }
        var changes: [String: PendingReverts.Entry.Change] = [:]
        for key in temporary.keys {
            let before = temporary.earlier.value(forKey: key, over: current.contents[key])
            let set = merged.contents[key]
            if before != set { changes[key] = PendingReverts.Entry.Change(before: before, set: set) }
        }
        guard !changes.isEmpty else { return }
        let file = PendingReverts.path(forDomainFile: path)
        var reverts: PendingReverts
        switch PendingReverts.read(domainFile: path, on: fileSystem) {
        case .success(let read): reverts = read
        case .failure(let unreadable):
            throw .failed(
                .writeFailed(
                    path: file, errno: 0,
                    message: "its pending reverts are unreadable (\(unreadable.reason)); move the file away"))
        }
        reverts.entries.append(
            PendingReverts.Entry(
                version: merged.data.map(FileVersion.digest(of:)) ?? 0, made: clock.now, expiry: temporary.expiry,
                reason: ChangeLogAttribution.recordedReason(temporary.reason), keys: changes))
        do throws(SystemError) {
            try reverts.write(domainFile: path, on: fileSystem, owner: owner, pid: identity.pid)
        } catch {
            throw .failed(.writeFailed(path: file, errno: error.errno, message: error.message))
        }
    }

    /// 8. Announce the new version in the change log, then replace the file (or remove it); the entry is
    /// confirmed by the caller once the version landed. Returns the version written, nil for a removal.
    private func replace(
        _ destination: String, with merged: inout Merged, over current: CurrentVersion, logging: inout WriteLogging?
    ) throws(StepFailure) -> FileVersion? {
        let digest = merged.data.map(FileVersion.digest(of:)) ?? 0
        if !intentAfterRename {
            merged.entry = logging?.announce(
                edits, over: current.contents, baseVersion: current.logVersion ?? 0, giving: merged.contents,
                version: digest)
        }
        defer {
            if intentAfterRename {
                merged.entry = logging?.announce(
                    edits, over: current.contents, baseVersion: current.logVersion ?? 0, giving: merged.contents,
                    version: digest)
            }
        }
        do throws(SystemError) {
            guard let data = merged.data else {
                try fileSystem.remove(destination, flush: true)
                return nil
            }
            let stamp = try fileSystem.replaceAtomically(destination, with: data, owner: owner, pid: identity.pid)
            return FileVersion(stamp: stamp, digest: digest)
        } catch {
            throw failed(error)
        }
    }

    /// The entry of a version that landed, appended (step 8's end).
    private func confirm(
        _ entry: WriteLogging.Announced?, _ logging: WriteLogging?, giving contents: [String: PropertyList],
        over base: [String: PropertyList], _ baseVersion: UInt64
    ) -> WrittenVersion.LogRecord {
        guard let entry, let logging else { return .unchanged }
        return logging.confirm(entry, giving: contents, over: base, baseVersion: baseVersion)
            ? .logged(entry.version) : .failed
    }

    /// Where a write of `path` goes: the path itself, or, when it is a symbolic link that resolves, the file
    /// it resolves to (which may not exist yet). Throws when a link on the way cannot be looked at or read: the
    /// write fails (and is retried) rather than replace the link with a file, which would cut the domain off
    /// from what it points to.
    static func destination(of path: String, on fileSystem: any DefaultsFileSystem) throws(SystemError) -> String {
        guard try fileSystem.checkedIsSymbolicLink(path) else { return path }
        let chain = SymlinkChain.resolve(path, on: fileSystem)
        if let failed = chain.failedErrno { throw SystemError(errno: failed, operation: "follow the symbolic link") }
        return chain.problem == nil ? chain.target : path
    }
}

/// What one write of a domain file came to.
enum WriteOutcome {
    /// The version written (or the file removed).
    case written(WrittenVersion)
    /// A transaction's check failed on the file as it is now: nothing was written.
    case conflict
    /// Nothing was written (or the file was left as it was): why.
    case failed(DefaultsError)
}

/// A version a write put on disk, which the file adopts as the one it holds.
struct WrittenVersion {
    var contents: [String: PropertyList]
    /// Nil: the file was removed.
    var version: FileVersion?
    var format: PropertyList.Format
    /// The unreadable file found there, kept aside.
    var keptAside: DefaultsError?
    /// Whether the file had changed since this process last read or wrote it (it was read again).
    var reread: Bool
    var logged: LogRecord

    /// What the change log holds of the version.
    enum LogRecord {
        /// No key changed: nothing logged, and what the process knows of the log stays as it was.
        case unchanged
        /// Its entry was appended.
        case logged(UInt64)
        /// Its entry could not be appended.
        case failed
    }
}
