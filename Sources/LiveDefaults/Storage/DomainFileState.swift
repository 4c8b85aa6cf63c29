import Synchronization

/// The one owner of a ``DomainFile``'s state: the state behind its lock, and the two flags that mirror it
/// for the readers that take no lock (every `set` and lookup asks each layer file of a search list, most of
/// which do not exist or hold nothing).
///
/// Invariant, whenever the lock is free: ``holdsKeys`` is `!contents.isEmpty` and ``isLoaded`` is `loaded`.
/// Every change goes through ``change(_:)``, which brings the flags in line before it releases the lock;
/// ``read(_:)`` cannot change the state. The file's other synchronisation is not state: its disk lock
/// (``DomainFile``) orders disk operations, and its ``Deliveries`` count the changes not yet told.
struct DomainFileState: ~Copyable, Sendable {
    private let lock = Lock(DomainFile.State())
    private let holdsKeysFlag = Atomic<Bool>(false)
    private let loadedFlag = Atomic<Bool>(false)
    private let judgedFlag = Atomic<Bool>(false)

    init() {}

    /// Whether the contents hold any key, without the lock.
    var holdsKeys: Bool { holdsKeysFlag.load(ordering: .acquiring) }
    /// Whether a version of the file (or its absence) was read, without the lock.
    var isLoaded: Bool { loadedFlag.load(ordering: .acquiring) }
    /// Whether validators judge the file's versions (``DomainFile/State/judges`` is not empty), without the lock.
    var isJudged: Bool { judgedFlag.load(ordering: .acquiring) }

    /// Reads the state under the lock.
    func read<Result>(_ body: (borrowing DomainFile.State) -> Result) -> Result {
        lock.withLock { state in body(state) }
    }

    /// Changes the state under the lock; the flags follow before the lock is released.
    func change<Result>(_ body: (inout DomainFile.State) -> Result) -> Result {
        lock.withLock { state in
            let result = body(&state)
            holdsKeysFlag.store(!state.contents.isEmpty, ordering: .releasing)
            loadedFlag.store(state.loaded, ordering: .releasing)
            judgedFlag.store(!state.judges.isEmpty, ordering: .releasing)
            return result
        }
    }
}

extension DomainFile {
    struct State {
        var loaded = false
        var disk: [String: PropertyList] = [:]
        /// The version of the file `disk` holds, as this process read or wrote it last: nil for no file (or none
        /// read yet). While a fallback is served (``fallback``) `disk` is that instead; ``servedDigest`` names it.
        var served: FileVersion?
        /// The file on disk as last seen, when it is not `served`: a version that was refused or could not be
        /// read (``OnDisk``).
        var onDisk = OnDisk.served
        var format: PropertyList.Format = .xml
        var pending = DomainEdits()
        /// Whether the ``BackgroundWriter`` holds this file and will take `pending` without being told again:
        /// set when an edit schedules it, cleared when a commit takes the edits (so an edit after a failed
        /// write schedules a retry).
        var scheduled = false
        /// Whether a look at a file the watcher found gone is scheduled, and for which version held.
        var removal = RemovalSettling()
        var inFlight: DomainEdits?
        var contents: [String: PropertyList] = [:]
        /// The observers, in the order they were added, each with its token (``ObserverEntry``).
        var observers = IntrusiveList<ObserverEntry>()
        var nextObserver: UInt64 = 0
        /// Why the current version of the file could not be read, until it is fixed or replaced; stores that
        /// attach to the file later learn of it through ``currentFailure``.
        var failure: DefaultsError?
        /// Whether this process has read a version of the file that parsed (an existing file, not an absent
        /// one): while the file is unreadable, `disk` keeps that last good version (see ``reload``).
        var readGoodVersion = false

        /// The file's stamp as this process last saw it (nil: no file, or one whose stamp could not be read): what
        /// a reload and a write compare the file with.
        var stamp: FileStamp? {
            switch onDisk {
            case .served: served?.stamp
            case .other(let stamp): stamp
            }
        }

        /// The digest of the version `disk` holds, in the change log's numbering (nil: unknown, or no file): the
        /// file's version this process read or wrote, or the change log's version a fallback serves.
        var servedDigest: UInt64? {
            guard let fallback else { return served?.digest }
            return fallback.logged.flatMap { $0 == 0 ? nil : $0 }
        }
        /// What only some files ever hold, out of line: a process keeps up to six layer files for every
        /// domain it opens (one per layer whose directory exists), many of which do not exist (the memory
        /// this saves is in Docs/Benchmarks.md, memory).
        private var rare: RareBox?

        /// The version of the file last found corrupt, so that it is reported once, not on every reload.
        var corruptStamp: FileStamp? {
            get { rare?.fields.corruptStamp }
            set { updateRare { $0.corruptStamp = newValue } }
        }
        /// The version in `disk` as bytes with where each key lies, when it was read from a large XML file:
        /// the next version is then read by parsing only the entries that changed (``XMLDictionaryIndex``).
        /// Dropped when this process writes the file (the next version read is then parsed whole).
        var index: XMLDictionaryIndex? {
            get { rare?.fields.index }
            set { updateRare { $0.index = newValue } }
        }
        /// The version this process last recorded in the file's change log as its own write (its digest, 0 for
        /// a removal): a write over that version knows the log holds it and skips the look at the log's end.
        var loggedVersion: UInt64? {
            get { rare?.fields.loggedVersion }
            set { updateRare { $0.loggedVersion = newValue } }
        }

        /// Takes a version of the file that parsed, or its absence (nil), as the one `disk` holds: the three ways
        /// a version arrives (a whole read, a read of the changed entries, this process's own write) set the same
        /// fields. A version refused before is then no longer on disk.
        mutating func adopt(_ version: FileVersion?, format: PropertyList.Format, index: XMLDictionaryIndex?) {
            served = version
            onDisk = .served
            self.format = format
            self.index = index
            failure = nil
            readGoodVersion = version != nil
            if rare?.fields.refused != nil { refused = nil }
            if rare?.fields.fallback != nil { fallback = nil }
        }

        /// The stores' judges of the file's versions (``FileJudges``); empty for almost every file.
        var judges: FileJudges {
            get { rare?.fields.judges ?? FileJudges() }
            set { updateRare { $0.judges = newValue } }
        }
        /// The version on disk that the judges refused, while it is there: this process keeps serving the last
        /// version it accepted (`disk`), and a write of this process goes onto the refused one (the file as it is).
        var refused: FileJudges.RefusedVersion? {
            get { rare?.fields.refused }
            set { updateRare { $0.refused = newValue } }
        }

        /// What `disk` holds instead of the file, when the file's version was never accepted by this process (its
        /// first version refused, or unreadable): a version the change log gave back, or nothing (the layers
        /// below). Nil when `disk` is a version of the file this process read or wrote.
        var fallback: DomainFile.Fallback? {
            get { rare?.fields.fallback }
            set { updateRare { $0.fallback = newValue } }
        }

        /// Whether `disk` must be given a fallback: a version of the file was read (or found unreadable) and
        /// refused or could not be read, with no version of the file accepted before and no fallback chosen yet.
        var needsFallback: Bool {
            loaded && !readGoodVersion && fallback == nil && (failure != nil || refused != nil)
        }

        private mutating func updateRare(_ change: (inout RareFields) -> Void) {
            var fields = rare?.fields ?? RareFields()
            change(&fields)
            if fields.corruptStamp == nil && fields.index == nil && fields.loggedVersion == nil
                && fields.judges.isEmpty && fields.refused == nil && fields.fallback == nil
            {
                rare = nil
            } else if isKnownUniquelyReferenced(&rare) {
                rare?.fields = fields
            } else {
                rare = RareBox(fields)
            }
        }
    }

    /// Where the file on disk stands against the version a ``DomainFile`` serves.
    enum OnDisk: Equatable {
        /// The file is the version served (``State/served``; nil there: no file).
        case served
        /// The file is a version not served, refused or unreadable: its stamp, nil when not even that could be read.
        case other(FileStamp?)
    }

    fileprivate struct RareFields {
        var corruptStamp: FileStamp?
        var index: XMLDictionaryIndex?
        var loggedVersion: UInt64?
        var judges = FileJudges()
        var refused: FileJudges.RefusedVersion?
        var fallback: DomainFile.Fallback?
    }

    /// ``State``'s rarely set fields; copied on write (a `State` copied and changed does not change another).
    fileprivate final class RareBox {
        var fields: RareFields
        init(_ fields: RareFields) { self.fields = fields }
    }
}
