import Dispatch
import Synchronization

/// What a process holds once for the domain files its stores open: the registry that gives every store of the
/// process one ``DomainFile`` per path, the background writer, the queue of records written beside the files
/// (the change log's versions no LiveDefaults writer logged, the readers' announcements), the directories
/// already swept of dead writers' temporaries, and whether change logs are written.
///
/// The storage layer's share of a ``ProcessContext`` (the store layer adds the watcher). The real process has
/// one, ``system``; a test makes more, and two contexts in one test process meet through the file system as two
/// processes would: their own files, the file lock, their own writers and records. Nothing in the storage
/// layer reaches a process-wide value of its own: a file finds all of this through its context.
final class StorageContext: Sendable {
    /// The running process's: files on the system's file system, an exit handler for what is still pending.
    static let system = StorageContext(fileSystem: SystemFileSystem.shared, isRealProcess: true)

    /// The file system stores of this context are on unless their configuration names another.
    let fileSystem: any DefaultsFileSystem
    /// One ``DomainFile`` per path and file configuration.
    let registry = DomainFileRegistry()
    /// Writes edits shortly after they are made.
    let writer: BackgroundWriter
    /// Records the versions read that no LiveDefaults writer logged.
    let recorder: ExternalVersionRecorder
    /// Publishes which version each watched file runs.
    let announcer: ReaderAnnouncer
    /// When each open file's next temporary change is undone.
    let revertTimers: RevertTimers
    /// The directories swept of dead writers' temporaries.
    let sweeps = TemporarySweeps()
    /// The queue of the records written in the background (the recorder's and the announcer's): one thread
    /// at a time, in order.
    let recordsQueue: RecordsQueue
    /// The context's time: what its recorder pauses on, and the default of its stores' clocks
    /// (``Defaults/Configuration/clock``).
    let clock: any DefaultsClock
    /// Who the context's process is, as its records name it; the running process's unless a test gives another.
    var identity: ProcessIdentity { currentIdentity() }
    /// The context's process id alone (what a temporary's name carries), without reading the rest of the
    /// identity: a write's temporary does not pay for the executable's path.
    let pid: Int32
    /// The machine's processes, as this context's records ask: which still run (``ProcessTable``).
    let processes: any ProcessTable
    /// The one place the choice is made; the recorder and the announcer ask it when they write.
    private let currentIdentity: @Sendable () -> ProcessIdentity
    /// Whether the process writes change logs (on unless a benchmark turns it off to measure its cost).
    var changeLogIsEnabled: Bool {
        get { changeLogSwitch.load(ordering: .relaxed) }
        set { changeLogSwitch.store(newValue, ordering: .relaxed) }
    }
    private let changeLogSwitch = Atomic<Bool>(true)
    /// Whether this context's process has a past bug again (a test's simulated process; never a real one). A mask,
    /// read on every reload and commit: one load and a test, no set's hashing.
    func hasReintroduced(_ bug: ReintroducedBug) -> Bool {
        reintroducedMask & (1 << bug.rawValue) != 0
    }
    private let reintroducedMask: UInt32

    /// A context over `fileSystem`, on `clock`, for the process `identity` (nil: the running process, read when
    /// a record first needs it), among `processes` (the system's unless a test's machine names its own).
    /// `isRealProcess`: whether what is pending at the process's exit is written then
    /// (the exit handlers of the background writer and the recorder); only ``system``'s are, a test's context
    /// stands for a process that has no exit of its own.
    init(
        fileSystem: any DefaultsFileSystem, clock: any DefaultsClock = SystemDefaultsClock.shared,
        identity: ProcessIdentity? = nil, processes: any ProcessTable = SystemProcessTable(),
        isRealProcess: Bool = false, reintroducing reintroduced: Set<ReintroducedBug> = []
    ) {
        reintroducedMask = reintroduced.reduce(0) { $0 | (1 << UInt32($1.rawValue)) }
        self.fileSystem = fileSystem
        self.clock = clock
        pid = identity?.pid ?? CurrentProcess.id
        self.processes = processes
        let currentIdentity = { @Sendable in identity ?? .current }
        self.currentIdentity = currentIdentity
        let records = RecordsQueue(label: "LiveDefaults.records", clock: clock)
        recordsQueue = records
        writer = BackgroundWriter(writesAtExit: isRealProcess)
        recorder = ExternalVersionRecorder(
            queue: records, recordsAtExit: isRealProcess, clock: clock, identity: currentIdentity)
        announcer = ReaderAnnouncer(
            queue: records, sweeps: sweeps, clock: clock, identity: currentIdentity, processes: processes)
        revertTimers = RevertTimers(queue: records)
    }

    /// Waits until the records made in the background so far are written: the change log's entries of versions
    /// read, and the readers' announcements.
    func waitForRecords() {
        recorder.waitUntilIdle()
        announcer.waitUntilIdle()
    }
}
