import Foundation

/// Counts a file's changes that were found under its disk lock and are not yet told to the observers, so
/// that a thread which re-read the file and found nothing new can wait for another thread's news of it.
///
/// The race it closes: the watcher's reload reads a new version and releases the disk lock before telling
/// the stores (a store's handler may call `synchronize()`, which takes the disk lock again); a
/// `synchronize()` on another thread meanwhile finds the file unchanged and returned while the store still
/// showed the old value (seen about once in six runs of a test that replaces a file and calls `flush()`).
///
/// A thread that is telling observers of a change never waits (it would wait for itself): a per-thread
/// depth marks it. NSCondition, because ThreadSanitizer sees pthread locks.
///
/// One condition for the whole process, not one per file: a process has up to six layer files per domain
/// it opens, each condition cost about 200 bytes (the object, its mutex and condition variable), and waits
/// are rare and short (a `synchronize()` that meets a delivery on its way); a broadcast wakes every waiter,
/// and each checks its own file's count.
final class Deliveries: @unchecked Sendable {
    // @unchecked: `pending` is accessed only under `condition`.

    private static let condition = NSCondition()
    private var condition: NSCondition { Self.condition }
    private var pending = 0

    /// One more change to tell (under the file's disk lock, before it is released).
    func begin() {
        condition.lock()
        pending += 1
        condition.unlock()
    }

    /// A change was told.
    func end() {
        condition.lock()
        pending -= 1
        if pending == 0 { condition.broadcast() }
        condition.unlock()
    }

    /// Waits until every change counted so far was told, unless this thread is telling one.
    func waitUntilDone() {
        guard Self.depth() == 0 else { return }
        condition.lock()
        while pending > 0 { condition.wait() }
        condition.unlock()
    }

    /// Runs `body` marked as telling observers of a change.
    static func whileDelivering(_ body: () -> Void) {
        let depth = depth()
        setDepth(depth + 1)
        body()
        setDepth(depth)
    }

    private static let depthWord = ThreadLocalWord()

    private static func depth() -> Int {
        depthWord.value
    }

    private static func setDepth(_ depth: Int) {
        depthWord.value = depth
    }
}
