import Dispatch
import Foundation
import Logging
import Synchronization

/// The kernel's watches: which directories the registrations need, added and removed on the watcher's thread,
/// symbolic link chains resolved, and what cannot be watched handed to polling.
extension FileWatcher {
    // MARK: Watches

    /// The state under its lock, with the queued registrations applied first.
    func locked<Result>(_ body: (inout State) -> Result) -> Result {
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
    func scheduleReconcile() {
        if holds.load(ordering: .sequentiallyConsistent) > 0 {
            heldReconcile.store(true, ordering: .sequentiallyConsistent)
            // A hold that ended between the two loads may not have seen the flag: then queue it here (twice
            // is harmless: the second finds one queued).
            if holds.load(ordering: .sequentiallyConsistent) > 0 { return }
        }
        enqueueReconcile()
    }

    func enqueueReconcile() {
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
    func reconcile() {
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
    func wantedWatches() -> [String: Set<String>] {
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
        for directory in plain { wanted[nearestExisting(directory), default: []].insert(directory) }
        for (directory, needed) in chained {
            wanted[nearestExisting(directory), default: []].formUnion(needed)
        }
        return wanted
    }

    /// What ``addWatches(_:descriptor:)`` did: the paths now watched, those refused with why (and whether
    /// for a remote file system), and whether anything changed (a watch added, or a path gone meanwhile).
    struct AddedWatches {
        var watched: [String] = []
        var refused: [(path: String, reason: String, remote: Bool)] = []
        var changed = false
    }

    /// Adds a watch for each path, unless the watch limit is reached or the path lies on a remote file system.
    func addWatches(_ paths: Set<String>, descriptor: Int32) -> AddedWatches {
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
            switch events.addWatch(descriptor, directory: path) {
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
    func removeWatches(_ paths: Set<String>, descriptor: Int32) {
        for path in paths {
            if let wd = locked({ $0.watchDescriptors.removeValue(forKey: path) }) {
                locked { _ = $0.watchedPaths.removeValue(forKey: wd) }
                events.removeWatch(descriptor, wd)
            }
        }
    }

    /// Polls the registered directories that needed the refused watches, grouped by reason.
    func pollUnwatchable(
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
    func lookAtNewlyWatched(_ paths: [String]) {
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
    func resolveChains() -> Set<String> {
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
            if plainDirectories.contains(directory) && !fileSystem.isSymbolicLink(path) {
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
    func nearestExisting(_ path: String) -> String {
        var candidate = path
        while true {
            if fileSystem.isDirectory(candidate) { return candidate }
            let parent = PathComponents.directory(of: candidate)
            if parent == candidate || parent.isEmpty { return "/" }
            candidate = parent
        }
    }
}
