import Dispatch
import Foundation
import Synchronization
import Testing

@testable import LiveDefaults

/// Lock-free reads (typed keys' slots, the value cache, the missing-key filter) against changes of several keys
/// at once: a thread's successive reads never go back to an older version (``ViewGate``).
@Suite("Lock-free reads see whole versions")
struct ViewGateTests {
    static let count = 40
    static let keys = (0..<count).map { DefaultsKey<Int>("Gate\($0)", default: -1) }

    /// Runs `write` on one thread and `read` on two others until `write` returns; each reader reads every key
    /// in turn, forwards and backwards, with the kind of read `read` names, and counts a read smaller than the
    /// one before it (every version sets all keys to one value that only grows).
    static func race(_ defaults: Defaults, write: @escaping @Sendable () -> Void) -> Int {
        let done = Atomic<Bool>(false)
        let regressions = Atomic<Int>(0)
        let finished = DispatchSemaphore(value: 0)
        let store = defaults
        let readers = (0..<3).map { kind in
            Thread {
                var reads = 0
                while !done.load(ordering: .acquiring) || reads == 0 {
                    var last = Int.min
                    let order = reads % 2 == 0 ? Array(0..<count) : Array((0..<count).reversed())
                    for index in order {
                        let value =
                            switch kind {
                            case 0: store[keys[index]]
                            case 1: store.integer(forKey: keys[index].name)
                            default:
                                if case .integer(let integer)? = store.value(forKey: keys[index].name) {
                                    integer
                                } else {
                                    -1
                                }
                            }
                        if value < last { regressions.add(1, ordering: .relaxed) }
                        last = value
                    }
                    reads += 1
                }
                finished.signal()
            }
        }
        for reader in readers { reader.start() }
        write()
        done.store(true, ordering: .releasing)
        for _ in readers { finished.wait() }
        return regressions.load(ordering: .relaxed)
    }

    @Test("registered defaults of many keys, changed together: no read goes back to an older version")
    func registrations() throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store("com.example.gate.registered")
        let regressions = Self.race(defaults) {
            for round in 0..<3_000 {
                defaults.register(
                    defaults: Dictionary(uniqueKeysWithValues: Self.keys.map { ($0.name, PropertyList.integer(round)) })
                )
            }
        }
        #expect(regressions == 0)
        #expect(defaults[Self.keys[0]] == 2_999)
    }

    @Test("transactions of many keys: no read goes back to an older version")
    func transactions() throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store("com.example.gate.transactions")
        let regressions = Self.race(defaults) {
            for round in 0..<300 {
                try? defaults.transaction { tx in
                    for key in Self.keys { tx[key] = round }
                }
            }
        }
        #expect(regressions == 0)
        #expect(defaults[Self.keys[0]] == 299)
    }

    @Test("a read under way while the view changes gives nothing; after it, the new value")
    func readDuringChange() {
        let gate = ViewGate()
        var subject = 1
        #expect(gate.read { 7 } == 7)
        let during = gate.changing(&subject) { value in
            value = 2
            return gate.read { value }
        }
        #expect(during == nil)
        #expect(subject == 2)
        #expect(gate.read { subject } == 2)
    }
}
