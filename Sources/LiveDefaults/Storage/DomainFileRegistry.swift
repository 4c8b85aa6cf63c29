/// One ``DomainFile`` per path and file configuration per process, so that every store using a domain shares
/// its cache, sees the others' writes at once, and writes through one coalescing writer.
///
/// The rule for stores whose configurations differ: a file's configuration is what the store that asks for
/// it says of files — the owner it gives files it creates (``Defaults/init(user:)``) and the clock its waits
/// follow (``Defaults/Configuration/clock``). Stores that agree on both share one file. A store that differs
/// in either gets a file of its own for the same path, which meets the others as another process's would:
/// through the disk, under the file lock, its changes reaching them through their watchers. So no store's
/// configuration is silently replaced by another's, whichever opened the path first.
final class DomainFileRegistry: Sendable {
    static let shared = DomainFileRegistry()

    /// What tells two files of one path apart: the path and the file configuration.
    struct Key: Hashable {
        var path: String
        var ownerUser: UserID?
        var ownerGroup: GroupID?
        var clock: ObjectIdentifier
    }

    private struct Entry {
        weak var file: DomainFile?
    }

    private struct Files {
        var entries: [Key: Entry] = [:]
        /// Entries whose file is gone are dropped when the table has doubled since the last sweep: a sweep
        /// walks every entry, so sweeping on every new file (as this did past 64 entries) made opening
        /// 10,000 domains, 60,000 layer files, quadratic (minutes instead of a second).
        var sweepAt = 64
        var sweeps = 0
    }

    private let files = Lock(Files())

    /// The file at `path` for this owner and clock: the one already open in the process with the same
    /// configuration, else a new one.
    func file(
        atPath path: String, owner: (UserID, GroupID)? = nil, clock: any DefaultsClock = SystemDefaultsClock.shared
    ) -> DomainFile {
        let key = Key(path: path, ownerUser: owner?.0, ownerGroup: owner?.1, clock: ObjectIdentifier(clock))
        return files.withLock { files in
            if let existing = files.entries[key]?.file { return existing }
            if files.entries.count >= files.sweepAt {
                files.entries = files.entries.filter { $0.value.file != nil }
                files.sweepAt = max(64, files.entries.count * 2)
                files.sweeps += 1
            }
            let file = DomainFile(path: path, owner: owner, clock: clock)
            files.entries[key] = Entry(file: file)
            return file
        }
    }

    /// How many entries the registry holds, live or not, and how many sweeps it made (for tests).
    var counts: (entries: Int, sweeps: Int) {
        files.withLock { ($0.entries.count, $0.sweeps) }
    }
}
