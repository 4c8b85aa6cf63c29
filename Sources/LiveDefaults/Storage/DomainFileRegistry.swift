import Glibc

/// One ``DomainFile`` per path per process, so that every store using a domain shares its cache, sees the
/// others' writes at once, and writes through one coalescing writer.
final class DomainFileRegistry: Sendable {
    static let shared = DomainFileRegistry()

    private struct Entry {
        weak var file: DomainFile?
    }

    private let files = Lock<[String: Entry]>([:])

    /// The file at `path`: the one already open in the process, else a new one following `clock` (a file's
    /// clock is that of the store that opened it first).
    func file(
        atPath path: String, owner: (uid_t, gid_t)? = nil, clock: any DefaultsClock = SystemDefaultsClock.shared
    ) -> DomainFile {
        files.withLock { files in
            if let existing = files[path]?.file { return existing }
            if files.count > 64 { files = files.filter { $0.value.file != nil } }
            let file = DomainFile(path: path, owner: owner, clock: clock)
            files[path] = Entry(file: file)
            return file
        }
    }
}
