import Dispatch
import Foundation

/// Publishes this process's announcement for each domain file a watching store holds (``ReaderAnnouncements``),
/// off the path that reads and delivers versions: a file that adopts or refuses a version tells the announcer,
/// which writes the file's announcement shortly after, once for a burst. A process that cannot write it (a
/// read-only directory) works as before; only `defaults readers` does not list it.
final class ReaderAnnouncer: Sendable {
    /// - Parameters:
    ///   - queue: The process's records queue (shared with the change log's ``ExternalVersionRecorder``).
    ///   - sweeps: Where the process swept dead writers' leftovers: an announcement's directory is swept once.
    ///   - clock: The wall-clock time an announcement's `since` and refusal times are read from.
    ///   - identity: Who announces (asked when an announcement is written).
    ///   - processes: Which processes run: a dead one's announcements and temporaries are swept.
    init(
        queue: RecordsQueue, sweeps: TemporarySweeps, clock: any DefaultsClock,
        identity: @escaping @Sendable () -> ProcessIdentity, processes: any ProcessTable
    ) {
        self.queue = queue
        self.sweeps = sweeps
        self.clock = clock
        self.identity = identity
        self.processes = processes
    }

    private let clock: any DefaultsClock
    private let identity: @Sendable () -> ProcessIdentity
    private let processes: any ProcessTable

    private struct Entry {
        weak var file: DomainFile?
        /// How many watching stores hold the file.
        var holders: Int
        /// When its announcement is due (the records queue's nanoseconds), if a version is waiting to be announced.
        var due: UInt64?
        /// Whether its file was written (else there is nothing to take away).
        var published = false
        /// When it was last written (the records queue's nanoseconds).
        var lastPublished: UInt64 = 0
        /// What was announced last: the version applied, since when, the last refusal.
        var applied: UInt64?
        var since: Double = 0
        var refused: ReaderAnnouncement.Refusal?
        /// The keys each store of the process that holds the file pins by its environment; nil while none does
        /// (a reference: an entry of a store without an environment layer instantiates none of its types).
        var pins: Pins?
    }

    /// The keys each store pins by its environment, by store: each store's keys described when the announcement
    /// is written, on the announcer's queue (describing a deployment's 200 variables is off the open that finds
    /// them). Changed only under the announcer's lock.
    ///
    /// A list, not a dictionary keyed by the store's `ObjectIdentifier`: a process has a store or two per file,
    /// and that dictionary's storage type, instantiated on the open that finds a deployment's variables, cost the
    /// runtime a scan of every loaded conformance for `Hashable` (see ``Announcements/entries``).
    private final class Pins: @unchecked Sendable {
        private(set) var byStore: [Pinned] = []

        /// One store's pins: their description, and the store's number for them (new pins, a new number).
        struct Pinned {
            var store: ObjectIdentifier
            var generation: UInt64
            var keys: @Sendable () -> [String: String]
        }

        /// The generation of `store`'s pins, if it pins keys.
        func generation(of store: ObjectIdentifier) -> UInt64? {
            byStore.first { $0.store == store }?.generation
        }

        /// Sets `store`'s pins.
        func set(_ pinned: Pinned) {
            if let index = byStore.firstIndex(where: { $0.store == pinned.store }) {
                byStore[index] = pinned
            } else {
                byStore.append(pinned)
            }
        }

        /// Takes `store`'s pins away; whether it had any.
        func remove(_ store: ObjectIdentifier) -> Bool {
            guard let index = byStore.firstIndex(where: { $0.store == store }) else { return false }
            byStore.remove(at: index)
            return true
        }

        /// Every store's pinned keys (`stores`, taken from `byStore` under the lock, described outside it), each
        /// with what sets it (the first store's word where two pin one key), at most
        /// ``ReaderAnnouncements/maximumPinnedKeys`` of them, the first by name.
        static func described(_ stores: [@Sendable () -> [String: String]]) -> [String: String] {
            var pinned: [String: String] = [:]
            for keys in stores { pinned.merge(keys()) { first, _ in first } }
            guard pinned.count > ReaderAnnouncements.maximumPinnedKeys else { return pinned }
            let kept = pinned.keys.sorted().prefix(ReaderAnnouncements.maximumPinnedKeys)
            return Dictionary(uniqueKeysWithValues: kept.map { ($0, pinned[$0] ?? "") })
        }
    }

    /// The announced files, and the work waiting for the queue.
    ///
    /// The queue gets one block at a time, not one per file: a block per version or per dropped store (a
    /// thousand stores made and dropped in a row) left that many blocks waiting, and libdispatch keeps what it
    /// allocated for them cached, which the resource-hygiene test saw as memory kept.
    private struct Announcements {
        /// By the file's key (``DefaultsFileSystem/key(forPath:)``): a dictionary keyed by `ObjectIdentifier`
        /// weighed on a fresh process's first open, the runtime instantiating its storage type with a scan of
        /// every loaded conformance for `Hashable` (Docs/Benchmarks.md); `String`'s is known by then.
        var entries: [String: Entry] = [:]
        /// When the pending drain runs (the records queue's nanoseconds), if one is on the queue.
        var drainAt: UInt64?
        /// Announcements of files let go, to take away.
        var removals: [(path: String, fileSystem: any DefaultsFileSystem)] = []
    }

    private let state = Lock(Announcements())
    /// The process's background records, one at a time.
    private let queue: RecordsQueue
    private let sweeps: TemporarySweeps

    /// A watching store holds `file`: announce it (the first holder).
    func start(_ file: DomainFile) {
        let first = state.withLock { state in
            let key = Self.key(file)
            if state.entries[key] != nil {
                state.entries[key]?.holders += 1
                // The file of a path, made again after its last holder went: the entry follows the live one.
                if state.entries[key]?.file !== file { state.entries[key]?.file = file }
                return false
            }
            state.entries[key] = Entry(file: file, holders: 1)
            return true
        }
        if first { changed(file) }
    }

    /// A watching store (`store`) let `file` go: its pins go with it, and the last holder takes the announcement
    /// away.
    func stop(_ file: DomainFile, by store: ObjectIdentifier) {
        let path = Self.file(for: file.path, pid: identity().pid)
        let fileSystem = file.fileSystem
        let (drainNow, unpinned) = state.withLock { state -> (Bool, Bool) in
            let key = Self.key(file)
            guard var entry = state.entries[key] else { return (false, false) }
            entry.holders -= 1
            let unpinned = entry.pins?.remove(store) ?? false
            if entry.holders > 0 {
                state.entries[key] = entry
                return (false, unpinned)
            }
            state.entries.removeValue(forKey: key)
            guard entry.published else { return (false, false) }
            state.removals.append((path, fileSystem))
            return (schedule(&state, at: 0), false)
        }
        if drainNow { queue.async { self.drain() } }
        if unpinned { changed(file) }
    }

    /// The store `store` pins keys of `file` by its environment — `keys` describes them, each with what sets it,
    /// and `generation` numbers them (the store's next pins, the next number) — or no longer pins any (`keys`
    /// nil): new pins are announced with the file's next announcement, which is written soon. Cheap when nothing
    /// changed (a store tells every file at each rebuild): the description is made only when one is written.
    func pin(
        _ file: DomainFile, by store: ObjectIdentifier, generation: UInt64, keys: (@Sendable () -> [String: String])?
    ) {
        let isNew = state.withLock { state -> Bool in
            let key = Self.key(file)
            guard let entry = state.entries[key] else { return false }
            guard let keys else { return entry.pins?.remove(store) ?? false }
            guard entry.pins?.generation(of: store) != generation else { return false }
            let pins = entry.pins ?? Pins()
            pins.set(Pins.Pinned(store: store, generation: generation, keys: keys))
            state.entries[key]?.pins = pins
            return true
        }
        if isNew { changed(file) }
    }

    /// `file` adopted or refused a version: its announcement is written soon, if it is announced.
    func changed(_ file: DomainFile) {
        let key = Self.key(file)
        let now = queue.now()
        let drainAt = state.withLock { state -> UInt64? in
            guard let entry = state.entries[key], entry.due == nil else { return nil }
            let due = RecordPacing.due(now: now, lastWritten: entry.published ? entry.lastPublished : nil)
            state.entries[key]?.due = due
            return schedule(&state, at: due) ? due : nil
        }
        guard let drainAt else { return }
        queue.run(at: drainAt) { self.drain() }
    }

    /// Writes the announcements scheduled so far (and takes away those of files let go), and waits.
    func waitUntilIdle() {
        queue.sync {}
        queue.sync { drain(everything: true) }
    }

    /// Whether a drain must be put on the queue for work due at `due`: none is pending, or the pending one is
    /// later. (A drain superseded so still runs, and finds less or nothing to do.)
    private func schedule(_ state: inout Announcements, at due: UInt64) -> Bool {
        if let drainAt = state.drainAt, drainAt <= due { return false }
        state.drainAt = due
        return true
    }

    /// On the queue: takes away the announcements of files let go, writes those due (or, with `everything`,
    /// every one waiting), and puts the next drain on the queue for the rest.
    private func drain(everything: Bool = false) {
        let now = queue.now()
        let (removals, ready, next) = state.withLock { state in
            state.drainAt = nil
            let removals = state.removals
            state.removals = []
            var ready: [String] = []
            var next: UInt64?
            for (key, entry) in state.entries {
                guard let due = entry.due else { continue }
                if everything || due <= now {
                    ready.append(key)
                } else {
                    next = min(next ?? due, due)
                }
            }
            if let due = next, !schedule(&state, at: due) { next = nil }
            return (removals, ready, next)
        }
        if let next { queue.run(at: next) { self.drain() } }
        for removal in removals { try? removal.fileSystem.remove(removal.path) }
        for key in ready { publish(key) }
    }

    /// The announcement file of process `pid` for the domain file `path`.
    static func file(for path: String, pid: Int32) -> String {
        "\(ReaderAnnouncements.directory(forDomainFile: path))/"
            + ReaderAnnouncements.name(forDomainFile: path, pid: pid)
    }

    /// The key of `file`'s entry: its path, and its file system when it is not the system's.
    private static func key(_ file: DomainFile) -> String {
        file.fileSystem.key(forPath: file.path)
    }

    private func publish(_ key: String) {
        guard
            let file = state.withLock({ state -> DomainFile? in
                state.entries[key]?.due = nil
                return state.entries[key]?.file
            })
        else { return }
        // A version read may be another process's temporary change: its revert is scheduled here too.
        file.scheduleReverts()
        let (applied, refused, held) = file.announcedVersions
        let fallback = held.map { $0.logged == nil ? ReaderAnnouncement.Fallback.defaults : .log }
        let now = clock.now.timeIntervalSince1970
        let identity = identity()
        let taken = state.withLock { state -> (ReaderAnnouncement, [@Sendable () -> [String: String]])? in
            guard var entry = state.entries[key] else { return nil }
            if entry.applied != applied {
                entry.applied = applied
                entry.since = now
            }
            entry.published = true
            entry.lastPublished = queue.now()
            if let refused, entry.refused?.version != FileVersion.logNumber(refused.version) {
                entry.refused = ReaderAnnouncement.Refusal(
                    version: FileVersion.logNumber(refused.version), reason: refused.reason, time: now)
            }
            state.entries[key] = entry
            let announcement = ReaderAnnouncement(
                pid: identity.pid, start: identity.start, executable: identity.executable, applied: applied,
                since: entry.since,
                refused: entry.refused, fallback: fallback)
            return (announcement, entry.pins.map { $0.byStore.map(\.keys) } ?? [])
        }
        guard let (unpinned, pins) = taken else { return }
        var announcement = unpinned
        if !pins.isEmpty { announcement.pinned = Pins.described(pins) }
        let path = Self.file(for: file.path, pid: identity.pid)
        let fileSystem = file.fileSystem
        // Readable by others: `defaults readers` may run as another user (an operator's shell, root).
        do throws(SystemError) {
            // Not the domain's directory: a file whose directory is gone is not announced.
            let directory = PathComponents.directory(of: path)
            try fileSystem.makeDirectoryIfMissing(directory, permissions: 0o755)
            // What dead processes left there, once per directory: temporaries and their announcements.
            let processes = processes
            sweeps.sweepOnce(directory, on: fileSystem, processes: processes) { directory, fileSystem in
                ReaderAnnouncements.removeDead(
                    inDirectory: directory, on: fileSystem, processes: processes, except: identity.pid)
            }
            _ = try fileSystem.replaceAtomically(
                path, with: ReaderAnnouncements.encode(announcement), owner: file.owner, readableByOthers: true,
                flush: false, pid: identity.pid)
        } catch {
            // A directory this process cannot write: it reads and applies as before, unlisted.
        }
    }
}
