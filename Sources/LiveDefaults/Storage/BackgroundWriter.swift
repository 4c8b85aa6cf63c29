import Dispatch
import Foundation

/// Persists edits shortly after they are made, so that nobody needs to call `synchronize()`.
///
/// Edits are coalesced: the first edit to a clean file schedules one write ``delay`` later on a single
/// serial queue, and every edit made until then rides along. The delay is measured by the file's clock
/// (``DomainFile/clock``): files are grouped by clock, each group with its own scheduled write, so that a
/// store on a `ManualDefaultsClock` writes when its test advances the clock. Files with unwritten edits
/// are held strongly here, so edits survive the store that made them; at normal process exit an `atexit`
/// handler writes whatever is still pending.
final class BackgroundWriter: Sendable {
    static let shared = BackgroundWriter()

    /// How long the writer waits for more edits before it writes. Short enough that another process sees
    /// the change within a few milliseconds, long enough to turn a burst of sets into one file write.
    static let delay: Duration = .microseconds(500)

    private struct State {
        var dirty: [ObjectIdentifier: DomainFile] = [:]
        /// Files being written right now (by the background queue or by any thread's ``writeAll()``), with how
        /// many writers have each. ``writeAll()`` commits them too, which waits for those writes (commits of
        /// one file are serialised) and meets their failure itself, so that nothing is still on its way, and
        /// no failure is someone else's secret, when it returns.
        var writing: [ObjectIdentifier: (file: DomainFile, writers: Int)] = [:]
        /// The clocks (by identity) whose group has a write scheduled.
        var scheduled: Set<ObjectIdentifier> = []
        var exitHandlerInstalled = false
    }

    private let state = Lock(State())
    private let queue = DispatchQueue(label: "LiveDefaults.writer", qos: .utility)

    func schedule(_ file: DomainFile) {
        let clock = file.clock
        let group = ObjectIdentifier(clock)
        let (mustSchedule, mustInstall) = state.withLock { state in
            state.dirty[ObjectIdentifier(file)] = file
            let mustSchedule = state.scheduled.insert(group).inserted
            let mustInstall = !state.exitHandlerInstalled
            state.exitHandlerInstalled = true
            return (mustSchedule, mustInstall)
        }
        if mustInstall { atexit { _ = BackgroundWriter.shared.writeAll() } }
        if mustSchedule { clock.schedule(after: Self.delay, on: queue) { self.writeScheduled(group) } }
    }

    /// Writes the pending files of one clock's group.
    private func writeScheduled(_ group: ObjectIdentifier) {
        let files = state.withLock { state in
            state.scheduled.remove(group)
            let files = state.dirty.values.filter { ObjectIdentifier($0.clock) == group }
            for file in files {
                state.dirty.removeValue(forKey: ObjectIdentifier(file))
                Self.begin(file, in: &state)
            }
            return files
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

    /// Writes every pending edit of the process now, on the calling thread, and returns the failures with
    /// the file each happened to (a store reports only its own).
    @discardableResult
    func writeAll() -> [(path: String, error: DefaultsError)] {
        let files = state.withLock { state in
            var files = state.dirty
            state.dirty.removeAll()
            for (id, entry) in state.writing where files[id] == nil { files[id] = entry.file }
            for file in files.values { Self.begin(file, in: &state) }
            return Array(files.values)
        }
        var failures: [(path: String, error: DefaultsError)] = []
        for file in files {
            var failed = false
            do throws(DefaultsError) {
                try file.commit()
            } catch {
                failures.append((file.path, error))
                failed = true
            }
            state.withLock { Self.end(file, failed: failed, in: &$0) }
        }
        return failures
    }
}
