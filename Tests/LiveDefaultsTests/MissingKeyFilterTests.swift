import Foundation
import Synchronization
import TestProcesses
import Testing

@testable import LiveDefaults

/// Reads of missing keys skip the lock through a Bloom filter (``MissingKeyFilter``): it must never answer
/// "absent" for a key that is there.
@Suite("Reads of missing keys without the lock")
struct MissingKeyFilterTests {
    /// A view holding `keys` (the filter is given views' keys).
    static func view(_ keys: [String]) -> MergedValues {
        MergedValues(Dictionary(uniqueKeysWithValues: keys.map { ($0, PropertyList.integer(0)) }))
    }

    @Test("The filter holds every key it was given, across growth, and rejects most others")
    func filter() {
        let filter = MissingKeyFilter()
        #expect(filter.mayContain("anything"), "no table yet: everything may be present")
        filter.insert(all: Self.view((0..<10).map { "Key\($0)" }))
        for index in 0..<10 { #expect(filter.mayContain("Key\(index)")) }
        let strangers = (0..<1_000).filter { filter.mayContain("Other\($0)") }.count
        #expect(strangers < 50, "a 1,024-bit table with 10 keys lets few strangers through (\(strangers))")
        // One by one past the table's size, then grown to hold them: nothing inserted is ever lost.
        let many = (0..<20_000).map { "Many\($0)" }
        for key in many { filter.insert(key) }
        filter.grow(toHold: Self.view(many + (0..<10).map { "Key\($0)" }))
        #expect(many.allSatisfy(filter.mayContain))
        #expect((0..<10).allSatisfy { filter.mayContain("Key\($0)") })
        let after = (0..<1_000).filter { filter.mayContain("Other\($0)") }.count
        #expect(after < 100, "grown for 20,000 keys, the table lets few strangers through (\(after))")
        #expect(MissingKeyFilter.hash("Grüße") == MissingKeyFilter.hash(String("xGrüße".dropFirst())))
    }

    @Test("A missing key reads nil; every way a key arrives makes it readable")
    func arrivals() async throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store("com.example.filter", arguments: ["-FromArguments", "1"])
        #expect(defaults.object(forKey: "Local") == nil)
        defaults.set(1, forKey: "Local")
        #expect(defaults.integer(forKey: "Local") == 1)
        #expect(defaults.integer(forKey: "FromArguments") == 1)
        defaults.register(defaults: ["Registered": 2] as [String: PropertyList])
        #expect(defaults.integer(forKey: "Registered") == 2)
        let other = try directory.store("com.example.filter")
        other.set(3, forKey: "FromAnotherStore")
        #expect(defaults.integer(forKey: "FromAnotherStore") == 3)
        #expect(
            try runHelper(["write-sequence", directory.path, "com.example.filter", "FromAnotherProcess", "2"]).status
                == 0)
        #expect(await waitForValue(defaults, "FromAnotherProcess") { $0 == 2 })
        try defaults.trySetPersistentDomain(
            Dictionary(uniqueKeysWithValues: (0..<5_000).map { ("Bulk\($0)", PropertyList.integer($0)) }),
            forName: "com.example.filter")
        #expect((0..<5_000).allSatisfy { defaults.integer(forKey: "Bulk\($0)") == $0 })
        #expect(defaults.object(forKey: "Local") == nil, "replaced away")
        defaults.removeObject(forKey: "Bulk7")
        #expect(defaults.object(forKey: "Bulk7") == nil, "a removed key's bits stay; the locked lookup answers")
    }

    @Test("A key set by one thread is never reported missing to a thread that knows it was set")
    func concurrentArrivals() async throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store("com.example.filterrace")
        let published = Published()
        let count = 20_000
        let writer = Task.detached {
            for index in 0..<count {
                defaults.set(index, forKey: "Arrived\(index)")
                published.index.store(index, ordering: .releasing)
            }
        }
        let readers = (0..<3).map { _ in
            Task.detached { () -> Int in
                var missing = 0
                var checked = 0
                while checked < count {
                    let last = published.index.load(ordering: .acquiring)
                    guard last >= 0 else { continue }
                    // Every key up to `last` was set before it was published.
                    let probe = Int.random(in: 0...last)
                    if defaults.value(forKey: "Arrived\(probe)") == nil { missing += 1 }
                    if defaults.value(forKey: "Never\(probe)") != nil { missing += 1 }
                    checked += 1
                }
                return missing
            }
        }
        await writer.value
        for reader in readers { #expect(await reader.value == 0) }
    }
}

/// The last key index the writer has set.
private final class Published: Sendable {
    let index = Atomic<Int>(-1)
}
