public import Dispatch
public import Foundation
public import LiveDefaults

/// A clock that moves only when told: ``advance(by:)`` runs, on their queues, the scheduled work that falls
/// due, in the order of its deadlines. A ``pause(for:)`` returns at once, having moved the clock forward by
/// the pause.
///
/// ```swift
/// let clock = ManualDefaultsClock()
/// var configuration = Defaults.Configuration.rooted(at: directory, applicationDomain: "com.example.app")
/// configuration.clock = clock
/// let defaults = try Defaults(configuration: configuration)
/// defaults.set(1, forKey: "A")        // the change notification and the write now wait for the clock
/// clock.advance(by: .milliseconds(1)) // ... and go now
/// ```
public final class ManualDefaultsClock: DefaultsClock {
    private struct Scheduled {
        var deadline: Duration
        var order: Int
        var delay: Duration
        var queue: DispatchQueue
        var work: @Sendable () -> Void
    }

    private struct State {
        var elapsed: Duration = .zero
        var scheduled: [Scheduled] = []
        var nextOrder = 0
        var pauses: [Duration] = []
    }

    private let start: Date
    private let state = Lock(State())

    /// A clock standing at `now`.
    public init(now: Date = Date(timeIntervalSince1970: 1_000_000_000)) {
        start = now
    }

    /// The clock's time: its start plus every advance and pause so far.
    public var now: Date {
        start.addingTimeInterval(state.withLock { $0.elapsed }.timeInterval)
    }

    /// How far the clock has moved since it was made.
    public var elapsed: Duration { state.withLock { $0.elapsed } }

    /// The delays of the work scheduled and not yet run, in the order it was scheduled.
    public var pendingDelays: [Duration] {
        state.withLock { $0.scheduled.sorted { $0.order < $1.order }.map(\.delay) }
    }

    /// Every pause asked of this clock so far, in order.
    public var pauses: [Duration] { state.withLock { $0.pauses } }

    /// Keeps `work` until the clock has moved `delay` past now (a negative delay: the next advance).
    public func schedule(after delay: Duration, on queue: DispatchQueue, _ work: @escaping @Sendable () -> Void) {
        state.withLock { state in
            let deadline = delay > .zero ? state.elapsed + delay : state.elapsed
            state.scheduled.append(
                Scheduled(deadline: deadline, order: state.nextOrder, delay: delay, queue: queue, work: work))
            state.nextOrder += 1
        }
    }

    /// Moves the clock forward by `duration` and records the pause; returns at once.
    public func pause(for duration: Duration) {
        state.withLock { $0.pauses.append(duration) }
        advance(by: duration)
    }

    /// Moves the clock forward by `duration` (nothing for a negative one) and hands every scheduled piece of
    /// work now due to its queue, earliest deadline first. Work scheduled by that work is due only if its
    /// own deadline has passed too, at the next advance.
    public func advance(by duration: Duration) {
        for item in takeDue(advancingBy: duration) { item.queue.async(execute: item.work) }
    }

    /// ``advance(by:)``, and waits until the work it handed out has run: each piece runs on its queue (after
    /// what that queue was already doing) before this returns. What a test of the library's own logic uses in
    /// place of a sleep: after it, a write the clock made due is on disk, a notification it made due posted.
    public func advanceAndWait(by duration: Duration) {
        for item in takeDue(advancingBy: duration) { item.queue.sync(execute: item.work) }
    }

    private func takeDue(advancingBy duration: Duration) -> [Scheduled] {
        state.withLock { state in
            if duration > .zero { state.elapsed += duration }
            let now = state.elapsed
            let due = state.scheduled.filter { $0.deadline <= now }
            state.scheduled.removeAll { $0.deadline <= now }
            return due.sorted { ($0.deadline, $0.order) < ($1.deadline, $1.order) }
        }
    }
}
