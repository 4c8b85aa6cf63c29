import Dispatch
import Foundation

/// Persists edits shortly after they are made, so that nobody needs to call `synchronize()`.
///
/// Edits are coalesced: the first edit to a clean file schedules one write ``delay`` later on a single
/// serial queue, and every edit made until then rides along. While edits keep coming, writes are spaced
/// apart instead (``pacing``). The delay is measured by the file's clock
/// (``DomainFile/clock``): files are grouped by clock, each group with its own scheduled write, so that a
/// store on a `ManualDefaultsClock` writes when its test advances the clock. Files with unwritten edits
/// are held strongly here, so edits survive the store that made them; at normal process exit an `atexit`
/// handler writes whatever is still pending (the real process's writer: ``StorageContext/system``).
final class BackgroundWriter: Sendable {
    /// Whether the first scheduled write installs the exit handler (the real process's writer only).
    private let writesAtExit: Bool

    init(writesAtExit: Bool) {
        self.writesAtExit = writesAtExit
    }

    /// When a write follows an edit: ``SustainedSpacing/delay`` after the first edit to a clean file (short
    /// enough that another process sees the change within a few milliseconds, long enough to turn a burst of
    /// sets into one file write); while edits keep coming, writes ``SustainedSpacing/spacing`` apart, so that a
    /// loop of `set`s is written a few hundred times a second rather than after every delay, whose file rewrites,
    /// `fdatasync`s and watcher wake-ups would compete with the loop itself for a small machine's cores
    /// (Docs/Benchmarks.md). A stream of sets reaches the disk and other processes at most the spacing late.
    static let pacing = SustainedSpacing(delay: .microseconds(500), spacing: .milliseconds(5))
    /// How long the writer waits for more edits after the first edit to a clean file.
    static var delay: Duration { pacing.delay }

    private struct State {
        var dirty: [ObjectIdentifier: DomainFile] = [:]
        /// Files being written right now (by the background queue or by any thread's ``writeAll()``), with how
        /// many writers have each. ``writeAll()`` commits them too, which waits for those writes (commits of
        /// one file are serialised) and meets their failure itself, so that nothing is still on its way, and
        /// no failure is someone else's secret, when it returns.
        var writing: [ObjectIdentifier: (file: DomainFile, writers: Int)] = [:]
        /// The clocks (by identity, held weakly) whose group has a write scheduled. Weakly, as `lastWriteEnded`: a
        /// manual clock dropped before it ran its write (its files taken by a `synchronize()`) leaves its entry,
        /// and a clock made later at the same address must not take it for its own, or its writes never run.
        var scheduled: [ObjectIdentifier: Weak] = [:]
        /// When, on its clock, each group's last scheduled write ended, with the clock held weakly: an
        /// identifier is an address, which a clock made after another's end may take over (a test's fresh
        /// manual clock then inherited the spacing of a gone one).
        var lastWriteEnded: [ObjectIdentifier: (clock: Weak, ended: Date)] = [:]
        var exitHandlerInstalled = false
    }

    struct Weak {
        weak var clock: (any DefaultsClock)?
    }

    private let state = Lock(State())
    private let queue = DispatchQueue(label: "LiveDefaults.writer", qos: .utility)

    func schedule(_ file: DomainFile) {
        let clock = file.clock
        let group = ObjectIdentifier(clock)
        let (mustSchedule, mustInstall, lastWriteEnded) = state.withLock { state in
            state.dirty[ObjectIdentifier(file)] = file
            let mustSchedule = state.scheduled[group]?.clock !== clock
            if mustSchedule { state.scheduled[group] = Weak(clock: clock) }
            let mustInstall = !state.exitHandlerInstalled
            state.exitHandlerInstalled = true
            return (mustSchedule, mustInstall, mustSchedule ? Self.lastWriteEnded(of: clock, in: state) : nil)
        }
        if mustInstall && writesAtExit { atexit { _ = StorageContext.system.writer.writeAll() } }
        if mustSchedule {
            let wait = Self.pacing.wait(sinceLast: lastWriteEnded.map { clock.now.timeIntervalSince($0) })
            clock.schedule(after: wait, on: queue) { self.writeScheduled(group, clock: clock) }
        }
    }

    /// When the last scheduled write of `clock`'s group ended, on that clock (nil before the first).
    func lastWriteEnded(on clock: any DefaultsClock) -> Date? {
        state.withLock { Self.lastWriteEnded(of: clock, in: $0) }
    }

    private static func lastWriteEnded(of clock: any DefaultsClock, in state: State) -> Date? {
        guard let entry = state.lastWriteEnded[ObjectIdentifier(clock)], entry.clock.clock === clock else { return nil }
        return entry.ended
    }

    /// Writes the pending files of one clock's group (none, when a `synchronize()` took them first).
    private func writeScheduled(_ group: ObjectIdentifier, clock: any DefaultsClock) {
        let files: [DomainFile] = state.withLock { state in
            state.scheduled.removeValue(forKey: group)
            return Self.take(from: &state) { ObjectIdentifier($0.clock) == group }
        }
        // Failures are reported to the files' observers; the edits stay pending in the file, and the file
        // stays listed here, so the next edit or synchronize() retries them.
        for file in files {
            let failed: Bool
            do {
                try file.commit()
                failed = false
            } catch { failed = true }
            state.withLock { Self.end(file, failed: failed, in: &$0) }
        }
        let ended = clock.now
        state.withLock { $0.lastWriteEnded[group] = (Weak(clock: clock), ended) }
    }

    /// Takes the pending files `belongs` accepts, and those of them another thread is writing right now, each
    /// begun: a write that returns leaves nothing of its files still on its way. (A `synchronize()` elsewhere may
    /// take a group's file while it is written; the group's scheduled write, the one a manual clock's
    /// `advanceAndWait` waits for, then waits for that commit instead of returning before the file is on disk.)
    private static func take(from state: inout State, _ belongs: (DomainFile) -> Bool) -> [DomainFile] {
        var files: [ObjectIdentifier: DomainFile] = [:]
        for (id, file) in state.dirty where belongs(file) {
            files[id] = file
            state.dirty.removeValue(forKey: id)
        }
        for (id, entry) in state.writing where files[id] == nil && belongs(entry.file) { files[id] = entry.file }
        for file in files.values { begin(file, in: &state) }
        // In path order, not the dictionary's, which follows the files' addresses: a simulated machine's seed then
        // gives the same order of writes, and of all that follows them, in every run.
        return files.values.sorted { $0.path < $1.path }
    }

    private static func begin(_ file: DomainFile, in state: inout State) {
        let id = ObjectIdentifier(file)
        state.writing[id] = (file, (state.writing[id]?.writers ?? 0) + 1)
    }

    private static func end(_ file: DomainFile, failed: Bool, in state: inout State) {
        let id = ObjectIdentifier(file)
        if let entry = state.writing[id] {
            state.writing[id] = entry.writers > 1 ? (file, entry.writers - 1) : nil
        }
        if failed { state.dirty[id] = file }
    }

    /// Writes every pending edit of the process on `fileSystem` (nil: on every file system) now, on the
    /// calling thread, and returns the failures with the file each happened to (a store reports only its own).
    ///
    /// Limited to a file system: a store's `synchronize()` drives the writes of its own file system only, so
    /// that a test's store on an in-memory or fault-injecting one never writes, retries or meets the failures of
    /// another test's (the fault suite runs side by side).
    @discardableResult
    func writeAll(on fileSystem: (any DefaultsFileSystem)? = nil) -> [(file: DomainFile, error: DefaultsError)] {
        let files = state.withLock { state in
            Self.take(from: &state) { fileSystem == nil || $0.fileSystem === fileSystem }
        }
        var failures: [(file: DomainFile, error: DefaultsError)] = []
        for file in files {
            var failed = false
            do throws(DefaultsError) {
                try file.commit()
            } catch {
                failures.append((file, error))
                failed = true
            }
            state.withLock { Self.end(file, failed: failed, in: &$0) }
        }
        return failures
    }
}
