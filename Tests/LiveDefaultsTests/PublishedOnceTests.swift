import Dispatch
import Synchronization
import Testing

@testable import LiveDefaults

/// A value made once on first use, outside the lock, and published (``Lock/published(orMake:)``): the shared store
/// and a context's watcher.
@Suite("Published once: the first value made is everyone's")
struct PublishedOnceTests {
    final class Made: Sendable {}

    @Test("one caller makes the value; later callers get it without making another")
    func madeOnce() {
        let slot = Lock<Made?>(nil)
        let makes = Atomic<Int>(0)
        let make = {
            makes.add(1, ordering: .relaxed)
            return Made()
        }
        let first = slot.published(orMake: make)
        #expect(slot.published(orMake: make) === first)
        #expect(makes.load(ordering: .relaxed) == 1)
    }

    @Test("threads that race each get the value published first, whoever made it")
    func racingCallersAgree() {
        let slot = Lock<Made?>(nil)
        let seen = Lock<[ObjectIdentifier]>([])
        DispatchQueue.concurrentPerform(iterations: 16) { _ in
            let value = slot.published { Made() }
            seen.withLock { $0.append(ObjectIdentifier(value)) }
        }
        let all = seen.withLock { $0 }
        #expect(all.count == 16)
        #expect(Set(all).count == 1)
        #expect(slot.withLock { $0.map(ObjectIdentifier.init) } == all.first)
    }
}
