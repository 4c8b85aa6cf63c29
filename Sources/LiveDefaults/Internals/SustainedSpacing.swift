/// When work that follows a change runs (the background writer's write, the `didChangeNotification` post):
/// ``delay`` after a change that comes after a quiet moment, and, while changes keep coming, no sooner than
/// ``spacing`` after the last run ended. A lone change is seen soon; a stream of them wakes a thread a few
/// hundred times a second at most, not once per change or per ``delay`` (on a small machine each wake-up
/// competes with the loop that makes the changes).
struct SustainedSpacing: Sendable {
    /// How long a change after a quiet moment waits for more to ride along.
    let delay: Duration
    /// The least time from the end of one run to the next while changes keep coming.
    let spacing: Duration

    /// How long a run scheduled now waits: ``delay``, or, when the last run ended less than ``spacing`` ago
    /// (`seconds`, nil when none has run), the rest of that spacing, never less than ``delay``.
    func wait(sinceLast seconds: Double?) -> Duration {
        // Bounded before it becomes a Duration: a clock's date can be anything (NaN, far future or past).
        guard let seconds, seconds >= 0, seconds < Double(spacing.components.seconds + 1) else { return delay }
        let elapsed = Duration.seconds(seconds)
        guard elapsed < spacing else { return delay }
        return max(delay, spacing - elapsed)
    }
}
