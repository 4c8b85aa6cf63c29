import Foundation

/// Every wait of the tests on the wall clock goes through here, so that each is a named kind with a reason, and a
/// wait for a result is never one of them (that waits on the event itself: `Observed`, `waitForValue`, a process's
/// "ready" line, or at worst `eventually`). What is left is what no event announces:
///
/// - a property that must hold *throughout* a while (at most one health check running, every set of hosts a
///   rollout passes through, a queue's largest size): ``sample(every:while:_:)`` checks it at a cadence;
/// - a scenario paced against real servers or processes (a fault held on etcd, a writer killed at a chosen
///   moment) and a window in which something must not happen: ``pause(_:)``;
/// - a retry of what the system refuses for a moment (a file busy being executed): ``pause(blocking:)``.
///
/// Docs/Development.md lists the callers and why each runs in real time.
public enum RealTime {
    /// Lets `duration` pass without holding a thread of the cooperative pool.
    public static func pause(_ duration: Duration) async {
        try? await Task.sleep(for: duration)
    }

    /// Lets `duration` pass on the calling thread (a thread of the test's own, or a synchronous retry).
    public static func pause(blocking duration: Duration) {
        let (seconds, attoseconds) = duration.components
        var request = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
        var remaining = timespec()
        // Interrupted by a signal (the suite's children exiting): sleep what is left.
        while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
    }

    /// Calls `body` every `interval` while `condition` holds and the task is not cancelled: a property that must
    /// hold throughout a while, with no event to wait on.
    public static func sample(
        every interval: Duration, while condition: () -> Bool = { true }, _ body: () async throws -> Void
    ) async rethrows {
        while condition() && !Task.isCancelled {
            try await body()
            await pause(interval)
        }
    }

    /// Calls `body` `times` times, `interval` apart.
    public static func sample(times: Int, every interval: Duration, _ body: () async throws -> Void) async rethrows {
        for _ in 0..<max(times, 0) where !Task.isCancelled {
            try await body()
            await pause(interval)
        }
    }
}
