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
    static let shared = DomainFileRegistry()

    /// One open file of a path, with the file configuration that tells it from others of the same path: a node
    /// of the path's ``IntrusiveList`` (nearly always of one: a path opened with two configurations is rare;
    /// not an array: see there).
    private final class Entry: IntrusiveListNode {
        weak var file: DomainFile?
        let ownerUser: UserID?
        let ownerGroup: GroupID?
        let clock: ObjectIdentifier
        let fileSystem: ObjectIdentifier
        var next: Entry?

        init(file: DomainFile, owner: (UserID, GroupID)?, clock: ObjectIdentifier, fileSystem: ObjectIdentifier) {
            self.file = file
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
        /// Entries whose file is gone are dropped when the table has doubled since the last sweep: a sweep
        /// walks every entry, so sweeping on every new file (as this did past 64 entries) made opening
        /// 10,000 domains, 60,000 layer files, quadratic (minutes instead of a second).
        var sweepAt = 64
        var sweeps = 0

        /// The entries of `path`.
        func list(_ path: String) -> IntrusiveList<Entry> { IntrusiveList(startingAt: entries[path]) }

        mutating func sweep() {
            var kept: [String: Entry] = [:]
            var count = 0
            for (path, first) in entries {
                var list = IntrusiveList(startingAt: first)
                var live = IntrusiveList<Entry>()
                for entry in list.takeAll() where entry.file != nil {
                    live.append(entry)
                    count += 1
                }
                if let first = live.first { kept[path] = first }
            }
            entries = kept
            self.count = count
        }
    }

    private let files = Lock(Files())

    /// The file at `path` for this owner, clock and file system: the one already open in the process with the
    /// same configuration, else a new one.
    func file(
        atPath path: String, owner: (UserID, GroupID)? = nil, clock: any DefaultsClock = SystemDefaultsClock.shared,
        fileSystem: any DefaultsFileSystem = SystemFileSystem.shared
    ) -> DomainFile {
        let clockID = ObjectIdentifier(clock)
        let fileSystemID = ObjectIdentifier(fileSystem)
        return files.withLock { files in
            if let existing = files.list(path).first(where: { $0.matches(owner, clockID, fileSystemID) })?.file {
                return existing
            }
            if files.count >= files.sweepAt {
                files.sweep()
                files.sweepAt = max(64, files.count * 2)
                files.sweeps += 1
            }
            let file = DomainFile(path: path, owner: owner, clock: clock, fileSystem: fileSystem)
            // An entry of the same configuration whose file is gone (one the sweep kept) takes the new file.
            if let same = files.list(path).first(where: { $0.matches(owner, clockID, fileSystemID) }) {
                same.file = file
            } else {
                var list = files.list(path)
                list.prepend(Entry(file: file, owner: owner, clock: clockID, fileSystem: fileSystemID))
                files.entries[path] = list.first
                files.count += 1
            }
            return file
        }
    }

    /// How many entries the registry holds, live or not, and how many sweeps it made (for tests).
    var counts: (entries: Int, sweeps: Int) {
        files.withLock { ($0.count, $0.sweeps) }
    }
}
