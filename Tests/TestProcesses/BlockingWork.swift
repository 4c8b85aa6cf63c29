public import Testing
import Foundation

/// A trait for suites whose tests block their thread (run a process to its end, wait on a semaphore, poll
/// with `usleep`): each of their tests runs on a thread of its own, not on Swift's cooperative pool.
///
/// Why: Swift Testing runs every test, synchronous ones included, as a task on the cooperative pool, which
/// has one thread per core — two on CI's machine. A synchronous test that waits on a child process holds
/// one of them for as long as the process runs; with the command's tests and the fleet's running side by
/// side, both were held for most of a run, and the tests that await a stream (all woken on that pool) sat
/// queued behind them: measured on a 2-core machine, tests that need a fraction of a second took 47 s, and
/// under load one passed its 30 s deadline (a CI failure). With this trait a test blocks its own thread.
/// At most ``BlockingWork/concurrentTests`` such tests run at once (the others wait without holding a
/// thread), so a suite of process-running tests does not start a hundred processes together.
///
/// A test waits for its turn outside its time limit: Swift Testing counts a test case's own scope against
/// `.timeLimit`, but not its test function's, so the turn is taken in the function's scope. Taken in the
/// case's, the time a fleet test spent queued behind the command's tests counted as its own, and a test that
/// runs well within its limit alone failed it in a whole run. A parameterized test's cases take one turn each
/// (they may run side by side), in their own scope.
///
/// Everything a test starts inherits its thread (task groups, `Task {}`), so a test must not block its
/// thread waiting for a task it started: use it for suites of synchronous tests and simple async ones.
///
/// ```swift
/// @Suite("The defaults command", .blockingWork)
/// ```
public struct BlockingWork: SuiteTrait, TestTrait, TestScoping {
    /// How many tests with this trait run at once.
    public static let concurrentTests = 6

    /// Applies to every test in the suite, nested suites included.
    public var isRecursive: Bool { true }

    /// A scope for each test function (its turn) and each of its cases (its thread); none for a suite.
    public func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        test.isSuite ? nil : self
    }

    /// Runs a test case's body on a thread of its own, once fewer than ``concurrentTests`` others run.
    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        // One turn per test, taken where its time limit does not run: a test function's own scope for a test of
        // one case; each case's scope for a parameterized one.
        let takesTurn = (testCase == nil) != test.isParameterized
        if takesTurn { await Self.gate.enter() }
        defer { if takesTurn { Self.gate.leave() } }
        guard testCase != nil else { return try await function() }
        let executor = ThreadExecutor(name: test.name)
        defer { executor.finish() }
        try await withTaskExecutorPreference(executor) { try await function() }
    }

    private static let gate = Gate(width: concurrentTests)
}

extension Trait where Self == BlockingWork {
    /// Runs each test on a thread of its own: see ``BlockingWork``.
    public static var blockingWork: Self { BlockingWork() }
}

/// A task executor with one thread, which ends after ``finish()``.
///
/// Its lock is `NSCondition` (pthreads), which ThreadSanitizer sees.
final class ThreadExecutor: TaskExecutor, @unchecked Sendable {
    // @unchecked: `jobs` and `finished` are accessed only under `condition`.

    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var finished = false

    init(name: String) {
        let thread = Thread { [self] in work() }
        thread.name = String(name.prefix(15))
        thread.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    /// Lets the thread end once it has run every job enqueued so far.
    func finish() {
        condition.lock()
        finished = true
        condition.signal()
        condition.unlock()
    }

    private func work() {
        while true {
            condition.lock()
            while jobs.isEmpty && !finished { condition.wait() }
            if jobs.isEmpty {
                condition.unlock()
                return
            }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}

/// An asynchronous counting semaphore: ``enter()`` waits without holding a thread.
final class Gate: @unchecked Sendable {
    // @unchecked: `available` and `waiting` are accessed only under `lock`.

    private let lock = NSLock()
    private var available: Int
    private var waiting: [CheckedContinuation<Void, Never>] = []

    init(width: Int) { available = width }

    func enter() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            lock.lock()
            if available > 0 {
                available -= 1
                lock.unlock()
                continuation.resume()
            } else {
                waiting.append(continuation)
                lock.unlock()
            }
        }
    }

    func leave() {
        lock.lock()
        if waiting.isEmpty {
            available += 1
            lock.unlock()
        } else {
            let next = waiting.removeFirst()
            lock.unlock()
            next.resume()
        }
    }
}
