/// One ``DomainFile`` per path and file configuration per process, so that every store using a domain shares
/// its cache, sees the others' writes at once, and writes through one coalescing writer.
///
/// The rule for stores whose configurations differ: a file's configuration is what the store that asks for
/// it says of files — the owner it gives files it creates (``Defaults/init(user:)``), the clock its waits
/// follow (``Defaults/Configuration/clock``) and the file system it is on (``Defaults/Configuration/fileSystem``).
/// Stores that agree on all three share one file. A store that differs in any gets a file of its own for the same path, which meets the others as another process's would:
/// through the disk, under the file lock, its changes reaching them through their watchers. So no store's
/// configuration is silently replaced by another's, whichever opened the path first.
final class DomainFileRegistry: Sendable {
    /// One open file of a path, with the file configuration that tells it from others of the same path: a node
    /// of the path's ``IntrusiveList`` (nearly always of one: a path opened with two configurations is rare;
    /// not an array: see there).
    private final class Entry: IntrusiveListNode {
        weak var file: DomainFile?
        /// The file's identity, which its `deinit` names to ``forget(path:file:)`` (the weak reference is nil
        /// by then).
        var fileID: ObjectIdentifier
        let ownerUser: UserID?
        let ownerGroup: GroupID?
        let clock: ObjectIdentifier
        let fileSystem: ObjectIdentifier
        var next: Entry?

        init(file: DomainFile, owner: (UserID, GroupID)?, clock: ObjectIdentifier, fileSystem: ObjectIdentifier) {
            self.file = file
            fileID = ObjectIdentifier(file)
            ownerUser = owner?.0
            ownerGroup = owner?.1
            self.clock = clock
            self.fileSystem = fileSystem
        }

        func matches(_ owner: (UserID, GroupID)?, _ clock: ObjectIdentifier, _ fileSystem: ObjectIdentifier) -> Bool {
            ownerUser == owner?.0 && ownerGroup == owner?.1 && self.clock == clock && self.fileSystem == fileSystem
        }
    }

    private struct Files {
        /// By path, the first entry of its list (``IntrusiveList/init(startingAt:)``). Keyed by the path
        /// alone, not by a struct of path and configuration: a fresh process's first dictionary keyed by a type
        /// of ours cost the runtime a noticeable part of opening its first store (the type's conformances
        /// looked up on first use; Docs/Decisions/ReadPaths.md).
        var entries: [String: Entry] = [:]
        var count = 0

        /// The entries of `path`.
        func list(_ path: String) -> IntrusiveList<Entry> { IntrusiveList(startingAt: entries[path]) }
    }

    private let files = Lock(Files())

    /// The file at `path` for this owner, clock and file system: the one already open in the process with the
    /// same configuration, else a new one.
    func file(
        atPath path: String, owner: (UserID, GroupID)? = nil, clock: any DefaultsClock,
        fileSystem: any DefaultsFileSystem, context: StorageContext
    ) -> DomainFile {
        let clockID = ObjectIdentifier(clock)
        let fileSystemID = ObjectIdentifier(fileSystem)
        return files.withLock { files in
            let same = files.list(path).first(where: { $0.matches(owner, clockID, fileSystemID) })
            if let existing = same?.file { return existing }
            let file = DomainFile(
                path: path, owner: owner, clock: clock, fileSystem: fileSystem, context: context, registry: self)
            // An entry of the same configuration whose file is going (its deinit has not yet forgotten it) takes
            // the new file.
            if let same {
                same.file = file
                same.fileID = ObjectIdentifier(file)
            } else {
                var list = files.list(path)
                list.prepend(Entry(file: file, owner: owner, clock: clockID, fileSystem: fileSystemID))
                files.entries[path] = list.first
                files.count += 1
            }
            return file
        }
    }

    /// Forgets the entry of a file that is going away (called from its `deinit`), so that the registry holds
    /// nothing of a domain no store uses any more: a program that opens a store per tenant and drops it must
    /// not grow with every tenant it has ever served. At once, not in a later sweep: a sweep finds the files
    /// the background writer still holds alive, and a table swept when it has doubled keeps up to twice the
    /// most files ever alive at a sweep.
    func forget(path: String, file: ObjectIdentifier) {
        files.withLock { files in
            var list = files.list(path)
            var kept = IntrusiveList<Entry>()
            var removed = 0
            for entry in list.takeAll() {
                if entry.fileID == file && entry.file == nil {
                    removed += 1
                } else {
                    kept.append(entry)
                }
            }
            guard removed > 0 else {
                if let first = kept.first { files.entries[path] = first }
                return
            }
            files.count -= removed
            if let first = kept.first { files.entries[path] = first } else { files.entries.removeValue(forKey: path) }
        }
    }

    /// How many entries the registry holds (for tests).
    var count: Int {
        files.withLock { $0.count }
    }
}
