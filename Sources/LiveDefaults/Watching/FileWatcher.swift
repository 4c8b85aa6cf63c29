import Dispatch
import Foundation
import Logging
import Synchronization

/// Watches the directories of the files that stores registered and tells them when another process (or a
/// person with an editor) may have changed one. By default one per process (its context's), used by every store;
/// a store can be given another one (``Defaults/Configuration/watcher``), as tests do.
///
/// The watcher knows paths, not what lives in them: whoever registers a path (a store, for each file of its
/// domains) passes what to do when it may have changed, and the logger that hears about trouble watching it.
/// It never calls into the storage layer itself.
///
/// It uses the kernel's inotify API directly (see `Docs/Architecture.md` for why not libinotifytools): one
/// descriptor opened with `IN_CLOEXEC | IN_NONBLOCK`, read by one thread of the watcher's own
/// (``WatcherThread``, which also runs its other work in order), and a watch per *directory*, since writers
/// replace files by rename.
///
/// - A registrant is told on `IN_CLOSE_WRITE` (an in-place writer such as Foundation has finished; `IN_MODIFY`
///   would fire on the empty file right after a truncate), `IN_MOVED_TO` (temp file + rename), and
///   `IN_DELETE` / `IN_MOVED_FROM` (the file is gone, so are its keys). Reloading is cheap when nothing
///   changed: a store's handler reloads the file, which compares inode, size and modification time first.
/// - A directory that does not exist is awaited through a watch on its nearest existing ancestor; when a
///   watched directory is deleted or moved, its files are reloaded (they are gone) and it is awaited again.
/// - `IN_Q_OVERFLOW` (the kernel dropped events) rescans every file.
/// - **Symbolic links**: a path that is a link, or lies below a linked directory, is watched along its whole
///   chain (``SymlinkChain``): every link on the way and the file it resolves to. A swap anywhere in the
///   chain — a Kubernetes volume renaming `..data`, a `ln -sfn` — is a change, and the chain is worked out
///   again. Plain paths, the ordinary case, keep a single directory watch and no chain at all.
/// - When inotify is unavailable (instance or watch limit reached, a file system without inotify support,
///   or `LIVEDEFAULTS_WATCHER=poll` in the environment), the affected directories are polled instead, every
///   ``pollInterval``, with a warning in the log of the store that registered them.
/// - A directory on a network or user-space file system (NFS, SMB/CIFS, FUSE, 9p, Ceph…: ``RemoteFileSystem``),
///   where inotify cannot see other machines' writes, is polled as well, with one notice saying why;
///   `LIVEDEFAULTS_WATCHER=inotify` keeps inotify there.
package final class FileWatcher: Sendable {
    /// How often polled directories are checked: `LIVEDEFAULTS_POLL_INTERVAL_MS`, else 100 ms.
    static var pollIntervalFromEnvironment: Duration {
        let milliseconds = Environment.value("LIVEDEFAULTS_POLL_INTERVAL_MS").flatMap { Int($0) }
        return .milliseconds(max(1, milliseconds ?? 100))
    }

    /// What a registrant hears: its file may have changed.
    struct Event: Sendable {
        /// Whether an in-place writer closed the file: its stamp may not have changed, so the contents must
        /// be compared (a file renamed into place always has a new inode).
        var writtenInPlace: Bool
    }

    /// One registrant's interest in one path. The owner is held weakly (a file nobody uses is not watched,
    /// even if an `unwatch` went missing); `count` counts the registrant's `watch` calls not yet undone.
    struct Registration {
        /// The owner's identity while it lives (a dead owner's may be reused: look only among live ones).
        let id: ObjectIdentifier
        weak var owner: AnyObject?
        var count: Int
        let onChange: @Sendable (Event) -> Void
        /// Asked for only when there is something to log (see ``Defaults/Configuration/logger``).
        let logger: @Sendable () -> Logger
    }

    /// One ``watch(_:owner:logger:onChange:)`` call, queued: a node of an ``IntrusiveList`` (not an array:
    /// see there).
    final class Request: IntrusiveListNode {
        let path: String
        let registration: Registration
        var next: Request?
        init(path: String, registration: Registration) {
            self.path = path
            self.registration = registration
        }
    }

    struct State {
        /// Registrations by path, grouped by directory: a path's registrants in an array, a handful at most
        /// (a dictionary keyed by `ObjectIdentifier` cost a fresh process's first open dearly: the
        /// runtime instantiating its storage type, with a scan of every loaded conformance for `Hashable`).
        var files: [String: [String: [Registration]]] = [:]
        /// Watch descriptor → watched path (a files' directory, or an ancestor awaiting one).
        var watchedPaths: [Int32: String] = [:]
        var watchDescriptors: [String: Int32] = [:]
        /// Directories whose files are polled instead of watched, and why.
        var polledDirectories: [String: String] = [:]
        var pollingStarted = false
        var warnedAboutPolling = false
        var notedRemoteFileSystem = false
        /// The symbolic-link chains of registered paths that are not plain.
        var links = WatchedLinks()
        /// ``watch(_:owner:logger:onChange:)`` calls not yet applied to `files`, in order. A registering thread
        /// (a store's open, a path for each of twelve layers) only appends here; the watcher's thread, or any
        /// reader of the state (``locked(_:)``), applies them. That keeps the nested dictionaries, the set of paths to resolve and
        /// their first use in a fresh process (the runtime instantiating their types, their code's first
        /// run) off the opening thread.
        var requests = IntrusiveList<Request>()

        /// Applies the queued registrations.
        mutating func applyRequests() {
            for request in requests.takeAll() {
                let path = request.path
                let directory = FileWatcher.directory(ofRegistered: path)
                var registrations = (files[directory]?[path] ?? []).filter { $0.owner != nil }
                if let index = registrations.firstIndex(where: { $0.id == request.registration.id }) {
                    registrations[index].count += 1
                } else {
                    registrations.append(request.registration)
                    // Every name of a directory is no file: it has no chain of links to follow.
                    if !FileWatcher.isEveryName(path) { links.unresolved.insert(path) }
                }
                files[directory, default: [:]][path] = registrations
            }
        }
        /// How many times the kernel's queue overflowed (for tests and diagnostics).
        var overflows = 0
        /// Whether a test suspended the watcher: the reading source and polling (``suspendForTesting()``).
        var suspended = false
    }

    /// The inotify descriptor, opened by the thread before its first job (-1 before, and without inotify).
    /// Read by the jobs, on the thread.
    var descriptor: Int32 { thread.descriptor }
    /// Where the watcher's work runs, one job at a time, and events are read; it opens and owns `descriptor`.
    let thread: any WatcherRunLoop
    /// Where the events come from: inotify, unless the watcher's context is a simulated process's.
    let events: any FileEventSource
    /// Times the polling fallback (and nothing else).
    let clock: any DefaultsClock
    let state = Lock(State())
    /// Whether a reconciliation is queued and has not started: registrations made meanwhile ride along with
    /// it (a store's open registers the paths of its twelve layers; each used to queue a reconciliation of
    /// its own).
    let reconcileQueued = Atomic<Bool>(false)
    /// How many ``holdingReconciliation(_:)`` calls are under way, and whether a reconciliation was asked for
    /// meanwhile.
    let holds = Atomic<Int>(0)
    let heldReconcile = Atomic<Bool>(false)
    /// How often directories that cannot be watched with inotify are checked: at least a millisecond.
    /// Worked out when asked (polling starts, a test): `Duration`'s arithmetic is code of the standard
    /// library that a process's first open would otherwise page in for nothing.
    package var pollInterval: Duration {
        max(.milliseconds(1), requestedPollInterval ?? Self.pollIntervalFromEnvironment)
    }
    /// The interval given, or nil for `LIVEDEFAULTS_POLL_INTERVAL_MS` (else 100 ms).
    let requestedPollInterval: Duration?
    /// The most inotify watches this watcher adds before it polls instead (tests simulate the limit).
    let watchLimit: Int
    /// Why inotify is not used at all, when it is not (known once the thread has tried to open it).
    var inotifyUnavailable: String? { unavailable.withLock { $0 } }
    let unavailable: Lock<String?>
    /// The network or user-space file system holding a directory (nil for a local one): such directories are
    /// polled. Tests pass a stand-in.
    let remoteFileSystem: @Sendable (String) -> String?
    /// The file system whose directories are watched: what a batch of events is checked against (is the path a
    /// symbolic link now, does it still exist).
    let fileSystem: any DefaultsFileSystem

    /// A watcher; `forcePolling` skips inotify altogether. `watchLimit` simulates the kernel's watch limit;
    /// `remoteFileSystem` tells which directories lie on a file system inotify cannot see other hosts' writes
    /// on (``RemoteFileSystem/name(ofFileSystemAt:on:)`` unless a test stands in for it). A nil `pollInterval`
    /// is the environment's (the real process's watcher). `platform`: where events come from and the work runs
    /// (inotify and a thread of the watcher's own, unless its context is a simulated process's).
    init(
        forcePolling: Bool = false, pollInterval: Duration? = .milliseconds(100),
        clock: any DefaultsClock = SystemDefaultsClock.shared, watchLimit: Int = .max,
        fileSystem: any DefaultsFileSystem, remoteFileSystem: @escaping @Sendable (String) -> String?,
        platform: WatcherPlatform = .system
    ) {
        events = platform.events
        requestedPollInterval = pollInterval
        self.clock = clock
        self.fileSystem = fileSystem
        self.watchLimit = watchLimit
        self.remoteFileSystem = remoteFileSystem
        // Without inotify, why is reported (once) by the first store whose directory is polled, to its logger.
        if forcePolling {
            unavailable = Lock("polling chosen (LIVEDEFAULTS_WATCHER=poll or polling: true)")
            thread = platform.makeRunLoop(nil)
        } else {
            // inotify is opened on the watcher's thread, before the first registration takes effect there: the
            // registering thread (a store's open) makes no system call for it.
            let unavailable = Lock<String?>(nil)
            self.unavailable = unavailable
            let events = platform.events
            thread = platform.makeRunLoop({
                switch events.open() {
                case .success(let opened):
                    return opened
                case .failure(let error):
                    let reason =
                        Inotify.isCompiledIn ? systemErrorText(error.errno) : "this build has no inotify: polling only"
                    unavailable.withLock { $0 = reason }
                    return -1
                }
            })
            thread.setReadHandler { [weak self] in self?.readEvents() }
        }
    }

    deinit {
        thread.stop()
    }

    var overflowCount: Int { locked { $0.overflows } }

    /// The directories being polled (inotify unavailable for them).
    var polledDirectories: Set<String> { locked { Set($0.polledDirectories.keys) } }

    /// How the watcher follows a path registered with it: inotify or polling (and why), and the links it
    /// follows. Registrations take effect on the watcher's thread: call it after the store that registered
    /// the path has opened, as `defaults doctor` does.
    func status(ofPath path: String) -> FileWatchStatus {
        settle()
        let directory = Self.directory(ofRegistered: path)
        let withoutInotify = descriptor < 0 ? inotifyUnavailable : nil
        return locked { state in
            let reason = state.polledDirectories[directory] ?? withoutInotify
            return FileWatchStatus(
                isPolled: reason != nil, pollReason: reason, links: state.links.files[path]?.links ?? [])
        }
    }

    /// The number of inotify watches held.
    var watchCount: Int { locked { $0.watchDescriptors.count } }

    // MARK: Registration

    /// Watches a path (through its directory) for `owner`: `onChange` runs, on the watcher's thread, whenever
    /// the file may have changed on disk. Watching the same path for the same owner again counts: each call
    /// is undone by one ``unwatch(_:owner:)``. Trouble watching it (polling instead) goes to `logger`.
    ///
    /// A path that ends in `/` (``everyName(in:)``) is every name of that directory: a file written, replaced,
    /// removed or newly put there, whatever its name (a directory of one file per key, where a new file is a new
    /// key). The directory itself is followed as a registered file's directory is (awaited while it does not
    /// exist), not through symbolic links: register every name of the directory a link resolves to.
    func watch(
        _ path: String, owner: AnyObject, logger: @autoclosure @escaping @Sendable () -> Logger,
        onChange: @escaping @Sendable (Event) -> Void
    ) {
        let registration = Registration(
            id: ObjectIdentifier(owner), owner: owner, count: 1, onChange: onChange, logger: logger)
        let request = Request(path: path, registration: registration)
        state.withLock { $0.requests.append(request) }
        scheduleReconcile()
    }

    /// Undoes one ``watch(_:owner:logger:onChange:)``; the directory's watch goes when nobody needs it.
    func unwatch(_ path: String, owner: AnyObject) {
        let directory = Self.directory(ofRegistered: path)
        let id = ObjectIdentifier(owner)
        locked { state in
            guard var registrations = state.files[directory]?[path] else { return }
            if let index = registrations.firstIndex(where: { $0.id == id }) {
                if registrations[index].owner != nil, registrations[index].count > 1 {
                    registrations[index].count -= 1
                } else {
                    registrations.remove(at: index)
                }
            }
            registrations = registrations.filter { $0.owner != nil }
            state.files[directory]?[path] = registrations.isEmpty ? nil : registrations
            if registrations.isEmpty { state.links.forgetFile(path) }
            if state.files[directory]?.isEmpty == true {
                state.files.removeValue(forKey: directory)
                state.links.forgetDirectory(directory)
            }
        }
        scheduleReconcile()
    }

    /// Whether any live registrant watches the path (tests).
    func isWatching(_ path: String) -> Bool {
        let directory = Self.directory(ofRegistered: path)
        return locked { $0.files[directory]?[path]?.contains { $0.owner != nil } ?? false }
    }

    /// The path that registers every name of `directory` (see ``watch(_:owner:logger:onChange:)``): the
    /// directory and a `/`, which no file's path is.
    static func everyName(in directory: String) -> String {
        directory.hasSuffix("/") ? directory : directory + "/"
    }

    /// Whether a registered path stands for every name of its directory.
    static func isEveryName(_ path: String) -> Bool {
        path.utf8.count > 1 && path.hasSuffix("/")
    }

    /// The directory a registered path is kept under: a file's directory, or the directory whose every name it is.
    static func directory(ofRegistered path: String) -> String {
        isEveryName(path) ? String(path.dropLast()) : PathComponents.directory(of: path)
    }

    /// Runs `job` on the watcher's thread, after the work queued before it (the reports of a store's open:
    /// see ``DefaultsMetrics``).
    func perform(_ job: @escaping @Sendable () -> Void) {
        thread.enqueue(job)
    }

    /// Waits until every registration made so far is in effect (watches added), for tests and benchmarks.
    func settle() {
        thread.sync()
    }

    // MARK: Testing

    /// Stops reading events (and polling) until ``resumeForTesting()``, so that a test can overflow the kernel's
    /// queue, or change files before the watcher looks.
    func suspendForTesting() {
        let wasRunning = locked { state in
            let wasRunning = !state.suspended
            state.suspended = true
            return wasRunning
        }
        if wasRunning {
            thread.pauseReading(true)
            thread.sync()  // a read or a poll under way ends first
        }
    }

    func resumeForTesting() {
        let wasSuspended = locked { state in
            let wasSuspended = state.suspended
            state.suspended = false
            return wasSuspended
        }
        guard wasSuspended else { return }
        // What changed meanwhile in polled directories is looked at now, not at the next poll.
        thread.enqueue { [weak self] in self?.pollOnce() }
        thread.pauseReading(false)
    }
}
