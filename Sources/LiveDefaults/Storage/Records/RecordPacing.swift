/// When a background record of a version read is written — the change log's record of another writer's version
/// (``ExternalVersionRecorder``) and the readers' announcement (``ReaderAnnouncer``), both on the records queue:
/// soon after the version, or, within a burst, once for the burst.
///
/// Soon: a `defaults write --wait` waits for the announcement, yet after the observers' tasks, woken by the
/// delivery, had the cores. Within a burst (versions less than ``burstWindow`` apart), later and once, as its last
/// version: records written soon after each version of a back-to-back series ran during the next version's
/// delivery and took a core from it on a small machine, which the cross-process rows' p99 showed
/// (Docs/Benchmarks.md).
enum RecordPacing {
    /// How long after a version its record is written, outside a burst (nanoseconds).
    static let delayNanoseconds: UInt64 = 1_000_000
    /// How long after a version its record is written within a burst (nanoseconds).
    static let burstDelayNanoseconds: UInt64 = 20_000_000
    /// Versions closer than this are a burst (nanoseconds).
    static let burstWindow: UInt64 = 10_000_000

    /// When a record asked for at `now` is due, the last record of its kind having been written at `last` (nil:
    /// none yet); the records queue's nanoseconds (``RecordsQueue``).
    static func due(now: UInt64, lastWritten last: UInt64?) -> UInt64 {
        let recent = last.map { now &- $0 < burstWindow } ?? false
        return now &+ (recent ? burstDelayNanoseconds : delayNanoseconds)
    }
}
