import Dispatch
import Foundation

/// The queue of the records a process writes in the background (``ExternalVersionRecorder``'s and
/// ``ReaderAnnouncer``'s: one thread at a time, in order), and the time they are paced by.
///
/// Every hand-off goes through the context's clock, so that a simulated machine runs the records when its
/// scheduler chooses and at its time; the real process's clock hands them to Dispatch as before. The time is
/// monotonic nanoseconds: Dispatch's uptime on the system clock (a wall-clock step must not delay a record), the
/// clock's time since the queue was made on any other (a test's clock only moves forward).
struct RecordsQueue: Sendable {
    let queue: DispatchQueue
    let clock: any DefaultsClock
    private let origin: Date
    private let isSystemClock: Bool

    init(label: String, clock: any DefaultsClock) {
        queue = DispatchQueue(label: label, qos: .utility)
        self.clock = clock
        origin = clock.now
        isSystemClock = clock === SystemDefaultsClock.shared
    }

    /// Now, in the queue's nanoseconds.
    func now() -> UInt64 {
        if isSystemClock { return DispatchTime.now().uptimeNanoseconds }
        let elapsed = clock.now.timeIntervalSince(origin)
        // Bounded before the conversion: a clock set back reads as the origin, a far one saturates.
        guard elapsed.isFinite, elapsed > 0 else { return 0 }
        return elapsed >= 1e9 ? 1_000_000_000 * 1_000_000_000 : UInt64(elapsed * 1e9)
    }

    /// Runs `work` on the queue soon (after the work handed to it before).
    func async(_ work: @escaping @Sendable () -> Void) {
        clock.schedule(after: .zero, on: queue, work)
    }

    /// Runs `work` on the queue once the queue's time reaches `due`.
    func run(at due: UInt64, _ work: @escaping @Sendable () -> Void) {
        let now = now()
        let wait = due > now ? Duration.nanoseconds(Int64(clamping: due - now)) : .zero
        clock.schedule(after: wait, on: queue, work)
    }

    /// Runs `work` on the queue and waits for it (after the work the queue was given before, which a simulated
    /// machine's scheduler may still hold: the caller then runs what is pending itself, see the recorder's and the
    /// announcer's `waitUntilIdle`).
    func sync(_ work: () -> Void) {
        queue.sync(execute: work)
    }
}
