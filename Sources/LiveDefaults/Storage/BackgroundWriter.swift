import Dispatch
import Foundation

/// Persists edits shortly after they are made, so that nobody needs to call `synchronize()`.
///
/// Edits are coalesced: the first edit to a clean file schedules one write ``delay`` later on a single
/// serial queue, and every edit made until then rides along. Files with unwritten edits are held strongly
/// here, so edits survive the store that made them; at normal process exit an `atexit` handler writes
/// whatever is still pending.
final class BackgroundWriter: Sendable {
    static let shared = BackgroundWriter()

    /// How long the writer waits for more edits before it writes. Short enough that another process sees
    /// the change within a few milliseconds, long enough to turn a burst of sets into one file write.
    static let delay: DispatchTimeInterval = .microseconds(500)

    private struct State {
        var dirty: [ObjectIdentifier: DomainFile] = [:]
        /// Files the background queue is writing right now; ``writeAll()`` commits them too, which waits for
        /// that write (commits of one file are serialised) so that nothing is still on its way when it returns.
        var writing: [ObjectIdentifier: DomainFile] = [:]
        var scheduled = false
        var exitHandlerInstalled = false
    }

    private let state = Lock(State())
    private let queue = DispatchQueue(label: "LiveDefaults.writer", qos: .utility)

    func schedule(_ file: DomainFile) {
        let (mustSchedule, mustInstall) = state.withLock { state in
            state.dirty[ObjectIdentifier(file)] = file
            let mustSchedule = !state.scheduled
            state.scheduled = true
            let mustInstall = !state.exitHandlerInstalled
            state.exitHandlerInstalled = true
            return (mustSchedule, mustInstall)
        }
        if mustInstall { atexit { _ = BackgroundWriter.shared.writeAll() } }
        if mustSchedule { queue.asyncAfter(deadline: .now() + Self.delay) { self.writeScheduled() } }
    }

    private func writeScheduled() {
        let files = state.withLock { state in
            state.scheduled = false
            let files = Array(state.dirty.values)
            state.dirty.removeAll()
            for file in files { state.writing[ObjectIdentifier(file)] = file }
            return files
        }
        // Failures are reported to the files' observers and logged; the edits stay pending in the file, and
        // the file stays listed here, so the next edit or synchronize() retries them.
        for file in files {
            let failed: Bool
            do {
                try file.commit()
                failed = false
            } catch { failed = true }
            state.withLock { state in
                state.writing.removeValue(forKey: ObjectIdentifier(file))
                if failed { state.dirty[ObjectIdentifier(file)] = file }
            }
        }
    }

    /// Writes every pending edit of the process now, on the calling thread, and returns the failures with
    /// the file each happened to (a store reports only its own).
    @discardableResult
    func writeAll() -> [(path: String, error: DefaultsError)] {
        let files = state.withLock { state in
            var files = state.dirty
            state.dirty.removeAll()
            files.merge(state.writing) { current, _ in current }
            return Array(files.values)
        }
        var failures: [(path: String, error: DefaultsError)] = []
        for file in files {
            do throws(DefaultsError) {
                try file.commit()
            } catch {
                failures.append((file.path, error))
                state.withLock { $0.dirty[ObjectIdentifier(file)] = file }
            }
        }
        return failures
    }
}
