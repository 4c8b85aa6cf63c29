public import Dispatch
public import Foundation

/// The time a store follows: every delay, pause and timestamp the library takes comes from its clock
/// (``Defaults/Configuration/clock``, ``FileWatcher/init(polling:pollInterval:clock:)``).
///
/// - the short wait that gathers a burst of changes into one ``Defaults/didChangeNotification`` (1 ms);
/// - the background writer's wait for more edits before it writes a file (0.5 ms);
/// - the pause between two reads of a file that another program may be rewriting in place (4 ms, taken
///   without any lock);
/// - the poll interval of a watcher that polls;
/// - the wall-clock time in the name of a kept copy of an unreadable file (`NAME.plist.corrupt-SECONDS-PID`).
///
/// ``SystemDefaultsClock`` is the real time and the default; ``ManualDefaultsClock`` moves only when told,
/// so that a test can say exactly when each of those happens.
///
/// A domain file is shared by every store of the process that uses it, so its waits (the writer's, the
/// settle pauses) follow the clock of the store that opened it first.
public protocol DefaultsClock: AnyObject, Sendable {
    /// The current wall-clock time.
    var now: Date { get }
    /// Runs `work` on `queue` once `delay` has passed. Called from any thread, never under a lock of ours.
    func schedule(after delay: Duration, on queue: DispatchQueue, _ work: @escaping @Sendable () -> Void)
    /// Lets `duration` pass before returning, on the calling thread. Called without any lock held.
    func pause(for duration: Duration)
}

/// The real time: `Date()`, Dispatch's `asyncAfter` and `nanosleep`.
public final class SystemDefaultsClock: DefaultsClock {
    /// The one system clock.
    public static let shared = SystemDefaultsClock()

    private init() {}

    /// The current time.
    public var now: Date { Date() }

    /// Runs `work` on `queue` after `delay` (any duration: a huge one saturates instead of overflowing).
    public func schedule(after delay: Duration, on queue: DispatchQueue, _ work: @escaping @Sendable () -> Void) {
        queue.asyncAfter(deadline: .now() + .nanoseconds(Self.nanoseconds(delay)), execute: work)
    }

    /// Sleeps for `duration` (resuming the sleep when a signal interrupts it).
    public func pause(for duration: Duration) {
        let total = Self.nanoseconds(duration)
        var request = timespec(tv_sec: total / 1_000_000_000, tv_nsec: total % 1_000_000_000)
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
    }

    /// A duration in whole nanoseconds, clamped to `0...Int.max` (a negative one is no wait at all).
    static func nanoseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        if seconds < 0 { return 0 }
        let (whole, overflow) = Int(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return .max }
        let (total, sumOverflow) = whole.addingReportingOverflow(Int(attoseconds / 1_000_000_000))
        return sumOverflow ? .max : max(0, total)
    }
}

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
        let elapsed = state.withLock { $0.elapsed }
        let (seconds, attoseconds) = elapsed.components
        return start.addingTimeInterval(Double(seconds) + Double(attoseconds) / 1e18)
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
        let due = state.withLock { state in
            if duration > .zero { state.elapsed += duration }
            let now = state.elapsed
            let due = state.scheduled.filter { $0.deadline <= now }
            state.scheduled.removeAll { $0.deadline <= now }
            return due.sorted { ($0.deadline, $0.order) < ($1.deadline, $1.order) }
        }
        for item in due { item.queue.async(execute: item.work) }
    }
}
