import Glibc

/// One ``DomainFile`` per path per process, so that every store using a domain shares its cache, sees the
/// others' writes at once, and writes through one coalescing writer.
final class DomainFileRegistry: Sendable {
    static let shared = DomainFileRegistry()

    private struct Entry {
        weak var file: DomainFile?
    }

    private struct Files {
        var entries: [String: Entry] = [:]
        /// Entries whose file is gone are dropped when the table has doubled since the last sweep: a sweep
        /// walks every entry, so sweeping on every new file (as this did past 64 entries) made opening
        /// 10,000 domains, 60,000 layer files, quadratic (minutes instead of a second).
        var sweepAt = 64
        var sweeps = 0
    }

    private let files = Lock(Files())

    /// The file at `path`: the one already open in the process, else a new one following `clock` (a file's
    /// clock is that of the store that opened it first).
    func file(
        atPath path: String, owner: (uid_t, gid_t)? = nil, clock: any DefaultsClock = SystemDefaultsClock.shared
    ) -> DomainFile {
        files.withLock { files in
            if let existing = files.entries[path]?.file { return existing }
            if files.entries.count >= files.sweepAt {
                files.entries = files.entries.filter { $0.value.file != nil }
                files.sweepAt = max(64, files.entries.count * 2)
                files.sweeps += 1
            }
            let file = DomainFile(path: path, owner: owner, clock: clock)
            files.entries[path] = Entry(file: file)
            return file
        }
    }

    /// How many entries the registry holds, live or not, and how many sweeps it made (for tests).
    var counts: (entries: Int, sweeps: Int) {
        files.withLock { ($0.entries.count, $0.sweeps) }
    }
}
