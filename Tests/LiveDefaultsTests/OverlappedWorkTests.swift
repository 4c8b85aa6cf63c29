import Dispatch
import Foundation
import Testing

@testable import LiveDefaults

/// Work overlapped with a wait of the taking thread: run once, by whoever gets to it first.
@Suite("Overlapped work: run once, by the other thread or the taker")
struct OverlappedWorkTests {
    /// How many times work ran, and on which threads.
    final class Runs: @unchecked Sendable {
        // @unchecked: `threads` is only touched under `lock`.
        private let lock = NSLock()
        private var threads: [String] = []
        func record() { lock.withLock { threads.append(Self.thread()) } }
        var all: [String] { lock.withLock { threads } }
        static func thread() -> String { "\(pthread_self())" }
    }

    @Test("work not overlapped runs on the taking thread, when taken")
    func notOverlapped() {
        let runs = Runs()
        let work = OverlappedWork(overlapping: false) {
            runs.record()
            return 7
        }
        #expect(runs.all.isEmpty, "nothing runs before the value is taken")
        #expect(work.value() == 7)
        #expect(runs.all == [Runs.thread()])
    }

    @Test("work the other thread started is waited for, not run again")
    func waitsForTheOtherThread() {
        let runs = Runs()
        let started = DispatchSemaphore(value: 0)
        let proceed = DispatchSemaphore(value: 0)
        let work = OverlappedWork(overlapping: true) {
            runs.record()
            started.signal()
            proceed.wait()
            return "done"
        }
        started.wait()
        // The other thread holds the work: the taker waits for it (signalled from a third thread).
        DispatchQueue.global().async { proceed.signal() }
        #expect(work.value() == "done")
        #expect(runs.all.count == 1 && runs.all != [Runs.thread()])
    }

    @Test("taken at once, many times over: each work runs exactly once and gives its value")
    func exactlyOnce() {
        let runs = Runs()
        for index in 0..<2_000 {
            let work = OverlappedWork(overlapping: true) {
                runs.record()
                return index
            }
            #expect(work.value() == index)
        }
        // Each ran once, on whichever thread claimed it first; the queue's late starts find it taken.
        #expect(runs.all.count == 2_000)
    }
}
