import Dispatch
import Synchronization
import Testing

@testable import LiveDefaults

/// A value made once on first use, outside the lock, and published (``Lock/published(orMake:)``): the shared store
/// and a context's watcher; the keyed form, a suite's store.
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

    struct Refused: Error {}

    @Test("the keyed form publishes per key; a make that throws publishes nothing and a later one may")
    func keyedAndThrowing() throws {
        let slots = Lock<[String: Made]>([:])
        let a = slots.published(at: \.["a"]) { Made() }
        #expect(slots.published(at: \.["a"]) { Made() } === a)
        let b = slots.published(at: \.["b"]) { Made() }
        #expect(a !== b)
        #expect(throws: Refused.self) {
            try slots.published(at: \.["c"]) { () throws(Refused) -> Made in throw Refused() }
        }
        #expect(slots.withLock { $0["c"] } == nil)
        let c = slots.published(at: \.["c"]) { Made() }
        #expect(slots.withLock { $0["c"] } === c)
        #expect(slots.withLock { $0.count } == 3)
    }
}
