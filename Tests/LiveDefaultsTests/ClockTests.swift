import Foundation
import LiveDefaultsTesting
import Logging
import PlistOracle
import TestProcesses
import Testing

@testable import LiveDefaults

/// Every wait the library takes follows the store's clock (``Defaults/Configuration/clock``): with a
/// ``ManualDefaultsClock`` a test says exactly when each one ends.
@Suite("Clock")
struct ClockTests {
    @Test("a manual clock runs scheduled work when advanced past its deadline, earliest first")
    func manualClockOrder() async throws {
        let clock = ManualDefaultsClock(now: Date(timeIntervalSince1970: 100))
        let queue = DispatchQueue(label: "ClockTests.order")
        let ran = Lock<[String]>([])
        clock.schedule(after: .milliseconds(3), on: queue) { ran.withLock { $0.append("3 ms") } }
        clock.schedule(after: .milliseconds(1), on: queue) { ran.withLock { $0.append("1 ms") } }
        clock.schedule(after: .seconds(1), on: queue) { ran.withLock { $0.append("1 s") } }
        #expect(clock.pendingDelays == [.milliseconds(3), .milliseconds(1), .seconds(1)])
        clock.advance(by: .milliseconds(2))
        queue.sync {}
        #expect(ran.withLock { $0 } == ["1 ms"])
        clock.advance(by: .milliseconds(5))
        queue.sync {}
        #expect(ran.withLock { $0 } == ["1 ms", "3 ms"])
        #expect(clock.pendingDelays == [.seconds(1)])
        // A pause moves the clock and records itself; it does not block.
        clock.pause(for: .seconds(2))
        queue.sync {}
        #expect(ran.withLock { $0 } == ["1 ms", "3 ms", "1 s"])
        #expect(clock.pauses == [.seconds(2)])
        #expect(clock.elapsed == .milliseconds(2_007))
        #expect(clock.now == Date(timeIntervalSince1970: 102.007))
        // Nothing is left; going backwards is no move.
        clock.advance(by: .seconds(-10))
        #expect(clock.pendingDelays.isEmpty)
        #expect(clock.elapsed == .milliseconds(2_007))
    }

    @Test("advanceAndWait returns once the work it made due has run, on its queue, earliest first")
    func advanceAndWait() {
        let clock = ManualDefaultsClock()
        let queue = DispatchQueue(label: "ClockTests.wait")
        let ran = Lock<[String]>([])
        clock.schedule(after: .milliseconds(2), on: queue) {
            ran.withLock { $0.append("2 ms") }
        }
        clock.schedule(after: .milliseconds(1), on: queue) { ran.withLock { $0.append("1 ms") } }
        clock.schedule(after: .milliseconds(9), on: queue) { ran.withLock { $0.append("9 ms") } }
        clock.advanceAndWait(by: .milliseconds(5))
        #expect(ran.withLock { $0 } == ["1 ms", "2 ms"], "no queue.sync needed: the work has run")
        clock.advanceAndWait(by: .milliseconds(5))
        #expect(ran.withLock { $0 } == ["1 ms", "2 ms", "9 ms"])
    }

    @Test("a burst of changes is announced once, when the store's clock has moved 1 ms")
    func notificationFollowsTheClock() async throws {
        let directory = TemporaryDirectory()
        let clock = ManualDefaultsClock()
        let defaults = try directory.store("com.example.clock.notify", clock: clock)
        let posts = Lock(0)
        let observer = NotificationCenter.default.addObserver(
            forName: Defaults.didChangeNotification, object: defaults, queue: nil
        ) { _ in posts.withLock { $0 += 1 } }
        defer { NotificationCenter.default.removeObserver(observer) }
        for value in 0..<3 { defaults.set(value, forKey: "Counter") }
        #expect(clock.pendingDelays.contains(.milliseconds(1)))
        // The post is work the clock holds: while it is pending, it has not run (no wait stands in for that).
        #expect(posts.withLock { $0 } == 0)
        clock.advance(by: .microseconds(999))
        #expect(clock.pendingDelays.contains(.milliseconds(1)), "not due after 999 µs")
        #expect(posts.withLock { $0 } == 0)
        clock.advanceAndWait(by: .microseconds(1))
        #expect(posts.withLock { $0 } == 1)
        // Nothing else is scheduled, and the queue the posts run on has drained: no second post can come.
        #expect(!clock.pendingDelays.contains(.milliseconds(1)))
        Defaults.notificationQueue.sync {}
        #expect(posts.withLock { $0 } == 1, "one notification for the burst")
    }

    @Test("while changes keep coming, didChangeNotification waits 5 ms after the last post; after a quiet moment 1 ms")
    func notificationsSpaceASustainedStream() async throws {
        let directory = TemporaryDirectory()
        let clock = ManualDefaultsClock()
        let defaults = try directory.store("com.example.clock.notify.sustained", clock: clock)
        let posts = Lock(0)
        let observer = NotificationCenter.default.addObserver(
            forName: Defaults.didChangeNotification, object: defaults, queue: nil
        ) { _ in posts.withLock { $0 += 1 } }
        defer { NotificationCenter.default.removeObserver(observer) }
        func posted() -> Int {
            Defaults.notificationQueue.sync {}
            return posts.withLock { $0 }
        }
        defaults.set(1, forKey: "Counter")
        clock.advanceAndWait(by: .milliseconds(1))
        #expect(posted() == 1)
        // The clock has not moved since that post: the next change's post waits the whole spacing.
        defaults.set(2, forKey: "Counter")
        clock.advanceAndWait(by: .microseconds(4_999))
        #expect(posted() == 1, "not before the spacing")
        clock.advanceAndWait(by: .microseconds(1))
        #expect(posted() == 2)
        // Quiet for longer than the spacing: a single change is posted after the delay again.
        clock.advance(by: .milliseconds(10))
        defaults.set(3, forKey: "Counter")
        clock.advanceAndWait(by: .microseconds(999))
        #expect(posted() == 2)
        clock.advanceAndWait(by: .microseconds(1))
        #expect(posted() == 3)
        #expect(Defaults.notificationPacing.wait(sinceLast: 0.002) == .milliseconds(3))
        #expect(Defaults.notificationPacing.wait(sinceLast: 0.0045) == .milliseconds(1))
    }

    @Test("stores with different clocks or owners get files of their own, and meet through the disk")
    func filesFollowTheirStoresConfiguration() async throws {
        let registry = DomainFileRegistry()
        let manual = ManualDefaultsClock()
        let path = "/nonexistent/registry/com.example.plist"
        let system = registry.file(atPath: path)
        #expect(registry.file(atPath: path) === system, "the same configuration shares one file")
        #expect(registry.file(atPath: path, clock: manual) !== system)
        #expect(registry.file(atPath: path, clock: manual).clock === manual)
        #expect(registry.file(atPath: path, owner: (4242, 4242)) !== system)
        #expect(registry.file(atPath: path, owner: (4242, 4242)).owner?.0 == 4242)

        // The store that opens the path first does not impose its clock on the next one.
        let directory = TemporaryDirectory()
        let first = try directory.store("com.example.clock.shared")
        let second = try directory.store("com.example.clock.shared", clock: manual)
        second.set(7, forKey: "Written")
        #expect(second.integer(forKey: "Written") == 7)
        // The write waits on the second store's clock, not on the first store's.
        #expect(manual.pendingDelays.contains(.microseconds(500)))
        manual.advance(by: .microseconds(500))
        // The first store sees it as it sees another process's write: through the disk and its watcher.
        #expect(await waitForValue(first, "Written", timeout: .seconds(10)) { $0 == 7 })
        first.set(8, forKey: "Written")
        #expect(first.synchronize())
        #expect(await waitForValue(second, "Written", timeout: .seconds(10)) { $0 == 8 })
    }

    /// A store in memory on a manual clock: what the background writer writes is seen in `fileSystem`, and no
    /// other test's `synchronize()` (which writes the pending files of its own file system) writes it first.
    static func storeInMemory(_ domain: String, clock: ManualDefaultsClock) throws -> (Defaults, InMemoryFileSystem) {
        let fileSystem = InMemoryFileSystem()
        var configuration = Defaults.Configuration.rooted(at: "/home/u/config", applicationDomain: domain)
        configuration.fileSystem = fileSystem
        configuration.clock = clock
        return (try Defaults(configuration: configuration), fileSystem)
    }

    /// The domain file's contents in `fileSystem`, decoded; nil while it does not exist.
    static func written(_ domain: String, in fileSystem: InMemoryFileSystem) throws -> PropertyList? {
        try fileSystem.contents(atPath: "/home/u/config/\(domain).plist").map { try PropertyList.decode($0).value }
    }

    @Test("the background writer writes a file when the file's clock has moved 0.5 ms")
    func writerFollowsTheClock() throws {
        let clock = ManualDefaultsClock()
        let (defaults, fileSystem) = try Self.storeInMemory("com.example.clock.write", clock: clock)
        defaults.set(7, forKey: "Written")
        #expect(clock.pendingDelays.contains(.microseconds(500)))
        clock.advanceAndWait(by: .microseconds(499))
        #expect(try Self.written("com.example.clock.write", in: fileSystem) == nil, "not written before 0.5 ms")
        clock.advanceAndWait(by: .microseconds(1))
        #expect(try Self.written("com.example.clock.write", in: fileSystem) == .dictionary(["Written": 7]))
    }

    @Test(
        "a clock's write of a file another thread is writing waits for that write: the file is on disk when it returns")
    func scheduledWriteWaitsForAnotherWriter() throws {
        // Another thread's synchronize() takes the file and stops before its rename, until released.
        let inCommit = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let held = Lock(false)
        let memory = InMemoryFileSystem()
        let fileSystem = FaultInjectingFileSystem(wrapping: memory) { name, subject in
            guard name == "rename", subject.hasSuffix("com.example.clock.taken.plist") else { return }
            // The first rename only: the one of the synchronize().
            guard
                held.withLock({ held in
                    defer { held = true }
                    return !held
                })
            else { return }
            inCommit.signal()
            release.wait()
        }
        let clock = ManualDefaultsClock()
        var configuration = Defaults.Configuration.rooted(
            at: "/home/u/config", applicationDomain: "com.example.clock.taken")
        configuration.fileSystem = fileSystem
        configuration.clock = clock
        let defaults = try Defaults(configuration: configuration)
        defaults.set(7, forKey: "Written")
        let synchronizing = Thread { _ = defaults.synchronize() }
        synchronizing.start()
        inCommit.wait()
        // The clock's write comes due while the other write is under way: it must not return before that write
        // lands (it returned at once, with no file, when it found the file taken).
        let returned = DispatchSemaphore(value: 0)
        let onDiskAtReturn = Lock<Bool?>(nil)
        let advancing = Thread {
            clock.advanceAndWait(by: .milliseconds(1))
            onDiskAtReturn.withLock {
                $0 = memory.contents(atPath: "/home/u/config/com.example.clock.taken.plist") != nil
            }
            returned.signal()
        }
        advancing.start()
        // A window: it returns within it only if it did not wait (then the file is not there yet).
        let returnedEarly = returned.wait(timeout: .now() + .milliseconds(300)) == .success
        release.signal()
        if !returnedEarly { returned.wait() }
        #expect(onDiskAtReturn.withLock { $0 } == true, "advanceAndWait returned before the file was on disk")
        #expect(try Self.written("com.example.clock.taken", in: memory) == .dictionary(["Written": 7]))
    }

    @Test("while sets keep coming the writer spaces its writes 5 ms apart; after a quiet moment it waits 0.5 ms")
    func writerSpacesASustainedStream() throws {
        let clock = ManualDefaultsClock()
        let domain = "com.example.clock.sustained"
        let (defaults, fileSystem) = try Self.storeInMemory(domain, clock: clock)
        defaults.set(1, forKey: "Written")
        #expect(clock.pendingDelays.contains(.microseconds(500)))
        clock.advanceAndWait(by: .microseconds(500))
        #expect(try Self.written(domain, in: fileSystem) == .dictionary(["Written": 1]))
        #expect(StorageContext.system.writer.lastWriteEnded(on: clock) == clock.now)
        // The clock has not moved since that write ended: the next one waits the whole spacing.
        defaults.set(2, forKey: "Written")
        #expect(clock.pendingDelays.contains(.milliseconds(5)))
        #expect(!clock.pendingDelays.contains(.microseconds(500)))
        clock.advanceAndWait(by: .microseconds(4_999))
        #expect(try Self.written(domain, in: fileSystem) == .dictionary(["Written": 1]), "not before the spacing")
        clock.advanceAndWait(by: .microseconds(1))
        #expect(try Self.written(domain, in: fileSystem) == .dictionary(["Written": 2]))
        #expect(StorageContext.system.writer.lastWriteEnded(on: clock) == clock.now)
        // Quiet for longer than the spacing: a single set is written after 0.5 ms again.
        clock.advance(by: .milliseconds(10))
        defaults.set(3, forKey: "Written")
        #expect(clock.pendingDelays.contains(.microseconds(500)))
        // The rule itself: the rest of the spacing, never less than the delay; the delay after a quiet moment,
        // and for a clock that moved backwards.
        #expect(BackgroundWriter.pacing.wait(sinceLast: nil) == .microseconds(500))
        #expect(BackgroundWriter.pacing.wait(sinceLast: 0.001) == .milliseconds(4))
        #expect(BackgroundWriter.pacing.wait(sinceLast: 0.0049) == .microseconds(500))
        #expect(BackgroundWriter.pacing.wait(sinceLast: 0.006) == .microseconds(500))
        #expect(BackgroundWriter.pacing.wait(sinceLast: -1) == .microseconds(500))
        #expect(BackgroundWriter.pacing.wait(sinceLast: .nan) == .microseconds(500))
    }

    @Test("a polling watcher checks its directories when its clock says, not before")
    func pollingFollowsTheClock() async throws {
        let machine = SimulatedMachine(seed: 5)
        let domain = "com.example.clock.poll"
        var configuration = machine.process("server").configuration(applicationDomain: domain)
        configuration.watching = .polling(interval: .seconds(5))
        let defaults = try machine.process("server").defaults(configuration: configuration)
        #expect(defaults.object(forKey: "Key") == nil)
        // The first poll runs at once (the machine's time has not moved since the store opened) and schedules the
        // next on the clock.
        let firstPoll = machine.elapsed
        await machine.settle()
        // Another program writes the file: the poller has no event to hear of it.
        try await machine.save(["Key": 42], toDomain: domain)
        #expect(defaults.object(forKey: "Key") == nil, "no poll has happened yet")
        await machine.advance(by: firstPoll + .seconds(5) - machine.elapsed - .milliseconds(1))
        #expect(defaults.object(forKey: "Key") == nil, "nor a millisecond before the interval")
        await machine.advance(by: .milliseconds(1))
        #expect(defaults.integer(forKey: "Key") == 42)
        // And the next poll is the interval after.
        try await machine.save(["Key": 43], toDomain: domain)
        await machine.advance(by: firstPoll + .seconds(10) - machine.elapsed - .milliseconds(1))
        #expect(defaults.integer(forKey: "Key") == 42)
        await machine.advance(by: .milliseconds(1))
        #expect(defaults.integer(forKey: "Key") == 43)
    }

    @Test("an unreadable file is kept under a name with the clock's time; the pauses before are the clock's")
    func corruptNameFollowsTheClock() throws {
        let directory = TemporaryDirectory()
        let clock = ManualDefaultsClock(now: Date(timeIntervalSince1970: 1_234_567_890.75))
        try directory.write("com.example.clock.corrupt.plist", "<?xml version=\"1.0\"?><plist><dict><key>")
        let defaults = try directory.store("com.example.clock.corrupt", clock: clock)
        defaults.set(1, forKey: "Fresh")
        #expect(defaults.synchronize())
        let kept = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .filter { $0.hasPrefix("com.example.clock.corrupt.plist.corrupt-") }
        #expect(kept == ["com.example.clock.corrupt.plist.corrupt-1234567890-\(getpid())"])
        // The waits for a file that might be mid-write were taken on the clock (at once, here), 4 ms each.
        #expect(!clock.pauses.isEmpty)
        #expect(clock.pauses.allSatisfy { $0 == .milliseconds(4) })
    }

    @Test("a clock at any time names a file without trapping")
    func wholeSecondsBounds() {
        #expect(CurrentVersion.wholeSeconds(Date(timeIntervalSince1970: 12.9)) == 12)
        #expect(CurrentVersion.wholeSeconds(Date(timeIntervalSince1970: -12.5)) == -13)
        #expect(CurrentVersion.wholeSeconds(Date(timeIntervalSince1970: 1e300)) == 0)
        #expect(CurrentVersion.wholeSeconds(Date(timeIntervalSince1970: .infinity)) == 0)
        #expect(CurrentVersion.wholeSeconds(Date(timeIntervalSince1970: .nan)) == 0)
        let clock = ManualDefaultsClock(now: Date(timeIntervalSince1970: .greatestFiniteMagnitude))
        clock.advance(by: .seconds(Int64.max))
        #expect(CurrentVersion.wholeSeconds(clock.now) == 0)
    }
}

/// The background writer's groups are clocks by identity: a clock that died with a write scheduled (a simulated
/// process's crash drops its clock's pending work) must not hold back a clock made later at the same address.
@Suite("Background writer: clocks by identity")
struct WriterClockIdentityTests {
    /// A clock that drops what it is given (a crashed process's) or runs it at once, on its queue.
    final class Clock: DefaultsClock {
        let drops: Bool
        init(drops: Bool) { self.drops = drops }
        var now: Date { Date(timeIntervalSince1970: 0) }
        func schedule(after delay: Duration, on queue: DispatchQueue, _ work: @escaping @Sendable () -> Void) {
            if !drops { queue.sync(execute: work) }
        }
        func pause(for duration: Duration) {}
    }

    @Test("a clock that died with its write scheduled does not hold back the next clock at its address")
    func deadClockDoesNotHoldBackItsSuccessor() throws {
        var dead: ObjectIdentifier?
        weak var gone: Clock?
        do {
            let clock = Clock(drops: true)
            let (defaults, _) = try Self.store(clock)
            defaults.set(1, forKey: "Written")  // its write scheduled, and dropped
            #expect(defaults.synchronize())  // the file taken and written: the clock's group stays scheduled
            dead = ObjectIdentifier(clock)
            gone = clock
        }
        #expect(gone == nil, "the clock is gone")
        // The allocator hands the freed block back to one of the next clocks of the same size (all kept alive, so
        // that each takes a block of its own).
        var made: [Clock] = []
        for _ in 0..<100_000 {
            let clock = Clock(drops: false)
            made.append(clock)
            guard ObjectIdentifier(clock) == dead else { continue }
            let (defaults, fileSystem) = try Self.store(clock)
            defaults.set(2, forKey: "Written")
            #expect(
                try ClockTests.written("com.example.clock.identity", in: fileSystem) == .dictionary(["Written": 2]),
                "the write ran on the new clock")
            return
        }
        Issue.record("no clock was made at the dead clock's address: the case was not met")
    }

    static func store(_ clock: Clock) throws -> (Defaults, InMemoryFileSystem) {
        let fileSystem = InMemoryFileSystem()
        var configuration = Defaults.Configuration.rooted(
            at: "/home/u/config", applicationDomain: "com.example.clock.identity")
        configuration.fileSystem = fileSystem
        configuration.clock = clock
        return (try Defaults(configuration: configuration), fileSystem)
    }
}
