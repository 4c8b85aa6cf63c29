import Dispatch
import Foundation
import Glibc
import Logging

/// Watches the directories of every loaded domain file and reloads a file when another process (or a
/// person with an editor) changes it. One per process (``shared``), used by every store.
///
/// It uses the kernel's inotify API directly (see `Docs/Architecture.md` for why not libinotifytools): one
/// descriptor opened with `IN_CLOEXEC | IN_NONBLOCK`, read by a `DispatchSource` on one serial queue, and
/// a watch per *directory*, since writers replace files by rename.
///
/// - A file is reloaded on `IN_CLOSE_WRITE` (an in-place writer such as Foundation has finished; `IN_MODIFY`
///   would fire on the empty file right after a truncate), `IN_MOVED_TO` (temp file + rename), and
///   `IN_DELETE` / `IN_MOVED_FROM` (the file is gone, so are its keys). Reloading is cheap when nothing
///   changed: ``DomainFile/reload()`` compares inode, size and modification time first.
/// - A directory that does not exist is awaited through a watch on its nearest existing ancestor; when a
///   watched directory is deleted or moved, its files are reloaded (they are gone) and it is awaited again.
/// - `IN_Q_OVERFLOW` (the kernel dropped events) rescans every file.
/// - When inotify is unavailable (instance or watch limit reached, a file system without inotify support,
///   or `LIVEDEFAULTS_WATCHER=poll` in the environment), the affected directories are polled instead, every
///   ``pollInterval``, with a warning in the log.
final class FileWatcher: Sendable {
    /// The process's watcher.
    static let shared = FileWatcher(
        forcePolling: Environment.value("LIVEDEFAULTS_WATCHER") == "poll",
        pollInterval: FileWatcher.pollIntervalFromEnvironment)

    /// How often polled directories are checked: `LIVEDEFAULTS_POLL_INTERVAL_MS`, else 100 ms.
    static var pollIntervalFromEnvironment: Duration {
        let milliseconds = Environment.value("LIVEDEFAULTS_POLL_INTERVAL_MS").flatMap { Int($0) }
        return .milliseconds(max(1, milliseconds ?? 100))
    }

    static let logger = Logger(label: "LiveDefaults")

    /// The events every watch asks for. One mask for all watches, because adding a watch for a path that is
    /// already watched replaces its mask.
    private static let mask = UInt32(
        IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF
            | IN_ONLYDIR)

    /// Files are held weakly: the stores own them, and a file nobody uses is not watched.
    private struct WeakFile {
        weak var file: DomainFile?
    }

    private struct State {
        /// Registered files by path, grouped by directory.
        var files: [String: [String: WeakFile]] = [:]
        /// Watch descriptor → watched path (a files' directory, or an ancestor awaiting one).
        var watchedPaths: [Int32: String] = [:]
        var watchDescriptors: [String: Int32] = [:]
        /// Directories whose files are polled instead of watched.
        var polledDirectories: Set<String> = []
        var pollTimerStarted = false
        var warnedAboutPolling = false
        /// How many times the kernel's queue overflowed (for tests and diagnostics).
        var overflows = 0
        /// Whether the reading source is suspended (tests that flood the queue).
        var suspended = false
    }

    private let descriptor: Int32
    private let queue = DispatchQueue(label: "LiveDefaults.watcher", qos: .userInitiated)
    // libdispatch sources are thread-safe objects (suspend, resume and cancel may be called from any thread);
    // the protocol is only not annotated `Sendable`.
    nonisolated(unsafe) private let source: (any DispatchSourceRead)?
    /// Drives the polling fallback; created inactive, activated the first time a directory is polled.
    nonisolated(unsafe) private let pollTimer: any DispatchSourceTimer
    private let state = Lock(State())
    let pollInterval: Duration
    /// The most inotify watches this watcher adds before it polls instead (tests simulate the limit).
    private let watchLimit: Int

    /// A watcher; `forcePolling` skips inotify altogether. `watchLimit` simulates the kernel's watch limit.
    init(forcePolling: Bool = false, pollInterval: Duration = .milliseconds(100), watchLimit: Int = .max) {
        self.pollInterval = pollInterval
        self.watchLimit = watchLimit
        let descriptor = forcePolling ? -1 : inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        let reason = forcePolling ? "LIVEDEFAULTS_WATCHER=poll" : String(cString: strerror(errno))
        self.descriptor = descriptor
        pollTimer = DispatchSource.makeTimerSource(queue: queue)
        if descriptor >= 0 {
            let source = DispatchSource.makeReadSource(fileDescriptor: descriptor, queue: queue)
            self.source = source
            source.setEventHandler { [weak self] in self?.readEvents() }
            source.activate()
        } else {
            source = nil
            state.withLock { $0.warnedAboutPolling = true }
            Self.logger.warning(
                "inotify is unavailable (\(reason)): LiveDefaults polls for changes by other processes every \(pollInterval)")
        }
    }

    deinit {
        source?.cancel()
        if descriptor >= 0 { close(descriptor) }
        pollTimer.cancel()
        if !state.withLock({ $0.pollTimerStarted }) { pollTimer.activate() }  // an inactive source must not be released
    }

    /// Whether this watcher uses inotify at all.
    var usesInotify: Bool { descriptor >= 0 }

    var overflowCount: Int { state.withLock { $0.overflows } }

    /// The directories being polled (inotify unavailable for them).
    var polledDirectories: Set<String> { state.withLock { $0.polledDirectories } }

    /// The number of inotify watches held.
    var watchCount: Int { state.withLock { $0.watchDescriptors.count } }

    // MARK: Registration

    /// Starts watching a file's directory; the file is reloaded whenever it may have changed on disk.
    func register(_ file: DomainFile) {
        let directory = (file.path as NSString).deletingLastPathComponent
        state.withLock { $0.files[directory, default: [:]][file.path] = WeakFile(file: file) }
        queue.async { self.reconcile() }
    }

    /// Stops watching a file that no longer exists in memory (called from its deinit): an entry whose file is
    /// still alive belongs to a newer object for the same path and stays.
    func unregister(path: String) {
        let directory = (path as NSString).deletingLastPathComponent
        state.withLock { state in
            guard let entry = state.files[directory]?[path], entry.file == nil else { return }
            state.files[directory]?.removeValue(forKey: path)
            if state.files[directory]?.isEmpty == true { state.files.removeValue(forKey: directory) }
        }
        queue.async { self.reconcile() }
    }

    /// Waits until every registration made so far is in effect (watches added), for tests and benchmarks.
    func settle() {
        queue.sync {}
    }

    // MARK: Watches

    /// Makes the set of watches match the registered directories: each existing directory watched, each
    /// missing one awaited through its nearest existing ancestor, unneeded watches removed. Runs on `queue`.
    private func reconcile() {
        guard descriptor >= 0 else {
            let directories = Set(state.withLock { $0.files.keys })
            startPolling(directories, reason: "inotify unavailable")
            return
        }
        // A directory can appear between the check and the watch: repeat until nothing changes.
        for _ in 0..<8 {
            let directories = state.withLock { state in
                Set(state.files.keys).subtracting(state.polledDirectories)
            }
            var wanted: Set<String> = []
            for directory in directories { wanted.insert(Self.nearestExisting(directory)) }
            let current = state.withLock { Set($0.watchDescriptors.keys) }
            var changed = false
            var newlyWatched: [String] = []
            var polled: [(String, String)] = []
            for path in wanted.subtracting(current) {
                if watchCount >= watchLimit {
                    polled.append((path, "the watch limit (\(watchLimit)) is reached"))
                    continue
                }
                let wd = inotify_add_watch(descriptor, path, Self.mask)
                if wd < 0 {
                    let code = errno
                    if code == ENOENT || code == ENOTDIR {
                        changed = true  // it vanished meanwhile; look again
                    } else {
                        polled.append((path, String(cString: strerror(code))))
                    }
                    continue
                }
                state.withLock { state in
                    state.watchedPaths[wd] = path
                    state.watchDescriptors[path] = wd
                }
                newlyWatched.append(path)
                changed = true
            }
            for path in current.subtracting(wanted) {
                if let wd = state.withLock({ $0.watchDescriptors.removeValue(forKey: path) }) {
                    state.withLock { _ = $0.watchedPaths.removeValue(forKey: wd) }
                    inotify_rm_watch(descriptor, wd)
                }
            }
            if !polled.isEmpty {
                // Poll the registered directories that would have needed these watches.
                let affected = directories.filter { directory in polled.contains { Self.nearestExisting(directory) == $0.0 } }
                startPolling(Set(affected), reason: polled[0].1)
            }
            // Files may have been written before the watch existed: check the directories now watched.
            for path in newlyWatched {
                reloadFiles(under: path)
            }
            if !changed { return }
        }
    }

    /// The path itself when it is a directory, else its nearest ancestor that is.
    private static func nearestExisting(_ path: String) -> String {
        var candidate = path
        while true {
            var info = stat()
            if stat(candidate, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR { return candidate }
            let parent = (candidate as NSString).deletingLastPathComponent
            if parent == candidate || parent.isEmpty { return "/" }
            candidate = parent
        }
    }

    // MARK: Events

    private func readEvents() {
        let bufferSize = 64 * 1024
        var buffer = [UInt8](repeating: 0, count: bufferSize)
        /// The files to reload, in order, and those an in-place writer closed (see below).
        var touchedFiles: [String] = []
        var writtenInPlace: Set<String> = []
        var touchedDirectories = false
        /// Directories created, deleted or moved below a watched one.
        var changedDirectories: [String] = []
        var overflowed = false
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, bufferSize) }
            if count <= 0 { break }
            var offset = 0
            while offset + MemoryLayout<inotify_event>.size <= count {
                let (wd, mask, nameLength) = buffer.withUnsafeBytes { raw in
                    let event = raw.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
                    return (event.wd, event.mask, Int(event.len))
                }
                let nameStart = offset + MemoryLayout<inotify_event>.size
                let name = String(decoding: buffer[nameStart..<(nameStart + nameLength)].prefix { $0 != 0 }, as: UTF8.self)
                offset = nameStart + nameLength
                if mask & UInt32(IN_Q_OVERFLOW) != 0 {
                    overflowed = true
                    continue
                }
                guard let directory = state.withLock({ $0.watchedPaths[wd] }) else { continue }
                if mask & UInt32(IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED) != 0 {
                    touchedDirectories = true
                    continue
                }
                let path = directory == "/" ? "/" + name : directory + "/" + name
                if mask & UInt32(IN_ISDIR) != 0 {
                    // A directory appeared or vanished below a watched one: maybe one we wait for.
                    touchedDirectories = true
                    changedDirectories.append(path)
                    continue
                }
                if mask & UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE) != 0 {
                    touchedFiles.append(path)
                    if mask & UInt32(IN_CLOSE_WRITE) != 0 { writtenInPlace.insert(path) }
                }
            }
        }
        if overflowed {
            state.withLock { $0.overflows += 1 }
            Self.logger.notice("inotify queue overflowed: rescanning every watched domain file")
            reconcile()
            for file in allFiles() { file.reload() }
            return
        }
        if touchedDirectories {
            // Drop watches whose directory is gone, then watch or await what is registered.
            let stale = state.withLock { state in
                state.watchDescriptors.filter { path, _ in
                    var info = stat()
                    return stat(path, &info) != 0
                }
            }
            for (path, wd) in stale {
                state.withLock { state in
                    state.watchDescriptors.removeValue(forKey: path)
                    state.watchedPaths.removeValue(forKey: wd)
                }
                inotify_rm_watch(descriptor, wd)
                reloadFiles(under: path)
            }
            reconcile()
            // A directory may have come and gone while only an ancestor was watched (this process created
            // it by writing a file, another removed it before the watch on it was added): its files were
            // never watched, so look at them now.
            for path in changedDirectories { reloadFiles(under: path) }
        }
        // Only an in-place rewrite can keep inode, size and modification time (timestamps are coarse): a
        // file renamed into place has a different inode from the one it replaced, since both existed at
        // once. So a rename whose stamp matches what this process last wrote is this process's own write,
        // and only in-place writes need the contents compared (which reads the whole file).
        var seen: Set<String> = []
        for path in touchedFiles where seen.insert(path).inserted {
            file(atPath: path)?.reload(verifyContents: writtenInPlace.contains(path))
        }
    }

    private func file(atPath path: String) -> DomainFile? {
        let directory = (path as NSString).deletingLastPathComponent
        return state.withLock { $0.files[directory]?[path]?.file }
    }

    private func allFiles() -> [DomainFile] {
        state.withLock { state in state.files.values.flatMap { $0.values.compactMap(\.file) } }
    }

    /// Reloads the registered files of a directory and of every registered directory below it.
    private func reloadFiles(under path: String) {
        let files = state.withLock { state in
            state.files.filter { directory, _ in directory == path || directory.hasPrefix(path == "/" ? "/" : path + "/") }
                .values.flatMap { $0.values.compactMap(\.file) }
        }
        for file in files { file.reload() }
    }

    // MARK: Polling fallback

    private func startPolling(_ directories: Set<String>, reason: String) {
        let (added, mustWarn, mustStart) = state.withLock { state in
            let added = directories.subtracting(state.polledDirectories)
            state.polledDirectories.formUnion(directories)
            let mustWarn = !added.isEmpty && !state.warnedAboutPolling
            if mustWarn { state.warnedAboutPolling = true }
            let mustStart = !state.pollTimerStarted && !state.polledDirectories.isEmpty
            if mustStart { state.pollTimerStarted = true }
            return (added, mustWarn, mustStart)
        }
        if mustWarn {
            Self.logger.warning(
                "cannot watch \(added.sorted().joined(separator: ", ")) with inotify (\(reason)): polling every \(pollInterval) instead")
        }
        if mustStart {
            let timer = pollTimer
            let nanoseconds = Int(pollInterval.components.seconds) * 1_000_000_000
                + Int(pollInterval.components.attoseconds / 1_000_000_000)
            timer.schedule(deadline: .now(), repeating: .nanoseconds(max(1_000_000, nanoseconds)))
            timer.setEventHandler { [weak self] in self?.poll() }
            timer.activate()
        }
    }

    private func poll() {
        let files = state.withLock { state in
            state.polledDirectories.flatMap { state.files[$0]?.values.compactMap(\.file) ?? [] }
        }
        for file in files { file.reload() }
    }

    // MARK: Testing

    /// Stops reading events until ``resumeForTesting()``, so that a test can overflow the kernel's queue.
    func suspendForTesting() {
        guard let source else { return }
        let wasRunning = state.withLock { state in
            let wasRunning = !state.suspended
            state.suspended = true
            return wasRunning
        }
        if wasRunning {
            source.suspend()
            queue.sync {}
        }
    }

    func resumeForTesting() {
        guard let source else { return }
        let wasSuspended = state.withLock { state in
            let wasSuspended = state.suspended
            state.suspended = false
            return wasSuspended
        }
        if wasSuspended { source.resume() }
    }
}
