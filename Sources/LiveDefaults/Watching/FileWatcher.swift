import Dispatch
import Foundation
import Logging
import Synchronization

/// Watches the directories of the files that stores registered and tells them when another process (or a
/// person with an editor) may have changed one. By default one per process (``shared``), used by every store;
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
    /// The process's watcher: inotify, unless `LIVEDEFAULTS_WATCHER=poll` is set (or a directory lies on a
    /// network file system, unless `LIVEDEFAULTS_WATCHER=inotify` is set); polling (where needed) every
    /// `LIVEDEFAULTS_POLL_INTERVAL_MS` milliseconds, else 100 ms.
    package static let shared = FileWatcher(
        forcePolling: Environment.value("LIVEDEFAULTS_WATCHER") == "poll", pollInterval: nil,
        remoteFileSystem: RemoteFileSystem.detector(setting: Environment.value("LIVEDEFAULTS_WATCHER")))

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
    private struct Registration {
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
    private final class Request: IntrusiveListNode {
        let path: String
        let registration: Registration
        var next: Request?
        init(path: String, registration: Registration) {
            self.path = path
            self.registration = registration
        }
    }

    private struct State {
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
    private var descriptor: Int32 { thread.descriptor }
    /// Where the watcher's work runs, one job at a time, and events are read; it opens and owns `descriptor`.
    private let thread: WatcherThread
    /// Times the polling fallback (and nothing else).
    private let clock: any DefaultsClock
    private let state = Lock(State())
    /// Whether a reconciliation is queued and has not started: registrations made meanwhile ride along with
    /// it (a store's open registers the paths of its twelve layers; each used to queue a reconciliation of
    /// its own).
    private let reconcileQueued = Atomic<Bool>(false)
    /// How many ``holdingReconciliation(_:)`` calls are under way, and whether a reconciliation was asked for
    /// meanwhile.
    private let holds = Atomic<Int>(0)
    private let heldReconcile = Atomic<Bool>(false)
    /// How often directories that cannot be watched with inotify are checked: at least a millisecond.
    /// Worked out when asked (polling starts, a test): `Duration`'s arithmetic is code of the standard
    /// library that a process's first open would otherwise page in for nothing.
    package var pollInterval: Duration {
        max(.milliseconds(1), requestedPollInterval ?? Self.pollIntervalFromEnvironment)
    }
    /// The interval given, or nil for `LIVEDEFAULTS_POLL_INTERVAL_MS` (else 100 ms).
    private let requestedPollInterval: Duration?
    /// The most inotify watches this watcher adds before it polls instead (tests simulate the limit).
    private let watchLimit: Int
    /// Why inotify is not used at all, when it is not (known once the thread has tried to open it).
    private var inotifyUnavailable: String? { unavailable.withLock { $0 } }
    private let unavailable: Lock<String?>
    /// The network or user-space file system holding a directory (nil for a local one): such directories are
    /// polled. Tests pass a stand-in.
    private let remoteFileSystem: @Sendable (String) -> String?

    /// A watcher of its own, for stores that should not share the process's (``shared``).
    ///
    /// - Parameters:
    ///   - polling: Whether to poll every directory instead of using inotify.
    ///   - pollInterval: How often polled directories are checked (at least a millisecond; any longer
    ///     interval, however long, is taken as it is).
    ///   - clock: The time the polling follows (a ``ManualDefaultsClock`` lets a test say when polls happen).
    package convenience init(
        polling: Bool = false, pollInterval: Duration = .milliseconds(100),
        clock: any DefaultsClock = SystemDefaultsClock.shared
    ) {
        self.init(forcePolling: polling, pollInterval: pollInterval, clock: clock)
    }

    /// A watcher; `forcePolling` skips inotify altogether. `watchLimit` simulates the kernel's watch limit;
    /// `remoteFileSystem` tells which directories lie on a file system inotify cannot see other hosts' writes
    /// on (``RemoteFileSystem/name(ofFileSystemAt:)`` unless a test stands in for it). A nil `pollInterval`
    /// is the environment's (``shared``).
    init(
        forcePolling: Bool = false, pollInterval: Duration? = .milliseconds(100),
        clock: any DefaultsClock = SystemDefaultsClock.shared, watchLimit: Int = .max,
        remoteFileSystem: @escaping @Sendable (String) -> String? = RemoteFileSystem.name(ofFileSystemAt:)
    ) {
        requestedPollInterval = pollInterval
        self.clock = clock
        self.watchLimit = watchLimit
        self.remoteFileSystem = remoteFileSystem
        // Without inotify, why is reported (once) by the first store whose directory is polled, to its logger.
        if forcePolling {
            unavailable = Lock("polling chosen (LIVEDEFAULTS_WATCHER=poll or polling: true)")
            thread = WatcherThread(descriptor: -1)
        } else {
            // inotify is opened on the watcher's thread, before the first registration takes effect there: the
            // registering thread (a store's open) makes no system call for it.
            let unavailable = Lock<String?>(nil)
            self.unavailable = unavailable
            thread = WatcherThread(opening: {
                switch Inotify.open() {
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

    // MARK: Watches

    /// The state under its lock, with the queued registrations applied first.
    private func locked<Result>(_ body: (inout State) -> Result) -> Result {
        state.withLock { state in
            if !state.requests.isEmpty { state.applyRequests() }
            return body(&state)
        }
    }

    /// Runs `body` — a store's open, which registers its files one by one — with the reconciliation its
    /// registrations ask for put off to its end. The watcher's thread (made by the process's first store)
    /// then sets the watches up while the caller goes on to its first read, rather than beside the open's own
    /// reading and parsing (two threads taking their first page faults and allocations at once, on a 2-core
    /// machine). Nothing written meanwhile is missed: the first look at a newly watched directory reloads the
    /// files registered in it. Holds may nest and overlap between threads; the last to end schedules.
    @discardableResult
    func holdingReconciliation<Result>(_ body: () -> Result) -> Result {
        holds.wrappingAdd(1, ordering: .sequentiallyConsistent)
        let result = body()
        let (_, remaining) = holds.wrappingSubtract(1, ordering: .sequentiallyConsistent)
        if remaining == 0 && heldReconcile.exchange(false, ordering: .sequentiallyConsistent) {
            enqueueReconcile()
        }
        return result
    }

    /// Queues a reconciliation unless one is queued and has not started yet (that one will see what the
    /// caller registered: it clears the flag before it reads the registrations), or leaves it to the end of
    /// the holds under way (``holdingReconciliation(_:)``).
    private func scheduleReconcile() {
        if holds.load(ordering: .sequentiallyConsistent) > 0 {
            heldReconcile.store(true, ordering: .sequentiallyConsistent)
            // A hold that ended between the two loads may not have seen the flag: then queue it here (twice
            // is harmless: the second finds one queued).
            if holds.load(ordering: .sequentiallyConsistent) > 0 { return }
        }
        enqueueReconcile()
    }

    private func enqueueReconcile() {
        guard !reconcileQueued.exchange(true, ordering: .sequentiallyConsistent) else { return }
        thread.enqueue {
            self.reconcileQueued.store(false, ordering: .sequentiallyConsistent)
            self.reconcile()
        }
    }

    /// Makes the set of watches match the registered directories: each existing directory watched, each
    /// missing one awaited through its nearest existing ancestor, unneeded watches removed; and for paths
    /// reached through symbolic links, the directories of every link and target on their chains. Registrants
    /// whose chain now resolves elsewhere are told their file may have changed. Runs on the watcher's thread.
    ///
    /// The steps, each a function below: work the chains out (``resolveChains()``), find the watches wanted
    /// (``wantedWatches()``), add the missing ones (``addWatches(_:descriptor:)``), remove the unneeded ones
    /// (``removeWatches(_:descriptor:)``), poll what could not be watched (``pollUnwatchable(_:wanted:)``),
    /// and look at what is newly watched (``lookAtNewlyWatched(_:)``). A directory can appear between the
    /// check and the watch: the steps repeat until nothing changes.
    private func reconcile() {
        var relinked = resolveChains()
        defer {
            for path in relinked {
                for handler in handlers(forPath: path) { handler(Event(writtenInPlace: false)) }
            }
        }
        let descriptor = self.descriptor
        guard descriptor >= 0 else {
            let directories = Set(locked { $0.files.keys })
            startPolling(directories, reason: inotifyUnavailable ?? "inotify unavailable")
            return
        }
        for round in 0..<8 {
            if round > 0 { relinked.formUnion(resolveChains()) }
            let wanted = wantedWatches()
            let current = locked { Set($0.watchDescriptors.keys) }
            let added = addWatches(Set(wanted.keys).subtracting(current), descriptor: descriptor)
            removeWatches(current.subtracting(wanted.keys), descriptor: descriptor)
            pollUnwatchable(added.refused, wanted: wanted)
            lookAtNewlyWatched(added.watched)
            if !added.changed { return }
        }
    }

    /// The watches the registrations need: watch path → the registered directories that need it (a missing
    /// directory is awaited through its nearest existing ancestor). Polled directories need none.
    private func wantedWatches() -> [String: Set<String>] {
        let (plain, chained) = locked { state in
            let polled = state.polledDirectories
            let plain = state.files.keys.filter { polled[$0] == nil && state.links.isPlain($0) }
            let chained = state.links.chainDirectories().compactMapValues { needed in
                let needed = needed.filter { polled[$0] == nil }
                return needed.isEmpty ? nil : needed
            }
            return (plain, chained)
        }
        var wanted: [String: Set<String>] = [:]
        for directory in plain { wanted[Self.nearestExisting(directory), default: []].insert(directory) }
        for (directory, needed) in chained {
            wanted[Self.nearestExisting(directory), default: []].formUnion(needed)
        }
        return wanted
    }

    /// What ``addWatches(_:descriptor:)`` did: the paths now watched, those refused with why (and whether
    /// for a remote file system), and whether anything changed (a watch added, or a path gone meanwhile).
    private struct AddedWatches {
        var watched: [String] = []
        var refused: [(path: String, reason: String, remote: Bool)] = []
        var changed = false
    }

    /// Adds a watch for each path, unless the watch limit is reached or the path lies on a remote file system.
    private func addWatches(_ paths: Set<String>, descriptor: Int32) -> AddedWatches {
        var added = AddedWatches()
        for path in paths {
            if watchCount >= watchLimit {
                added.refused.append((path, "the watch limit (\(watchLimit)) is reached", false))
                continue
            }
            if let kind = remoteFileSystem(path) {
                added.refused.append(
                    (
                        path,
                        "it is on a \(kind) file system, where inotify does not see writes made on other machines",
                        true
                    ))
                continue
            }
            switch Inotify.addWatch(descriptor, directory: path) {
            case .success(let wd):
                locked { state in
                    state.watchedPaths[wd] = path
                    state.watchDescriptors[path] = wd
                }
                added.watched.append(path)
                added.changed = true
            case .failure(let error):
                if error.isNotFound {
                    added.changed = true  // it vanished meanwhile; look again
                } else {
                    added.refused.append((path, systemErrorText(error.errno), false))
                }
            }
        }
        return added
    }

    /// Removes the watches of paths no registration needs any more.
    private func removeWatches(_ paths: Set<String>, descriptor: Int32) {
        for path in paths {
            if let wd = locked({ $0.watchDescriptors.removeValue(forKey: path) }) {
                locked { _ = $0.watchedPaths.removeValue(forKey: wd) }
                Inotify.removeWatch(descriptor, wd)
            }
        }
    }

    /// Polls the registered directories that needed the refused watches, grouped by reason.
    private func pollUnwatchable(
        _ refused: [(path: String, reason: String, remote: Bool)], wanted: [String: Set<String>]
    ) {
        var reasons: [String: Bool] = [:]
        for entry in refused { reasons[entry.reason] = entry.remote }
        for (reason, remote) in reasons {
            let affected = refused.filter { $0.reason == reason }.flatMap { wanted[$0.path] ?? [] }
            startPolling(Set(affected), reason: reason, remote: remote)
        }
    }

    /// Files may have been written before their directory's watch existed: tells the registrants of the
    /// directories now watched, and of the chains through them, that their files may have changed.
    private func lookAtNewlyWatched(_ paths: [String]) {
        for path in paths {
            reloadFiles(under: path)
            // A file in it may have become a link before the watch existed (a volume mounted again).
            let prefix = path == "/" ? "/" : path + "/"
            locked { state in
                for (directory, files) in state.files where directory == path || directory.hasPrefix(prefix) {
                    state.links.unresolved.formUnion(files.keys.filter { !Self.isEveryName($0) })
                }
            }
            let dependent = locked { $0.links.files(dependingOn: path) }
            for file in dependent {
                for handler in handlers(forPath: file) { handler(Event(writtenInPlace: false)) }
            }
        }
    }

    /// Works out the chains that registrations and events left to resolve, with the system calls made
    /// outside the lock. A new plain path costs one `lstat`. Returns the registered paths whose chain now
    /// resolves differently from before.
    private func resolveChains() -> Set<String> {
        let (directories, files) = locked { state -> ([String], Set<String>) in
            let directories = state.files.keys.filter {
                state.links.directoriesStale || state.links.directories[$0] == nil
            }
            state.links.directoriesStale = false
            let files = state.links.unresolved
            state.links.unresolved = []
            return (Array(directories), files)
        }
        if directories.isEmpty && files.isEmpty { return [] }
        let directoryChains = directories.map { ($0, SymlinkChain.resolve($0)) }
        var pending = files
        locked { state in
            for (directory, chain) in directoryChains where state.links.setDirectory(directory, chain) {
                // Every file in it resolves elsewhere now.
                if let registered = state.files[directory] {
                    pending.formUnion(registered.keys.filter { !Self.isEveryName($0) })
                }
            }
        }
        let plainDirectories = locked { state in
            Set(pending.map { PathComponents.directory(of: $0) }.filter { state.links.isPlain($0) })
        }
        let fileChains = pending.map { path -> (String, SymlinkChain?) in
            let directory = PathComponents.directory(of: path)
            if plainDirectories.contains(directory) && !SystemFileSystem.shared.isSymbolicLink(path) {
                return (path, nil)
            }
            return (path, SymlinkChain.resolve(path))
        }
        return locked { state in
            var relinked: Set<String> = []
            for (path, chain) in fileChains {
                // A file unregistered meanwhile is not followed.
                guard state.files[PathComponents.directory(of: path)]?[path] != nil else { continue }
                if state.links.setFile(path, chain) { relinked.insert(path) }
            }
            return relinked
        }
    }

    /// The path itself when it is a directory, else its nearest ancestor that is.
    private static func nearestExisting(_ path: String) -> String {
        var candidate = path
        while true {
            if SystemFileSystem.shared.isDirectory(candidate) { return candidate }
            let parent = PathComponents.directory(of: candidate)
            if parent == candidate || parent.isEmpty { return "/" }
            candidate = parent
        }
    }

    // MARK: Events

    /// What one read of the inotify queue found, sorted by what each finding asks for.
    private struct EventBatch {
        /// The files to reload, in order, and those an in-place writer closed (see ``tellFileChanges(_:)``).
        var touchedFiles: [String] = []
        var writtenInPlace: Set<String> = []
        /// Paths that something new was created or renamed at: maybe a symbolic link.
        var replaced: Set<String> = []
        /// Whether a directory that matters came, went or lost its watch.
        var touchedDirectories = false
        /// Directories created, deleted or moved below a watched one.
        var changedDirectories: [String] = []
        /// Watches of directories that were removed or moved away.
        var deadDescriptors: Set<Int32> = []
        /// The kernel dropped events: everything is looked at again.
        var overflowed = false
    }

    /// Handles what the inotify descriptor has to read, in steps: sort the events (``collectEvents()``); after
    /// an overflow, look at everything again (``rescanAfterOverflow()``); follow directories that came or went
    /// (``followDirectoryChanges(_:)``); tell the registrants of changed files (``tellFileChanges(_:)``); and
    /// work out again the chains those changes may have moved.
    private func readEvents() {
        let batch = collectEvents()
        if batch.overflowed { return rescanAfterOverflow() }
        if batch.touchedDirectories { followDirectoryChanges(batch) }
        let relinked = tellFileChanges(batch)
        if !relinked.isEmpty {
            locked { state in
                state.links.unresolved.formUnion(relinked)
                // Registered directories need working out again only when one of them is reached through a
                // link (a link of a file's own chain, such as a volume's `..data`, leaves them as they are).
                if state.links.directories.values.contains(where: { !$0.isPlain }) {
                    state.links.directoriesStale = true
                }
            }
            reconcile()
        }
    }

    /// Reads every queued event and sorts it into a batch.
    private func collectEvents() -> EventBatch {
        var batch = EventBatch()
        Inotify.readEvents(descriptor) { event in
            let kind = event.kind
            if kind.contains(.overflow) {
                batch.overflowed = true
                return
            }
            guard let directory = locked({ $0.watchedPaths[event.watch] }) else { return }
            if !kind.isDisjoint(with: .watchEnded) {
                // The watched directory is gone or moved: this watch no longer watches its path, even if a
                // new directory of that name exists by the time the event is read.
                batch.touchedDirectories = true
                batch.deadDescriptors.insert(event.watch)
                return
            }
            let path = directory == "/" ? "/" + event.name : directory + "/" + event.name
            if !kind.contains(.isDirectory) && !kind.isDisjoint(with: [.created, .movedTo]) {
                batch.replaced.insert(path)
                // A new file brings its close-after-write; a new symbolic link (symlink(2)) brings nothing more.
                if kind.contains(.created) {
                    if isFollowed(path) && SystemFileSystem.shared.isSymbolicLink(path) {
                        batch.touchedFiles.append(path)
                    }
                    return
                }
            }
            if kind.contains(.isDirectory) {
                // A directory appeared or vanished below a watched one: maybe one we wait for, or one on a
                // link chain. Others (a volume's new timestamped directory, the one it replaced) change
                // nothing here, and cost nothing: a volume swap is handled by its `..data` rename alone.
                if concernsRegistrants(directory: path) {
                    batch.touchedDirectories = true
                    batch.changedDirectories.append(path)
                }
                return
            }
            if !kind.isDisjoint(with: [.closedAfterWriting, .movedTo, .movedFrom, .deleted]) {
                batch.touchedFiles.append(path)
                if kind.contains(.closedAfterWriting) { batch.writtenInPlace.insert(path) }
            }
        }
        return batch
    }

    /// After the kernel dropped events: every chain worked out again, every watch reconciled, every
    /// registrant told its file may have changed (compared by contents).
    private func rescanAfterOverflow() {
        // The logger is made after the lock is released (a logging system's factory is user code).
        let logger = locked { state in
            state.overflows += 1
            return state.files.values.first?.values.first?.first?.logger
        }?()
        // Handled here, and nothing for a caller to do: information, not a warning.
        logger?.info("inotify queue overflowed: rescanning every watched file")
        locked { state in
            state.links.directoriesStale = true
            state.links.unresolved.formUnion(state.links.files.keys)
        }
        reconcile()
        for handler in handlers(where: { _ in true }) { handler(Event(writtenInPlace: true)) }
    }

    /// Drops watches whose directory is gone or was replaced, then watches or awaits what is registered.
    private func followDirectoryChanges(_ batch: EventBatch) {
        let stale = locked { state in
            state.watchDescriptors.filter { path, wd in
                batch.deadDescriptors.contains(wd) || !SystemFileSystem.shared.exists(path)
            }
        }
        for (path, wd) in stale {
            locked { state in
                state.watchDescriptors.removeValue(forKey: path)
                state.watchedPaths.removeValue(forKey: wd)
            }
            Inotify.removeWatch(descriptor, wd)
            reloadFiles(under: path)
        }
        // A directory on some chain may be the one that came or went (a volume's timestamped directory):
        // every chain is worked out again, and those that now end elsewhere are reloaded.
        locked { state in
            state.links.directoriesStale = true
            state.links.unresolved.formUnion(state.links.files.keys)
        }
        reconcile()
        // A directory may have come and gone while only an ancestor was watched (this process created
        // it by writing a file, another removed it before the watch on it was added): its files were
        // never watched, so look at them now.
        for path in batch.changedDirectories { reloadFiles(under: path) }
    }

    /// Tells the registrants of each changed file (and of the chains through it) once; returns the
    /// registered paths whose chain may now resolve elsewhere.
    ///
    /// Only an in-place rewrite can keep inode, size and modification time (timestamps are coarse): a file
    /// renamed into place has a different inode from the one it replaced, since both existed at once. So a
    /// rename whose stamp matches what this process last wrote is this process's own write, and only
    /// in-place writes need the contents compared (which reads the whole file).
    private func tellFileChanges(_ batch: EventBatch) -> Set<String> {
        var seen: Set<String> = []
        var relinked: Set<String> = []
        for path in batch.touchedFiles where seen.insert(path).inserted {
            let event = Event(writtenInPlace: batch.writtenInPlace.contains(path))
            let (direct, dependents, chained, isChained, everyName) = locked { state in
                let dependents = state.links.dependents[path] ?? []
                let directory = PathComponents.directory(of: path)
                return (
                    Self.live(state.files[directory]?[path]), dependents,
                    dependents.flatMap { Self.live(state.files[PathComponents.directory(of: $0)]?[$0]) },
                    state.links.files[path] != nil,
                    Self.live(state.files[directory]?[Self.everyName(in: directory)])
                )
            }
            for handler in direct + chained + everyName { handler(event) }
            // A link or target on some chain changed: those chains are worked out again, and so is a
            // registered link. A plain file renamed into place costs one lstat, to see whether it is a link.
            relinked.formUnion(dependents)
            if isChained
                || (!direct.isEmpty && batch.replaced.contains(path) && SystemFileSystem.shared.isSymbolicLink(path))
            {
                relinked.insert(path)
            }
        }
        return relinked
    }

    /// Whether a directory that appeared or vanished at `path` may hold, or lead to, something registered: a
    /// registered directory (awaited or watched) at or below it, or a link or target of a chain below it.
    private func concernsRegistrants(directory path: String) -> Bool {
        let prefix = path == "/" ? "/" : path + "/"
        return locked { state in
            // A relative registered directory cannot be compared with the absolute event path: always looked at.
            state.files.keys.contains { $0 == path || $0.hasPrefix(prefix) || !$0.hasPrefix("/") }
                || state.links.dependents.keys.contains { $0.hasPrefix(prefix) }
        }
    }

    /// Whether an event at `path` concerns a registrant: a registered file, or a link or target on a chain.
    private func isFollowed(_ path: String) -> Bool {
        locked { state in
            state.files[PathComponents.directory(of: path)]?[path] != nil || state.links.dependents[path] != nil
        }
    }

    /// The live registrants' handlers of one path (a lookup: this runs for every event), collected under the
    /// lock and run by the caller after it.
    private func handlers(forPath path: String) -> [@Sendable (Event) -> Void] {
        let directory = PathComponents.directory(of: path)
        return locked { state in Self.live(state.files[directory]?[path]) }
    }

    /// The live registrants' handlers of every path in the directories `include` accepts.
    private func handlers(where include: (String) -> Bool) -> [@Sendable (Event) -> Void] {
        locked { state in
            state.files.filter { include($0.key) }.values.flatMap { $0.values.flatMap { Self.live($0) } }
        }
    }

    private static func live(_ registrations: [Registration]?) -> [@Sendable (Event) -> Void] {
        registrations?.compactMap { $0.owner == nil ? nil : $0.onChange } ?? []
    }

    /// Tells the registrants of a directory, and of every registered directory below it, that their files
    /// may have changed.
    private func reloadFiles(under path: String) {
        let prefix = path == "/" ? "/" : path + "/"
        for handler in handlers(where: { $0 == path || $0.hasPrefix(prefix) }) { handler(Event(writtenInPlace: false)) }
    }

    // MARK: Polling fallback

    /// Polls `directories` from now on. The first time inotify fails, a warning goes to the log of a store
    /// that needed one of them; the first time a directory lies on a remote file system (where polling is
    /// the right way, not a degraded one), a notice.
    private func startPolling(_ directories: Set<String>, reason: String, remote: Bool = false) {
        let (added, makeLogger, mustStart, polled) = locked { state in
            let added = directories.filter { state.polledDirectories[$0] == nil }
            for directory in added { state.polledDirectories[directory] = reason }
            let mustWarn: Bool
            if remote {
                mustWarn = !added.isEmpty && !state.notedRemoteFileSystem
                if mustWarn { state.notedRemoteFileSystem = true }
            } else {
                mustWarn = !added.isEmpty && !state.warnedAboutPolling
                if mustWarn { state.warnedAboutPolling = true }
            }
            var makeLogger: (@Sendable () -> Logger)?
            if mustWarn {
                for directory in added.sorted() {
                    if let first = state.files[directory]?.values.first?.first {
                        makeLogger = first.logger
                        break
                    }
                }
            }
            let mustStart = !state.pollingStarted && !state.polledDirectories.isEmpty
            if mustStart { state.pollingStarted = true }
            return (added, makeLogger, mustStart, state.polledDirectories.count)
        }
        if !added.isEmpty { DefaultsMetrics.report { DefaultsMetrics.watcherPolls(directories: polled) } }
        // Made after the lock is released: a logging system's factory is user code.
        let logger = makeLogger?()
        // Inotify failing is a degraded mode the operator can fix (raise fs.inotify limits) and no caller is
        // told of: a warning, once per watcher, in the log of the store that needed the directory.
        if remote {
            logger?.notice(
                "polling \(added.sorted().joined(separator: ", ")) every \(pollInterval): \(reason) (LIVEDEFAULTS_WATCHER=inotify keeps inotify)"
            )
        } else {
            logger?.warning(
                "cannot watch \(added.sorted().joined(separator: ", ")) with inotify (\(reason)): LiveDefaults polls for changes by other processes every \(pollInterval) instead"
            )
        }
        if mustStart { thread.enqueue { [weak self] in self?.pollAndReschedule() } }
    }

    /// Polls now, then again one ``pollInterval`` later on the watcher's clock, for as long as the watcher
    /// lives. (An interval of any length is fine: the system clock saturates rather than overflows.) The
    /// clock wakes a global queue, which hands the poll to the watcher's thread, so that polls and events
    /// are handled one at a time.
    private func pollAndReschedule() {
        pollOnce()
        clock.schedule(after: pollInterval, on: .global(qos: .utility)) { [weak self] in
            self?.thread.enqueue { [weak self] in self?.pollAndReschedule() }
        }
    }

    /// Tells the handlers of every polled directory to look again, unless a test suspended the watcher.
    private func pollOnce() {
        guard let polled = locked({ $0.suspended ? nil : $0.polledDirectories }) else { return }
        for handler in handlers(where: { polled[$0] != nil }) { handler(Event(writtenInPlace: false)) }
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
