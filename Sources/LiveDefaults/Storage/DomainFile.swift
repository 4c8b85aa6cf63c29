import Foundation
import Synchronization

/// The in-process state of one domain file, shared by every store in the process that uses it.
///
/// Readers see `disk ⊕ inFlight ⊕ pending`: what was last read from or written to the file, with this
/// process's unwritten edits on top. Writing goes through ``commit()``, which follows the protocol in
/// `Docs/Reliability.md`: exclusive `flock` on a sidecar lock file, re-read when the file changed, apply only
/// this process's edits, temp file + rename.
final class DomainFile: Sendable {
    enum Event: Sendable {
        /// Keys whose value in this file changed, by this process (`.local`) or another (`.external`).
        case changed([KeyDelta], ChangeOrigin)
        /// One key changed by this process's `set` (no array to make on the path of every `set`).
        case changedKey(KeyDelta, ChangeOrigin)
        case failed(DefaultsError)
    }

    typealias Observer = @Sendable (Event) -> Void

    /// An observer of the file, with its token: a node of the file's observers (an ``IntrusiveList`` in the
    /// order they were added; not an array of closures: see there). The list is made anew on every change (a
    /// store has a handful of observers of a file at most), so a notification takes it as it is under the
    /// lock and walks it outside.
    final class ObserverEntry: IntrusiveListNode, @unchecked Sendable {
        // @unchecked: `next` is set only while the list holding the node is built, under the state lock; a
        // list once published in the state is never changed (a change builds new nodes).
        let token: UInt64
        let observer: Observer
        var next: ObserverEntry?

        init(_ token: UInt64, _ observer: @escaping Observer) {
            self.token = token
            self.observer = observer
        }
    }

    /// `list` without the observer of `excluded` (nil: none left out), in new nodes.
    private static func copy(_ list: IntrusiveList<ObserverEntry>, without excluded: UInt64? = nil)
        -> IntrusiveList<ObserverEntry>
    {
        list.filter({ $0.token != excluded }, copying: { ObserverEntry($0.token, $0.observer) })
    }

    let path: String
    /// Files created for another user (a store opened with `init?(user:)` by root) are handed to them.
    let owner: (UserID, GroupID)?
    /// The time this file's waits follow (the settle pauses, the background writer's delay) and the clock
    /// that names a kept corrupt copy: that of the stores sharing the file (``DomainFileRegistry`` gives a
    /// store with another clock a file of its own).
    let clock: any DefaultsClock
    /// The file system the file lives on (``Defaults/Configuration/fileSystem``): every call the file makes goes
    /// through it.
    let fileSystem: any DefaultsFileSystem

    /// The file's state and the flags mirroring it, with one owner (see ``DomainFileState``).
    let state = DomainFileState()
    /// Serialises this process's disk operations on the file (commit and reload); `flock` does the same
    /// between processes.
    let diskLock = CriticalSection()
    /// The events found under `diskLock` and not yet told to the observers (they are told after the lock
    /// is released): ``settle()`` waits for them.
    let deliveries = Deliveries()

    /// What the process holds for its files: the background writer, the records queue, the sweeps.
    let context: StorageContext
    /// Whether the process looked for expired temporary changes before its first load
    /// (``undoExpiredOnFirstLook()``).
    let revertsLooked = Atomic<Bool>(false)
    /// How many pending reverts the file's metrics last reported (``reportPendingReverts(_:)``).
    let reportedPendingReverts = Atomic<Int>(0)
    /// The registry that made the file, which forgets it when it goes.
    private let registry: DomainFileRegistry?

    /// A file of `context` (on its file system unless `fileSystem` names another). Stores get theirs from the
    /// context's registry; a file made here directly, in no registry, is one more reader or writer of its own
    /// for the same path.
    init(
        path: String, owner: (UserID, GroupID)? = nil, clock: any DefaultsClock = SystemDefaultsClock.shared,
        fileSystem: (any DefaultsFileSystem)? = nil, context: StorageContext, registry: DomainFileRegistry? = nil
    ) {
        self.path = path
        self.owner = owner
        self.clock = clock
        self.fileSystem = fileSystem ?? context.fileSystem
        self.context = context
        self.registry = registry
    }

    deinit {
        registry?.forget(path: path, file: ObjectIdentifier(self))
    }

    var lockPath: String {
        let directory = PathComponents.directory(of: path)
        return "\(directory)/.\(PathComponents.name(of: path)).lock"
    }

    // MARK: Observers

    func addObserver(_ observer: @escaping Observer) -> UInt64 {
        state.change { state in
            state.nextObserver += 1
            var observers = Self.copy(state.observers)
            observers.append(ObserverEntry(state.nextObserver, observer))
            state.observers = observers
            return state.nextObserver
        }
    }

    func removeObserver(_ token: UInt64) {
        state.change { state in
            state.observers = Self.copy(state.observers, without: token)
        }
    }

    /// Calls observers outside the lock (they may read this file again). Failures are not logged here: the
    /// stores that observe the file log them to their own loggers, and a failed write of a file no store
    /// observes is reported to the caller of `synchronize()` or `flush()`.
    /// Tells the observers of events found under the disk lock (counted there by `deliveries.begin()`).
    ///
    /// `then` runs after the observers were told and before the delivery is counted done, so that a thread that
    /// waits in ``settle()`` finds what it did (the change log's recorder given the version) done too.
    func deliver(_ events: [Event], then: (() -> Void)? = nil) {
        guard !events.isEmpty else {
            then?()
            return
        }
        Deliveries.whileDelivering {
            for event in events { notify(event) }
        }
        then?()
        deliveries.end()
    }

    func notify(_ event: Event) {
        let observers = state.read { $0.observers }
        for entry in observers { entry.observer(event) }
    }

    // MARK: Helpers

    static func overlay(
        _ disk: [String: PropertyList], _ inFlight: DomainEdits?, _ pending: DomainEdits
    ) -> [String: PropertyList] {
        var result = disk
        if let inFlight { result = inFlight.applied(to: result) }
        if !pending.isEmpty { result = pending.applied(to: result) }
        return result
    }
}
