public import Dispatch
public import Foundation

/// The time a store follows: every delay, pause and timestamp the library takes comes from its clock
/// (``Defaults/Configuration/clock``).
///
/// - the short wait that gathers a burst of changes into one ``Defaults/didChangeNotification`` (1 ms);
/// - the background writer's wait for more edits before it writes a file (0.5 ms; while edits keep coming,
///   5 ms from the end of its previous write);
/// - the pause between two reads of a file that another program may be rewriting in place (4 ms, taken
///   without any lock);
/// - the poll interval of a watcher that polls;
/// - the wall-clock time in the name of a kept copy of an unreadable file (`NAME.plist.corrupt-SECONDS-PID`).
///
/// The real time is the default; `ManualDefaultsClock` (in the
/// `LiveDefaultsTesting` product) moves only when told, so that a test can say exactly when each of those
/// happens.
///
/// A process keeps one domain file per path, owner and clock, so a file's waits (the writer's, the settle
/// pauses) follow the clock of the stores that share it (see Docs/Architecture.md).
public protocol DefaultsClock: AnyObject, Sendable {
    /// The current wall-clock time.
    var now: Date { get }
    /// Runs `work` on `queue` once `delay` has passed. Called from any thread, never under a lock of ours.
    func schedule(after delay: Duration, on queue: DispatchQueue, _ work: @escaping @Sendable () -> Void)
    /// Lets `duration` pass before returning, on the calling thread. Called without any lock held.
    func pause(for duration: Duration)
}

/// The real time: `Date()`, Dispatch's `asyncAfter` and `nanosleep`; every store's clock unless its
/// configuration names another.
@usableFromInline
final class SystemDefaultsClock: DefaultsClock {
    /// The one system clock.
    @usableFromInline static let shared = SystemDefaultsClock()

    private init() {}

    /// The current time.
    @usableFromInline var now: Date { Date() }

    /// Runs `work` on `queue` after `delay` (any duration: a huge one saturates instead of overflowing); at once,
    /// without a timer, when there is nothing to wait for.
    @usableFromInline func schedule(
        after delay: Duration, on queue: DispatchQueue, _ work: @escaping @Sendable () -> Void
    ) {
        guard delay > .zero else { return queue.async(execute: work) }
        queue.asyncAfter(deadline: .now() + .nanoseconds(delay.clampedNanoseconds), execute: work)
    }

    /// Sleeps for `duration` (resuming the sleep when a signal interrupts it).
    @usableFromInline func pause(for duration: Duration) {
        sleepThread(nanoseconds: duration.clampedNanoseconds)
    }
}
