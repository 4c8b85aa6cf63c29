import Foundation

/// When each open domain file of the process next has a temporary change to undo: one timer a file, at its
/// earliest expiry, on the file's clock (so that a simulated machine's `advance(by:)` or a test's manual clock
/// moves it). Every process that has the domain open schedules it; the first to fire applies the revert and the
/// others find it done (``DomainFile/applyExpiredReverts()``).
final class RevertTimers: Sendable {
    private struct Scheduled {
        weak var file: DomainFile?
        var expiry: Date
    }

    private let scheduled = Lock<[ObjectIdentifier: Scheduled]>([:])
    private let queue: RecordsQueue

    /// - Parameter queue: The process's records queue: reverts run there, one at a time, off every reader's path.
    init(queue: RecordsQueue) {
        self.queue = queue
    }

    /// How long after a failed revert (a write that failed: a full disk, an I/O error) it is tried again: long
    /// enough that a lasting failure reports once in a while, not every second.
    static let retryDelay = Duration.seconds(10)

    /// Makes sure `file`'s reverts are applied at `expiry` (or earlier, when a timer for an earlier one is set).
    func schedule(_ file: DomainFile, at expiry: Date) {
        let id = ObjectIdentifier(file)
        let wanted = scheduled.withLock { scheduled in
            if let known = scheduled[id], known.file != nil, known.expiry <= expiry { return false }
            scheduled[id] = Scheduled(file: file, expiry: expiry)
            return true
        }
        guard wanted else { return }
        let delay = Duration.seconds(max(0, expiry.timeIntervalSince(file.clock.now)))
        file.clock.schedule(after: delay, on: queue.queue) { [weak self, weak file] in
            self?.fire(id, file, expiry: expiry)
        }
    }

    private func fire(_ id: ObjectIdentifier, _ file: DomainFile?, expiry: Date) {
        let current = scheduled.withLock { scheduled in
            guard scheduled[id]?.expiry == expiry else { return false }
            scheduled[id] = nil
            return true
        }
        // A timer replaced by an earlier one: that one applies what is due and schedules the rest.
        guard current, let file else { return }
        if let next = file.applyExpiredReverts() { schedule(file, at: next) }
    }
}
