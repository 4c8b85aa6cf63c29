import Dispatch
import Foundation
import Synchronization

/// Records in a domain file's change log the versions this process read that no LiveDefaults writer logged (an
/// editor, a script, Foundation's in-place write), after the file's observers were told of them and away from
/// the reading thread.
///
/// Why apart from the read: recording takes the domain's file lock, reads the log's end and appends a line.
/// Done on the watcher's thread before the observers heard of the change, that work stood between another
/// program's write and every observer of it, and made a reader a writer. A read never writes on its way: it
/// hands the version here once its observers have it (``DomainFile/reload(verifyContents:deferringRemoval:recordingExternal:)``).
///
/// One serial queue for the process (its context's records queue, ``StorageContext``). Requests for one file coalesce to the newest: an older version that was
/// replaced before it was recorded would be found replaced by the stamp check anyway. A version is recorded
/// only while it is still the file's, with the lock taken only when free (a writer that holds it records the
/// version it writes over itself), so nothing here ever waits for another process.
final class ExternalVersionRecorder: Sendable {
    /// - Parameters:
    ///   - queue: The queue of the records a process writes in the background: these versions, and the readers'
    ///     announcements (``ReaderAnnouncer``). One queue for both: one thread at a time, in order.
    ///   - recordsAtExit: Whether the first submission installs the exit handler (the real process's recorder).
    ///   - clock: What a refusal's record pauses on between its tries of the lock.
    ///   - identity: Who reads, as a refusal's line names it (asked when a refusal is recorded).
    init(
        queue: RecordsQueue, recordsAtExit: Bool, clock: any DefaultsClock,
        identity: @escaping @Sendable () -> ProcessIdentity
    ) {
        self.queue = queue
        exitHandlerInstalled = Atomic(!recordsAtExit)
        self.clock = clock
        self.identity = identity
    }

    /// A version read, and what recording it needs.
    struct Request: Sendable {
        /// The domain file.
        var path: String
        var lockPath: String
        /// The version read (nil: the file is gone).
        var version: FileVersion?
        /// The version's contents, whole or as the keys an incremental read changed (``ChangeLog/ReadVersion``).
        var contents: ChangeLog.ReadVersion
        /// The version the process held before (for the old values), when it held one.
        var held: ChangeLog.Held?
        /// Read by the process's first look at the file: a domain without a log is not started then.
        var firstLook: Bool
        var time: Date
        var owner: (UserID, GroupID)?
        /// The file system the file is on.
        var fileSystem: any DefaultsFileSystem

        /// What tells the file from every other: its path, and its file system when it is not the system's
        /// (in-memory file systems of tests reuse paths).
        var key: String { fileSystem.key(forPath: path) }
    }

    /// The requests not yet recorded, by file, and those a first look kept that no drain on the queue will take
    /// (``submit(_:)``).
    private struct Pending {
        var requests: [String: Request] = [:]
        var unscheduled: Set<String> = []
    }

    private let pending = Lock(Pending())
    private let exitHandlerInstalled: Atomic<Bool>
    private let queue: RecordsQueue
    private let clock: any DefaultsClock
    private let identity: @Sendable () -> ProcessIdentity

    /// When the last version was recorded (the queue's nanoseconds, 0: none yet): versions of a burst are
    /// recorded once, as the newest, later (``RecordPacing``).
    private let lastRecorded = Atomic<UInt64>(0)

    /// Records `request`'s version soon, on the recorder's queue.
    ///
    /// The first submission installs an exit handler that records what is still pending: a program that ends
    /// right after it saw a version (`defaults watch` stopped by SIGTERM, a server shutting down) would otherwise
    /// leave it to whoever opens the domain next, who no longer knows the values before it.
    ///
    /// A first look's request (a store opening the domain) is kept, not scheduled: scheduling starts the records
    /// queue's threads, on the opening thread's path. A watching store hands them to the queue from its watcher's
    /// thread after the open (``scheduleFirstLooks()``); the next request of the file, or the exit handler,
    /// takes one otherwise.
    func submit(_ request: Request) {
        let key = request.key
        if !exitHandlerInstalled.exchange(true, ordering: .relaxed) {
            atexit { StorageContext.system.recorder.waitUntilIdle() }
        }
        let mustSchedule = pending.withLock { pending -> Bool in
            guard let older = pending.requests[key] else {
                pending.requests[key] = request
                if request.firstLook { pending.unscheduled.insert(key) }
                return !request.firstLook
            }
            // A burst: the newest version, compared with the version held before the burst.
            var merged = request
            let olderVersion = FileVersion.logNumber(older.version)
            merged.held = ChangeLog.Held.combining(older.held, olderVersion: olderVersion, request.held)
            // Versions that follow one another: the newer's changed keys on top of the older's.
            if request.held?.version == olderVersion { merged.contents = older.contents.followed(by: request.contents) }
            pending.requests[key] = merged
            // A request a first look kept has no drain on the queue yet: a later version's request schedules one.
            return !request.firstLook && pending.unscheduled.remove(key) != nil
        }
        if mustSchedule { schedule(key) }
    }

    /// Hands the requests first looks kept (``submit(_:)``) to the queue: called after a store's open, off the
    /// opening thread.
    func scheduleFirstLooks() {
        let keys = pending.withLock { pending in
            defer { pending.unscheduled.removeAll() }
            return pending.unscheduled
        }
        for key in keys { schedule(key) }
    }

    /// How many first looks' requests wait for ``scheduleFirstLooks()`` (for tests).
    var keptFirstLooks: Int {
        pending.withLock { $0.unscheduled.count }
    }

    /// Records the request of `key` when it is due (``RecordPacing``), on the recorder's queue.
    private func schedule(_ key: String) {
        let last = lastRecorded.load(ordering: .relaxed)
        let queue = queue
        let due = RecordPacing.due(now: queue.now(), lastWritten: last == 0 ? nil : last)
        queue.run(at: due) {
            guard let request = self.pending.withLock({ $0.requests.removeValue(forKey: key) }) else { return }
            Self.record(request)
            self.lastRecorded.store(max(1, queue.now()), ordering: .relaxed)
        }
    }

    /// Records, on the recorder's queue, that this process refused `version` of the domain file `path` for
    /// `reason` (``ChangeLog/appendRefusal(_:at:owner:on:)``): who refused what, beside the versions, for
    /// `defaults log`. Taken under the domain's file lock when it is free within a few tries (a rewrite of the log
    /// by a writer would otherwise drop the line), else appended without it: a record, never a wait on another
    /// process.
    func submitRefusal(
        version: UInt64, reason: String, path: String, lockPath: String, time: Date, owner: (UserID, GroupID)?,
        fileSystem: any DefaultsFileSystem
    ) {
        let refusal = ChangeLog.Refusal(time: time, version: version, reason: reason, reader: identity().writer)
        let log = ChangeLog.path(forDomainFile: path)
        let clock = clock
        queue.async {
            var lock: Int32?
            for attempt in 0..<Self.refusalLockAttempts {
                lock = fileSystem.lockExclusivelyIfFree(lockPath)
                if lock != nil || attempt == Self.refusalLockAttempts - 1 { break }
                clock.pause(for: .milliseconds(1))
            }
            ChangeLog.appendRefusal(refusal, at: log, owner: owner, on: fileSystem)
            if let lock { fileSystem.close(lock) }
        }
    }

    /// How many times a refusal's record tries the domain's file lock, a millisecond apart.
    static let refusalLockAttempts = 20

    /// Records every version submitted so far now, on the recorder's queue, and waits: each is then recorded,
    /// or found recorded, replaced or locked by a writer (who then records it). What
    /// ``Defaults/loggedChanges(inDomain:layer:key:limit:)`` waits for, so that a program that read a version
    /// sees it in the log it asks for next.
    func waitUntilIdle() {
        queue.sync {
            let requests = pending.withLock { pending in
                defer { pending = Pending() }
                return Array(pending.requests.values)
            }
            for request in requests { Self.record(request) }
        }
    }

    /// Records one version, unless the log's last line records it already (the cheap look at the log's end)
    /// or the file is no longer that version.
    static func record(_ request: Request) {
        let log = ChangeLog.path(forDomainFile: request.path)
        // A look without the lock, to skip taking it; recordExternal looks again under it.
        let number = FileVersion.logNumber(request.version)
        switch ChangeLog.tail(at: log, on: request.fileSystem) {
        case .recorded(number): return
        case .absent where request.firstLook: return
        default: break
        }
        let fileSystem = request.fileSystem
        guard let lock = fileSystem.lockExclusivelyIfFree(request.lockPath) else { return }
        defer { fileSystem.close(lock) }
        guard let current = try? fileSystem.stamp(atPath: request.path), current == request.version?.stamp else {
            return
        }
        ChangeLog.recordExternal(
            version: number, read: request.contents, whole: { Self.wholeVersion(of: request) }, held: request.held,
            at: log, time: request.time, owner: request.owner, on: fileSystem)
    }

    /// The whole version `request` names, read again from its file (under the lock), when the request kept only
    /// the keys an incremental read changed; nil when the file no longer holds that version or is no dictionary.
    static func wholeVersion(of request: Request) -> [String: PropertyList]? {
        guard let version = request.version,
            let file = try? request.fileSystem.read(atPath: request.path),
            FileVersion.digest(of: file.data) == version.digest,
            case .dictionary(let contents) = try? PropertyList.decode(file.data).value
        else { return nil }
        return contents
    }
}
