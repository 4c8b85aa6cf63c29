/// Everything a process holds once, shared by every store it opens: the storage layer's share
/// (``StorageContext``: the registry of open files, the background writer, the records queue, the sweeps,
/// whether change logs are written, the file system) and the watchers.
///
/// The real process's is ``system``, every store's unless its configuration names another
/// (``Defaults/Configuration/context``). A test makes more: two contexts in one test process behave as two
/// processes on one machine — each has its own files for the same paths, its own writer and records, and they
/// meet through the file system, under the file lock. Nothing in the core reaches a process-wide value of its
/// own but through the context it was given; ``system`` is the one place the real file system and the
/// environment's watcher settings are chosen.
///
/// What starts when: making a context starts nothing (the records queue's thread runs on its first record);
/// the watcher is made when a store that watches first asks for it, which opens inotify on the watcher's own
/// thread.
package final class ProcessContext: Sendable {
    /// The running process's: the system's file system, inotify (or polling where `LIVEDEFAULTS_WATCHER` and
    /// the file system say), the exit handlers that write what is still pending.
    package static let system = ProcessContext(
        storage: .system, platform: .system,
        makeWatcher: {
            FileWatcher(
                forcePolling: Environment.value("LIVEDEFAULTS_WATCHER") == "poll", pollInterval: nil,
                fileSystem: StorageContext.system.fileSystem,
                remoteFileSystem: RemoteFileSystem.detector(
                    setting: Environment.value("LIVEDEFAULTS_WATCHER"), on: StorageContext.system.fileSystem))
        })

    let storage: StorageContext
    /// Where the context's watchers get their events and run their work.
    private let platform: WatcherPlatform
    private let makeWatcher: @Sendable () -> FileWatcher
    private let madeWatcher = Lock<FileWatcher?>(nil)
    /// The polling watchers made for ``Defaults/Configuration/Watching/polling(interval:)``, by interval.
    private let pollingWatchers = Lock([Duration: FileWatcher]())

    private init(
        storage: StorageContext, platform: WatcherPlatform, makeWatcher: @escaping @Sendable () -> FileWatcher
    ) {
        self.storage = storage
        self.platform = platform
        self.makeWatcher = makeWatcher
    }

    /// A context of its own over `fileSystem`: a process of a test, on `clock` (its stores' unless their
    /// configuration names another), named `pid` in its records and its temporaries' names when given (else as
    /// the test process; see ``ProcessIdentity``), on a machine whose running processes `processes` tells (the
    /// system's unless given: then `pid` must name a process that runs, or what it leaves is taken for a dead
    /// one's), with the past bugs `reintroduced` (a swarm test's proof that it finds them). Its watcher gets its
    /// events from `platform` and runs its work there (a simulated machine's); without
    /// one, it polls (inotify sees only the system's files) on `clock` every `pollInterval`, on a thread of its own.
    package convenience init(
        fileSystem: any DefaultsFileSystem, clock: any DefaultsClock = SystemDefaultsClock.shared,
        pollInterval: Duration = .milliseconds(100), pid: Int32? = nil,
        processes: any ProcessTable = SystemProcessTable(), platform: WatcherPlatform? = nil,
        reintroducing reintroduced: Set<ReintroducedBug> = []
    ) {
        let identity = pid.map { pid in
            var identity = ProcessIdentity.current
            identity.pid = pid
            identity.start = processes.startTime(of: pid) ?? 0
            return identity
        }
        let chosen = platform ?? .system
        self.init(
            storage: StorageContext(
                fileSystem: fileSystem, clock: clock, identity: identity, processes: processes,
                reintroducing: reintroduced),
            platform: chosen,
            makeWatcher: {
                FileWatcher(
                    forcePolling: platform == nil && fileSystem !== StorageContext.system.fileSystem,
                    pollInterval: pollInterval, clock: clock, fileSystem: fileSystem,
                    remoteFileSystem: RemoteFileSystem.detector(setting: nil, on: fileSystem), platform: chosen)
            })
    }

    /// The file system stores of this context are on unless their configuration names another.
    package var fileSystem: any DefaultsFileSystem { storage.fileSystem }
    /// The clock stores of this context follow unless their configuration names another.
    package var clock: any DefaultsClock { storage.clock }

    /// The context's watcher (``Defaults/Configuration/Watching/automatic``), made on first use.
    package var watcher: FileWatcher {
        // Made outside the lock: it starts a thread.
        madeWatcher.published(orMake: makeWatcher)
    }

    /// The context's watcher for ``Defaults/Configuration/Watching/polling(interval:)`` at `interval` (at least a
    /// millisecond): one per interval, made on first use and kept.
    func pollingWatcher(interval: Duration) -> FileWatcher {
        let interval = max(.milliseconds(1), interval)
        let fileSystem = storage.fileSystem
        return pollingWatchers.withLock { watchers in
            if let watcher = watchers[interval] { return watcher }
            let watcher = FileWatcher(
                forcePolling: true, pollInterval: interval, clock: storage.clock, fileSystem: fileSystem,
                remoteFileSystem: RemoteFileSystem.detector(setting: nil, on: fileSystem), platform: platform)
            watchers[interval] = watcher
            return watcher
        }
    }

    /// Whether the context writes change logs (on unless a benchmark turns it off to measure what the log costs
    /// a write).
    package var changeLogIsEnabled: Bool {
        get { storage.changeLogIsEnabled }
        set { storage.changeLogIsEnabled = newValue }
    }

    /// Waits until the records made in the background so far are written: the change log's entries of versions
    /// read, and the readers' announcements (which start on the watchers' threads: those run what they were
    /// handed first).
    package func waitForRecords() {
        let watchers = (madeWatcher.withLock { $0 }.map { [$0] } ?? []) + pollingWatchers.withLock { Array($0.values) }
        for watcher in watchers { watcher.settle() }
        storage.waitForRecords()
    }
}

extension SymlinkChain {
    /// Follows `path` one component at a time as the kernel would, recording every link met.
    ///
    /// A component that does not exist ends the walk: the rest of the path is appended as it is, and
    /// ``target`` names a file that does not exist (a link that points nowhere). A relative path is taken
    /// as it is, with no link recorded (the watcher watches it as given). On the real process's file system.
    package static func resolve(_ path: String) -> SymlinkChain {
        resolve(path, on: ProcessContext.system.fileSystem)
    }
}
