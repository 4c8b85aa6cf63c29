import Dispatch
import Foundation
import Logging
import Synchronization

/// The kernel's events: read in batches on the watcher's thread, turned into the changes of directories and of
/// the files registered in them, and told to their handlers.
extension FileWatcher {
    // MARK: Events

    /// What one read of the inotify queue found, sorted by what each finding asks for.
    struct EventBatch {
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
    func readEvents() {
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
    func collectEvents() -> EventBatch {
        var batch = EventBatch()
        events.readEvents(descriptor) { event in
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
                    if isFollowed(path) && fileSystem.isSymbolicLink(path) {
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
    func rescanAfterOverflow() {
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
    func followDirectoryChanges(_ batch: EventBatch) {
        let stale = locked { state in
            state.watchDescriptors.filter { path, wd in
                batch.deadDescriptors.contains(wd) || !fileSystem.exists(path)
            }
        }
        for (path, wd) in stale {
            locked { state in
                state.watchDescriptors.removeValue(forKey: path)
                state.watchedPaths.removeValue(forKey: wd)
            }
            events.removeWatch(descriptor, wd)
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
    func tellFileChanges(_ batch: EventBatch) -> Set<String> {
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
                || (!direct.isEmpty && batch.replaced.contains(path) && fileSystem.isSymbolicLink(path))
            {
                relinked.insert(path)
            }
        }
        return relinked
    }

    /// Whether a directory that appeared or vanished at `path` may hold, or lead to, something registered: a
    /// registered directory (awaited or watched) at or below it, or a link or target of a chain below it.
    func concernsRegistrants(directory path: String) -> Bool {
        let prefix = path == "/" ? "/" : path + "/"
        return locked { state in
            // A relative registered directory cannot be compared with the absolute event path: always looked at.
            state.files.keys.contains { $0 == path || $0.hasPrefix(prefix) || !$0.hasPrefix("/") }
                || state.links.dependents.keys.contains { $0.hasPrefix(prefix) }
        }
    }

    /// Whether an event at `path` concerns a registrant: a registered file, or a link or target on a chain.
    func isFollowed(_ path: String) -> Bool {
        locked { state in
            state.files[PathComponents.directory(of: path)]?[path] != nil || state.links.dependents[path] != nil
        }
    }

    /// The live registrants' handlers of one path (a lookup: this runs for every event), collected under the
    /// lock and run by the caller after it.
    func handlers(forPath path: String) -> [@Sendable (Event) -> Void] {
        let directory = PathComponents.directory(of: path)
        return locked { state in Self.live(state.files[directory]?[path]) }
    }

    /// The live registrants' handlers of every path in the directories `include` accepts.
    func handlers(where include: (String) -> Bool) -> [@Sendable (Event) -> Void] {
        locked { state in
            state.files.filter { include($0.key) }.values.flatMap { $0.values.flatMap { Self.live($0) } }
        }
    }

    static func live(_ registrations: [Registration]?) -> [@Sendable (Event) -> Void] {
        registrations?.compactMap { $0.owner == nil ? nil : $0.onChange } ?? []
    }

    /// Tells the registrants of a directory, and of every registered directory below it, that their files
    /// may have changed.
    func reloadFiles(under path: String) {
        let prefix = path == "/" ? "/" : path + "/"
        for handler in handlers(where: { $0 == path || $0.hasPrefix(prefix) }) { handler(Event(writtenInPlace: false)) }
    }
}
