import BenchmarkSupport
import Foundation
import LiveDefaults
import Synchronization

/// 1,000 observers of one key: the time from a `set` until every one of them has the new value.
enum FanOut {
    final class Counter: Sendable {
        let received = Mutex<[Int: Int]>([:])
        let done = DispatchSemaphore(value: 0)
        let expected: Int

        init(expected: Int) { self.expected = expected }

        func record(_ value: Int) {
            let complete = received.withLock { received in
                received[value, default: 0] += 1
                return received[value] == expected
            }
            if complete { done.signal() }
        }
    }

    static func measure(directory: String, observers: Int, changes: Int) -> (live: Timing, foundation: Timing) {
        guard
            let store = try? Defaults(
                configuration: .rooted(at: directory, applicationDomain: "com.example.bench.fanout"))
        else {
            return (.notApplicable, .notApplicable)
        }
        let counter = Counter(expected: observers)
        var tasks: [Task<Void, Never>] = []
        for _ in 0..<observers {
            let iterator = store.updates(forKey: "Value", emitCurrentValue: false).makeAsyncIterator()
            tasks.append(
                Task.detached {
                    var iterator = iterator
                    while let value = await iterator.next() {
                        if case .integer(let integer)? = value { counter.record(integer) }
                    }
                })
        }
        var samples: [Double] = []
        for value in 1...changes {
            let start = now()
            store.set(value, forKey: "Value")
            guard counter.done.wait(timeout: .now() + 10) == .success else { break }
            samples.append(Double(now() - start))
        }
        for task in tasks { task.cancel() }

        // Foundation: the same number of observers of its change notification.
        guard let foundation = UserDefaults(suiteName: "com.example.bench.fanout.foundation") else {
            return (Harness.summary(samples), .notApplicable)
        }
        let notified = Mutex(0)
        let tokens = (0..<observers).map { _ in
            NotificationCenter.default.addObserver(
                forName: UserDefaults.didChangeNotification, object: foundation, queue: nil
            ) { _ in
                notified.withLock { $0 += 1 }
            }
        }
        var foundationSamples: [Double] = []
        for value in 1...changes {
            notified.withLock { $0 = 0 }
            let start = now()
            foundation.set(value, forKey: "Value")
            guard notified.withLock({ $0 }) >= observers else { break }
            foundationSamples.append(Double(now() - start))
        }
        for token in tokens { NotificationCenter.default.removeObserver(token) }
        return (Harness.summary(samples), Harness.summary(foundationSamples))
    }
}
