import Foundation
import Synchronization
import TestProcesses
import Testing

@testable import LiveDefaults

/// Typed reads of scalars come from lock-free slots (``ScalarReadSlots``); these tests hold them to the same
/// answers as the locked path, through every kind of change, and under concurrent writes.
@Suite("Typed reads from the lock-free read slots")
struct ReadSlotTests {
    static let limit = DefaultsKey<Int>("SlotLimit", default: -1)
    static let enabled = DefaultsKey<Bool>("SlotEnabled", default: false)
    static let ratio = DefaultsKey<Double>("SlotRatio", default: -1)
    static let since = DefaultsKey<Date?>("SlotSince")
    static let label = DefaultsKey<String>("SlotLabel", default: "none")
    /// The same name as `limit`, without a slot: always the locked path.
    static let unslotted = DefaultsKey<Int>("SlotLimit", default: -1, slot: -1)

    /// Both paths agree: the slotted key and the locked read of the same name; nil expects agreement only.
    func agree(_ defaults: Defaults, _ expected: Int?, _ comment: Comment) {
        let slotted = defaults[Self.limit]
        #expect(slotted == defaults[Self.unslotted], comment)
        if let expected { #expect(slotted == expected, comment) }
    }

    @Test("A slot follows every kind of change to the merged view")
    func followsChanges() async throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store("com.example.slots")
        agree(defaults, -1, "missing: the default")
        #expect(defaults.readSlots.read(Self.limit.slot)?.tag == .missing, "the first read filled the slot")
        #expect(defaults.readSlots.read(Self.unslotted.slot) == nil, "a key past the capacity has no slot")

        defaults.set(5, forKey: "SlotLimit")
        agree(defaults, 5, "set")
        defaults.register(defaults: ["SlotLimit": 1, "SlotRatio": 0.25] as [String: PropertyList])
        agree(defaults, 5, "a registered default stays below the application domain")
        defaults.removeObject(forKey: "SlotLimit")
        agree(defaults, 1, "removed: the registered default shows")
        #expect(defaults[Self.ratio] == 0.25)

        defaults.set("7", forKey: "SlotLimit")
        agree(defaults, 7, "a string: the locked path, with the same conversion")
        #expect(defaults.readSlots.read(Self.limit.slot)?.tag == .other)
        defaults.set(true, forKey: "SlotLimit")
        // A value the key refuses: the slotted key returns the last valid value (the locked path of a key
        // past the slot table has no guard and returns the default, as documented).
        #expect(defaults[Self.limit] == 7, "a Boolean is not an integer: the last valid value")
        #expect(defaults[Self.unslotted] == -1)
        defaults.set(1, forKey: "SlotEnabled")
        #expect(defaults[Self.enabled], "the integer 1 read as a Boolean, through the slot")
        defaults.set(2.0, forKey: "SlotLimit")
        agree(defaults, 2, "a whole real read as an integer")
        defaults.set(2.75, forKey: "SlotLimit")
        #expect(defaults[Self.limit] == 2, "a fractional real is the wrong shape: the last valid value")
        #expect(defaults[Self.unslotted] == -1)
        let date = Date(timeIntervalSinceReferenceDate: 12_345.5)
        defaults.set(date, forKey: "SlotSince")
        #expect(defaults[Self.since] == date)
        #expect(defaults[Self.label] == "none")
        defaults.set("on", forKey: "SlotLabel")
        #expect(defaults[Self.label] == "on")

        // Another store on the same file, and another process.
        let other = try directory.store("com.example.slots")
        other.set(40, forKey: "SlotLimit")
        agree(defaults, 40, "another store of this process")
        // On disk before another process writes the key (written later, it would win, as the last write does).
        #expect(other.synchronize())
        #expect(try runHelper(["write-sequence", directory.path, "com.example.slots", "SlotLimit", "3"]).status == 0)
        #expect(await waitForValue(defaults, "SlotLimit") { $0 == 3 })
        #expect(defaults[Self.limit] == 3, "another process's write reaches the slot")
        agree(defaults, 3, "after another process's write")
    }

    @Test("Each store has its own slots; arguments and forced values win in them too")
    func perStore() throws {
        let directory = TemporaryDirectory()
        let first = try directory.store("com.example.first")
        let second = try directory.store("com.example.second", arguments: ["-SlotLimit", "9"])
        first.set(1, forKey: "SlotLimit")
        second.set(2, forKey: "SlotLimit")
        agree(first, 1, "first store")
        agree(second, 9, "the argument domain wins")

        try FileManager.default.createDirectory(atPath: directory.file("Managed"), withIntermediateDirectories: true)
        try directory.write("Managed/com.example.third.plist", SearchListTests.xml(["SlotLimit": 77]))
        try directory.write("com.example.third.plist", SearchListTests.xml(["SlotLimit": 1]))
        let managed = try directory.store("com.example.third")
        agree(managed, 77, "a forced value")
        managed.set(3, forKey: "SlotLimit")
        agree(managed, 77, "a forced value refuses the write")
    }

    @Test("Readers racing a writer only ever see values that were written")
    func concurrentReads() async throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store("com.example.race")
        let rounds = 20_000
        // Integers n, reals n + 0.5 and a string alternate: a torn slot (one kind's tag with another's
        // payload) would read as a number that was never written.
        let writer = Task.detached {
            for round in 0..<rounds {
                switch round % 3 {
                case 0: defaults.set(round, forKey: "SlotRatio")
                case 1: defaults.set(Double(round) + 0.5, forKey: "SlotRatio")
                default: defaults.set("text", forKey: "SlotRatio")
                }
            }
        }
        let readers = (0..<3).map { _ in
            Task.detached { () -> Int in
                var bad = 0
                var reads = 0
                repeat {
                    for _ in 0..<1_000 {
                        let value = defaults[Self.ratio]
                        let doubled = value * 2
                        let plausible =
                            value == -1 || (doubled == doubled.rounded() && value >= 0 && value < Double(rounds))
                        if !plausible { bad += 1 }
                    }
                    reads += 1_000
                } while defaults.integer(forKey: "SlotRatio") < rounds - 3 && reads < 50_000_000
                return bad
            }
        }
        await writer.value
        for reader in readers { #expect(await reader.value == 0) }
        #expect(defaults[Self.ratio] == defaults.double(forKey: "SlotRatio"))
    }
}
