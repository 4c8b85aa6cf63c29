import Foundation
import Glibc
import TestProcesses
import Testing

@testable import LiveDefaults

/// The file watcher's own thread: jobs in order on one thread, waits for a descriptor's input, the wait
/// paused for tests, and the descriptor closed when it stops.
@Suite("Watcher thread")
struct WatcherThreadTests {
    /// A pipe whose ends a test closes itself.
    private func makePipe() throws -> (read: Int32, write: Int32) {
        var ends: [Int32] = [-1, -1]
        try #require(pipe(&ends) == 0)
        return (ends[0], ends[1])
    }

    @Test("jobs run in the order given, all on one thread that is not the caller's; sync waits for them")
    func jobsInOrder() {
        let thread = WatcherThread(descriptor: -1)
        defer { thread.stop() }
        let seen = Lock<(order: [Int], threads: Set<UInt>)>(([], []))
        let caller = UInt(pthread_self())
        for index in 0..<2_000 {
            thread.enqueue {
                seen.withLock {
                    $0.order.append(index); $0.threads.insert(UInt(pthread_self()))
                }
            }
        }
        thread.sync()
        let (order, threads) = seen.withLock { ($0.order, $0.threads) }
        #expect(order == Array(0..<2_000))
        #expect(threads.count == 1)
        #expect(!threads.contains(caller))
    }

    @Test("sync called by a job returns at once instead of waiting for itself")
    func syncInsideAJob() {
        let thread = WatcherThread(descriptor: -1)
        defer { thread.stop() }
        let ran = Lock(false)
        thread.enqueue {
            thread.sync()
            ran.withLock { $0 = true }
        }
        thread.sync()
        #expect(ran.withLock { $0 })
    }

    @Test("input on the descriptor reaches the read handler; paused, it waits until reading resumes")
    func readHandlerAndPause() async throws {
        let (readEnd, writeEnd) = try makePipe()
        defer { close(writeEnd) }
        _ = fcntl(readEnd, F_SETFL, O_NONBLOCK)
        let thread = WatcherThread(descriptor: readEnd)
        defer { thread.stop() }
        let received = Observed<[UInt8]>([])
        thread.setReadHandler {
            var byte: UInt8 = 0
            while read(readEnd, &byte, 1) == 1 { received.update { $0.append(byte) } }
        }
        thread.enqueue {}  // starts the thread
        var byte: UInt8 = 1
        #expect(write(writeEnd, &byte, 1) == 1)
        #expect(await received.wait(timeout: .seconds(10)) { $0 == [1] })
        thread.pauseReading(true)
        thread.sync()
        byte = 2
        #expect(write(writeEnd, &byte, 1) == 1)
        // Jobs still run while reading is paused, and the byte stays unread. The thread looks for input right after
        // the jobs it took, so a second job runs only after that look: had reading not been paused, the byte
        // would have been read before the second sync returned.
        thread.sync()
        thread.sync()
        #expect(received.current == [1])
        thread.pauseReading(false)
        #expect(await received.wait(timeout: .seconds(10)) { $0 == [1, 2] })
    }

    @Test("stop closes the descriptor it was given, whether the thread ran or never started")
    func stopClosesTheDescriptor() async throws {
        for started in [true, false] {
            let (readEnd, writeEnd) = try makePipe()
            defer { close(writeEnd) }
            let thread = WatcherThread(descriptor: readEnd)
            if started {
                thread.enqueue {}
                thread.sync()
            }
            thread.stop()
            // The write end of a pipe whose read end is closed polls as an error.
            #expect(
                await eventually(timeout: 10) {
                    var descriptor = pollfd(fd: writeEnd, events: Int16(POLLOUT), revents: 0)
                    return poll(&descriptor, 1, 0) == 1 && descriptor.revents & Int16(POLLERR) != 0
                })
            // Jobs given after stop never run.
            let ran = Lock(false)
            thread.enqueue { ran.withLock { $0 = true } }
            thread.sync()
            #expect(!ran.withLock { $0 })
        }
    }

    @Test("a thread that opens its descriptor: on itself, before the first job, never if it never starts")
    func opensItsDescriptor() async throws {
        let (readEnd, writeEnd) = try makePipe()
        defer { close(writeEnd) }
        let opener = Lock<(calls: Int, thread: UInt?)>((0, nil))
        let thread = WatcherThread(opening: {
            opener.withLock { $0 = ($0.calls + 1, UInt(pthread_self())) }
            return readEnd
        })
        #expect(thread.descriptor == -1, "nothing is opened before the thread starts")
        #expect(opener.withLock { $0.calls } == 0)
        let seenByJob = Lock<(descriptor: Int32, thread: UInt)?>(nil)
        thread.enqueue { seenByJob.withLock { $0 = (thread.descriptor, UInt(pthread_self())) } }
        thread.sync()
        let (calls, openerThread) = opener.withLock { $0 }
        #expect(calls == 1)
        #expect(openerThread != UInt(pthread_self()))
        #expect(seenByJob.withLock { $0?.descriptor } == readEnd, "the first job sees the opened descriptor")
        #expect(seenByJob.withLock { $0?.thread } == openerThread)
        thread.enqueue {}
        thread.sync()
        #expect(opener.withLock { $0.calls } == 1, "opened once")
        // Stopped, it closes what it opened.
        thread.stop()
        #expect(
            await eventually(timeout: 10) {
                var descriptor = pollfd(fd: writeEnd, events: Int16(POLLOUT), revents: 0)
                return poll(&descriptor, 1, 0) == 1 && descriptor.revents & Int16(POLLERR) != 0
            })
        // A thread that never starts never opens.
        let idle = WatcherThread(opening: {
            opener.withLock { $0.calls += 1 }
            return -1
        })
        idle.stop()
        #expect(opener.withLock { $0.calls } == 1)
    }
}

/// A store's open registers its files with the reconciliation held to the open's end
/// (`FileWatcher.holdingReconciliation`).
@Suite("Watcher: registrations held during an open")
struct HeldReconciliationTests {
    /// Directories the watcher follows: watched with inotify, or polled (the polling-only build, where
    /// inotify is compiled out, polls every one).
    private func followed(_ watcher: FileWatcher) -> Int {
        watcher.watchCount + watcher.polledDirectories.count
    }

    @Test("held registrations add no watch until the hold ends; a file written meanwhile is still read")
    func heldThenApplied() async throws {
        let directory = TemporaryDirectory()
        let watcher = FileWatcher()
        let path = directory.file("com.example.held.plist")
        let file = DomainFile(path: path)
        file.loadIfNeeded()
        let changes = WatcherTests.changes(of: file)
        #expect(file.value(forKey: "Key") == nil)
        watcher.holdingReconciliation {
            WatcherTests.watch(file, with: watcher)
            watcher.settle()
            #expect(followed(watcher) == 0, "no watch while the open holds them")
            // Written after the registration, before any watch: no event will ever name it.
            try? SearchListTests.xml(["Key": "written during the open"]).write(
                toFile: path, atomically: true, encoding: .utf8)
        }
        watcher.settle()
        #expect(followed(watcher) == 1)
        #expect(
            await changes.wait(timeout: .seconds(10)) { _ in file.value(forKey: "Key") == "written during the open" })
        withExtendedLifetime(watcher) {}
    }

    @Test("overlapping holds on several threads: the last to end sets up every registration")
    func overlappingHolds() async throws {
        let directory = TemporaryDirectory()
        let watcher = FileWatcher()
        let files = (0..<8).map { index in
            try? FileManager.default.createDirectory(
                atPath: directory.file("d\(index)"), withIntermediateDirectories: true)
            return DomainFile(path: directory.file("d\(index)/com.example.overlap.plist"))
        }
        DispatchQueue.concurrentPerform(iterations: files.count) { index in
            watcher.holdingReconciliation {
                WatcherTests.watch(files[index], with: watcher)
                // Nested, as a store opened inside another's open would be.
                watcher.holdingReconciliation { RealTime.pause(blocking: .milliseconds(index % 3)) }
            }
        }
        watcher.settle()
        #expect(followed(watcher) == files.count)
        // A registration after every hold ended is set up at once, as without holds.
        try FileManager.default.createDirectory(atPath: directory.file("late"), withIntermediateDirectories: true)
        let late = DomainFile(path: directory.file("late/com.example.overlap.plist"))
        WatcherTests.watch(late, with: watcher)
        watcher.settle()
        #expect(followed(watcher) == files.count + 1)
        withExtendedLifetime((watcher, files, late)) {}
    }
}
