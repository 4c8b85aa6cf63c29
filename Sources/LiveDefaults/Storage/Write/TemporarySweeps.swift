/// Where this process has swept the temporary files killed writers left (``DefaultsFileSystem/removeStaleTemporaries(inDirectory:processes:)``):
/// once per directory and file system, by the first write there.
///
/// Per directory, not per file: a sweep lists the directory, and a program that opens a store per tenant
/// writes thousands of domains into one directory; sweeping at each domain's first write made every write
/// cost a listing of all the others, and the background writer fell behind a loop of new tenants, holding
/// their files (and their memory) until it caught up. One listing finds the temporaries of every domain of the
/// directory. The set holds a few directories in a program (its layers'), a few more per file system in tests.
final class TemporarySweeps: Sendable {
    private let swept = Lock(Set<String>())

    /// Sweeps `directory` on `fileSystem` of the temporaries of processes that `processes` says no longer run,
    /// unless this process did already; `also` runs with the first sweep, for what else dead processes leave there
    /// (the readers' announcements: ``ReaderAnnouncements/removeDead(inDirectory:on:processes:except:)``).
    func sweepOnce(
        _ directory: String, on fileSystem: any DefaultsFileSystem, processes: any ProcessTable,
        also: ((String, any DefaultsFileSystem) -> Void)? = nil
    ) {
        let key = fileSystem.key(forPath: directory)
        guard swept.withLock({ $0.insert(key).inserted }) else { return }
        fileSystem.removeStaleTemporaries(inDirectory: directory, processes: processes)
        also?(directory, fileSystem)
    }
}
