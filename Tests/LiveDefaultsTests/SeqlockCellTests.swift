import Dispatch
import Synchronization
import Testing

@testable import LiveDefaults

/// The one seqlock of the library (typed keys' read slots, the untyped read cache's buckets).
@Suite("SeqlockCell: whole writes or nothing")
struct SeqlockCellTests {
    /// Two words for one cell, zeroed, freed by `body`'s caller.
    static func withCell<Result>(_ body: (SeqlockCell) -> Result) -> Result {
        let words = UnsafeMutablePointer<Atomic<UInt64>>.allocate(capacity: 2)
        for index in 0..<2 { (words + index).initialize(to: Atomic(0)) }
        defer {
            words.deinitialize(count: 2)
            words.deallocate()
        }
        return body(SeqlockCell(words))
    }

    @Test("a cell never written reads as tag 0; a write reads back; the tag keeps three bits")
    func roundTrip() {
        Self.withCell { cell in
            #expect(cell.read()! == (0, 0))
            cell.write(tag: 5, payload: 0xDEAD_BEEF)
            #expect(cell.read()! == (5, 0xDEAD_BEEF))
            #expect(cell.tag == 5)
            cell.write(tag: 7, payload: .max)
            #expect(cell.read()! == (7, .max))
            cell.write(tag: 9, payload: 1)  // 9 & 7
            #expect(cell.read()! == (1, 1))
        }
    }

    @Test("a read while a write is under way gives nothing; the write's own step runs in it")
    func readDuringWrite() {
        Self.withCell { cell in
            cell.write(tag: 2, payload: 20)
            let seen = cell.write(tag: 3, payload: 30) { cell.read() }
            #expect(seen == nil)
            #expect(cell.read()! == (3, 30))
        }
    }

    @Test("copyUnpublished copies the version, tag and payload")
    func copy() {
        Self.withCell { source in
            source.write(tag: 4, payload: 44)
            Self.withCell { target in
                target.copyUnpublished(from: source)
                #expect(target.read()! == (4, 44))
                let copied = target.control.pointee.load(ordering: .relaxed)
                let original = source.control.pointee.load(ordering: .relaxed)
                #expect(copied == original)
            }
        }
    }

    @Test("readers racing a writer never see a tag with another write's payload")
    func noTornReads() {
        Self.withCell { cell in
            let torn = Atomic<Int>(0)
            let whole = Atomic<Int>(0)
            let done = Atomic<Bool>(false)
            let writes: UInt64 = 200_000
            nonisolated(unsafe) let shared = cell
            DispatchQueue.concurrentPerform(iterations: 3) { thread in
                if thread == 0 {
                    // Every write's tag is a function of its payload: a mix of two writes shows.
                    for payload in 1...writes { shared.write(tag: payload % 7 + 1, payload: payload) }
                    done.store(true, ordering: .releasing)
                } else {
                    while !done.load(ordering: .acquiring) {
                        guard let (tag, payload) = shared.read(), payload > 0 else { continue }
                        if tag == payload % 7 + 1 {
                            whole.add(1, ordering: .relaxed)
                        } else {
                            torn.add(1, ordering: .relaxed)
                        }
                    }
                }
            }
            #expect(torn.load(ordering: .relaxed) == 0)
            #expect(cell.read()! == (writes % 7 + 1, writes))
        }
    }
}
