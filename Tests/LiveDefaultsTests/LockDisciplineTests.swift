import Foundation
import Glibc
import Synchronization
import TestProcesses
import Testing

@testable import LiveDefaults

/// No foreign code under a lock of ours, no sleep under the cross-process file lock, no disk I/O under the
/// shared-store lock, and no lost update between concurrent search-list and value changes.
@Suite("Lock discipline", .blockingWork)
struct LockDisciplineTests {
    @Test("an error handler that calls synchronize() does not deadlock")
    func handlerCallsSynchronize() throws {
        let directory = TemporaryDirectory()
        // Every write fails (ENOTDIR), so every write reports to the handler.
        try directory.write("blocker", "not a directory")
        let store = Lock<Defaults?>(nil)
        let reentered = Lock(0)
        var configuration = Defaults.Configuration.rooted(
            at: directory.file("blocker/config"), applicationDomain: "com.example.reenter")
        configuration.errorHandler = { _ in
            // Once: synchronize() fails again and would report again.
            let first = reentered.withLock { count in
                count += 1
                return count == 1
            }
            if first { _ = store.withLock({ $0 })?.synchronize() }
        }
        let defaults = try Defaults(configuration: configuration)
        store.withLock { $0 = defaults }
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            defaults.set("value", forKey: "Key")
            _ = defaults.synchronize()
            done.signal()
        }
        #expect(done.wait(timeout: .now() + 20) == .success, "synchronize() from the error handler deadlocked")
        #expect(reentered.withLock { $0 } >= 1)
        // The handler holds the store: break the cycle, or the store outlives the test and retries its write
        // (logging each failure) until the test process ends.
        store.withLock { $0 = nil }
    }

    @Test("an error handler that blocks does not hold up another domain's change")
    func blockedHandlerDelaysNoChange() throws {
        let directory = TemporaryDirectory()
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let reported = Lock<[DefaultsError]>([])
        var slowConfiguration = Defaults.Configuration.rooted(at: directory.path, applicationDomain: "com.example.slow")
        slowConfiguration.errorHandler = { error in
            reported.withLock { $0.append(error) }
            entered.signal()
            // Blocks until the other domain's change was seen, or for 10 s at most: a handler on the watcher's
            // queue would hold that change back for as long.
            _ = release.wait(timeout: .now() + 10)
        }
        let slow = try Defaults(configuration: slowConfiguration)
        let other = try directory.store("com.example.other")
        slow.set(1, forKey: "Key")
        #expect(slow.synchronize())
        #expect(other.integer(forKey: "Key") == 0)

        // Another program breaks the slow store's file: its handler is called, and blocks.
        try directory.write("com.example.slow.plist", "<plist><dict><key>Key</key><integer>2")
        #expect(entered.wait(timeout: .now() + 20) == .success, "the broken file was never reported")
        // While it blocks, another program writes the other domain: the watcher still sees it.
        let sawSeven = DispatchSemaphore(value: 0)
        let observer = NotificationCenter.default.addObserver(
            forName: Defaults.didChangeNotification, object: other, queue: nil
        ) { _ in if other.integer(forKey: "Key") == 7 { sawSeven.signal() } }
        defer { NotificationCenter.default.removeObserver(observer) }
        try PropertyList.dictionary(["Key": 7]).encoded().write(
            to: URL(fileURLWithPath: directory.file("com.example.other.plist")), options: .atomic)
        let seen = sawSeven.wait(timeout: .now() + 5) == .success
        release.signal()
        #expect(seen, "a blocked error handler held up the watcher")
        #expect(slow.integer(forKey: "Key") == 1, "the broken file took the last known good value away")
        #expect(reported.withLock { $0.first?.keepsLastKnownGood } == true)
    }

    @Test("a writer waiting for a file that may be mid-write does not hold the file lock while it waits")
    func noSleepUnderFileLock() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("com.example.settling.plist")
        let clock = FileLockProbeClock(lockPath: directory.file(".com.example.settling.plist.lock"))
        let defaults = try directory.store("com.example.settling", clock: clock)
        defaults.set(1, forKey: "Before")
        #expect(defaults.synchronize())
        // Another program truncates the file, as Foundation does before it writes; our write comes meanwhile.
        // Whether the writer or the watcher meets the empty file first is up to the scheduler, so a few
        // rounds; every pause taken, by either, must be taken without the file lock.
        for round in 0..<5 {
            defaults.set(round, forKey: "Pending")
            try Data().write(to: URL(fileURLWithPath: path))
            defaults.set(round, forKey: "After")
            _ = defaults.synchronize()
            #expect(defaults.integer(forKey: "After") == round)
        }
        let seen = clock.lockFreeAtPauses
        #expect(!seen.isEmpty, "nobody waited for the truncated file")
        #expect(seen.allSatisfy { $0 }, "a pause was taken under the file lock: \(seen)")
    }

    @Test("Defaults.standard first used from many threads at once gives one store (a real process)")
    func standardFromManyThreads() throws {
        let directory = TemporaryDirectory()
        let (status, output) = try runHelper(["standard-race", "16"], environment: ["XDG_CONFIG_HOME": directory.path])
        #expect(status == 0)
        #expect(output.contains("shared 16"))
    }

    @Test("concurrent addSuite and removeSuite with writes and reads from many threads lose no suite and no value")
    func concurrentSuitesWritesAndReads() throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store("com.example.busy")
        let suites = (0..<8).map { "com.example.suite\($0)" }
        for (index, suite) in suites.enumerated() {
            let other = try directory.store(suite)
            other.set(index, forKey: "Suite\(index)")
            #expect(other.synchronize())
        }
        let group = DispatchGroup()
        for round in 0..<4 {
            for (index, suite) in suites.enumerated() {
                group.enter()
                DispatchQueue.global().async {
                    defaults.addSuite(named: suite)
                    if round < 3 && index.isMultiple(of: 2) { defaults.removeSuite(named: suite) }
                    defaults.addSuite(named: suite)
                    defaults.set(round * 100 + index, forKey: "Writer\(round)-\(index)")
                    _ = defaults.integer(forKey: "Suite\(index)")
                    group.leave()
                }
            }
        }
        #expect(group.wait(timeout: .now() + 60) == .success)
        // Every suite was added last: all are in the search list, and their values show.
        let list = defaults.searchList
        for (index, suite) in suites.enumerated() {
            #expect(list.contains(suite), "lost \(suite)")
            #expect(defaults.integer(forKey: "Suite\(index)") == index)
            for round in 0..<4 { #expect(defaults.integer(forKey: "Writer\(round)-\(index)") == round * 100 + index) }
        }
    }

    @Test("synchronize() reports this store's failures, not another store's")
    func synchronizeReportsOwnFailures() throws {
        let failing = TemporaryDirectory()
        try failing.write("blocker", "not a directory")
        let broken = try Defaults(
            configuration: .rooted(at: failing.file("blocker/config"), applicationDomain: "com.example.broken"))
        let healthy = try TemporaryDirectory().store("com.example.healthy")
        broken.set(1, forKey: "Key")
        healthy.set(1, forKey: "Key")
        #expect(healthy.synchronize())
        #expect(!broken.synchronize())
    }

    @Test("synchronize() reports a failing write even while other threads write everything at the same time")
    func synchronizeSeesFailuresOfConcurrentWrites() throws {
        let failing = TemporaryDirectory()
        try failing.write("blocker", "not a directory")
        let broken = try Defaults(
            configuration: .rooted(at: failing.file("blocker/config"), applicationDomain: "com.example.contended"))
        broken.set(1, forKey: "Key")
        // Other threads' writeAll() take the pending file while this one synchronizes: the failure must still
        // be this synchronize()'s answer, and it must not return before that write has ended.
        let stop = Atomic<Bool>(false)
        let group = DispatchGroup()
        for _ in 0..<3 {
            DispatchQueue.global().async(group: group) {
                while !stop.load(ordering: .relaxed) { _ = StorageContext.system.writer.writeAll() }
            }
        }
        var reportedSuccess = 0
        for _ in 0..<300 where broken.synchronize() { reportedSuccess += 1 }
        stop.store(true, ordering: .relaxed)
        group.wait()
        #expect(reportedSuccess == 0)
    }

    @Test("a full rebuild of the merged view never publishes over a newer value")
    func rebuildDoesNotOverwriteNewerValues() throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store("com.example.rebuild")
        let done = Atomic<Bool>(false)
        // One thread keeps rebuilding the view (registering defaults of another key), another sets a key.
        Thread.detachNewThread {
            var round = 0
            while !done.load(ordering: .relaxed) {
                defaults.register(defaults: ["Registered": .integer(round)])
                round += 1
            }
        }
        for value in 0..<2_000 {
            defaults.set(value, forKey: "Counter")
            #expect(defaults.integer(forKey: "Counter") == value)
        }
        done.store(true, ordering: .relaxed)
    }
}

/// The real time, except that each pause first looks whether a file lock is free (through another open file
/// description of the lock file, whose `flock` conflicts with the writer's if the writer holds it).
final class FileLockProbeClock: DefaultsClock {
    let lockPath: String
    private let seen = Lock<[Bool]>([])

    init(lockPath: String) { self.lockPath = lockPath }

    /// For each pause so far: whether the lock was free.
    var lockFreeAtPauses: [Bool] { seen.withLock { $0 } }

    var now: Date { SystemDefaultsClock.shared.now }

    func schedule(after delay: Duration, on queue: DispatchQueue, _ work: @escaping @Sendable () -> Void) {
        SystemDefaultsClock.shared.schedule(after: delay, on: queue, work)
    }

    func pause(for duration: Duration) {
        let descriptor = open(lockPath, O_RDWR | O_CLOEXEC)
        defer { if descriptor >= 0 { close(descriptor) } }
        let free = descriptor >= 0 && flock(descriptor, LOCK_EX | LOCK_NB) == 0
        if free { _ = flock(descriptor, LOCK_UN) }
        seen.withLock { $0.append(free) }
        SystemDefaultsClock.shared.pause(for: duration)
    }
}
