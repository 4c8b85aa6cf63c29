import Foundation
import LiveDefaults
import LiveDefaultsTesting
import TestProcesses
import Testing

/// The simulated machine (LiveDefaultsTesting's `SimulatedMachine`): processes running the real `Defaults` over
/// one in-memory file system, one clock and one scheduler; events as the kernel gives them; crashes and power
/// loss; the same seed, the same run.
/// `.blockingWork`: a settle runs the machine on the test's thread (the contract test for seconds in a debug build).
@Suite("A machine in memory: processes, events, crashes, power loss, replayed by a seed", .blockingWork)
struct SimulatedMachineTests {
    static let suite = "com.example.machine"

    @Test("what the issue asks of the contract names: two processes, 1,000 changes, a crash, a power loss, 30 minutes")
    func contract() async throws {
        let machine = SimulatedMachine(seed: 1)
        let writer = try #require(machine.process("writer").defaults(suiteName: Self.suite))
        let reader = try #require(machine.process("reader").defaults(suiteName: Self.suite))
        for change in 1...1_000 {
            writer.set(change, forKey: "Counter")
            #expect(writer.synchronize())
            await machine.settle()
            let seen = reader.integer(forKey: "Counter")
            if seen != change {
                Issue.record("change \(change): the reader saw \(seen) (seed \(machine.seed))")
                break
            }
        }

        // A crash: what the writer had not written is gone; what it synchronized stays.
        writer.set("kept", forKey: "Acknowledged")
        #expect(writer.synchronize())
        writer.set("lost", forKey: "Unwritten")
        machine.process("writer").crash()
        await machine.settle()
        let restarted = try #require(machine.process("writer").defaults(suiteName: Self.suite))
        #expect(restarted.string(forKey: "Acknowledged") == "kept")
        #expect(restarted.object(forKey: "Unwritten") == nil, "an edit not written dies with its process")
        #expect(reader.string(forKey: "Acknowledged") == "kept")

        // A power loss after an acknowledged write: the write survives whatever the power loss keeps.
        restarted.set(42, forKey: "AfterPower")
        #expect(restarted.synchronize())
        machine.powerLoss()
        let afterPower = try #require(machine.process("reader").defaults(suiteName: Self.suite))
        #expect(afterPower.integer(forKey: "AfterPower") == 42)
        #expect(afterPower.integer(forKey: "Counter") == 1_000)

        // Thirty minutes pass in no wall time.
        let before = machine.now
        await machine.advance(by: .seconds(30 * 60))
        #expect(machine.now.timeIntervalSince(before) >= 30 * 60)
        #expect(afterPower.integer(forKey: "AfterPower") == 42)
    }

    @Test("a change made by one process reaches another's stream and store with no synchronize and no sleep")
    func liveAcrossProcesses() async throws {
        let machine = SimulatedMachine(seed: 7)
        let server = try #require(machine.process("server").defaults(suiteName: Self.suite))
        let ops = try #require(machine.process("ops").defaults(suiteName: Self.suite))
        #expect(server.object(forKey: "RateLimit") == nil)
        ops.set(500, forKey: "RateLimit")
        await machine.settle()
        #expect(server.integer(forKey: "RateLimit") == 500)
        ops.removeObject(forKey: "RateLimit")
        await machine.settle()
        #expect(server.object(forKey: "RateLimit") == nil)
    }

    @Test(
        "another writer's save, each way an editor or a script writes, is seen by a running process",
        arguments: OtherWriter.allCases)
    func otherWriters(_ writer: OtherWriter) async throws {
        let machine = SimulatedMachine(seed: 3)
        let server = try #require(machine.process("server").defaults(suiteName: Self.suite))
        server.set(1, forKey: "Workers")
        #expect(server.synchronize())
        let path = "\(machine.process("server").userDirectory)/\(Self.suite).plist"
        for workers in 2...6 {
            let data = try PropertyListSerialization.data(
                fromPropertyList: ["Workers": workers], format: .xml, options: 0)
            machine.write(data, to: path, as: writer)
            await machine.settle()
            #expect(server.integer(forKey: "Workers") == workers, "\(writer), seed \(machine.seed)")
        }
    }

    @Test("the same seed gives the same trace, line for line; another seed may choose another order")
    func replay() async throws {
        func run(_ seed: UInt64) async throws -> [String] {
            let machine = SimulatedMachine(seed: seed)
            let a = try #require(machine.process("a").defaults(suiteName: Self.suite))
            let b = try #require(machine.process("b").defaults(suiteName: Self.suite))
            let c = try #require(machine.process("c").defaults(suiteName: Self.suite))
            for round in 0..<20 {
                a.set(round, forKey: "A")
                b.set(round, forKey: "B")
                if round % 5 == 0 {
                    machine.write(
                        try PropertyListSerialization.data(
                            fromPropertyList: ["C": round], format: .binary, options: 0),
                        to: "\(machine.userDirectory)/\(Self.suite).plist", as: .inPlace)
                }
                await machine.settle()
                _ = c.dictionaryRepresentation()
            }
            return machine.trace
        }
        let first = try await run(11)
        let again = try await run(11)
        #expect(first.count > 100)
        #expect(first == again)
        var differs = false
        for seed: UInt64 in 12..<20 where try await run(seed) != first { differs = true }
        #expect(differs, "the seed chooses the interleaving")
    }

    @Test("a seed replays line for line in another process, with Swift's hashing made deterministic")
    func replayAcrossProcesses() throws {
        // Swift seeds its hashing afresh in each process, and the library walks dictionaries (files, keys): the
        // order of their work, and so the machine's choices among it, then differ from one process to the next.
        func trace(_ seed: Int) throws -> String {
            let run = try runHelper(["machine-trace", "\(seed)"], environment: ["SWIFT_DETERMINISTIC_HASHING": "1"])
            #expect(run.status == 0)
            return run.output
        }
        let first = try trace(11)
        #expect(first.split(separator: "\n").count > 100)
        #expect(try trace(11) == first)
        #expect(try trace(12) != first, "another seed, another order")
    }

    @Test("a crashed process's locks are released and its leftovers are a dead process's")
    func crashReleasesLocks() async throws {
        let machine = SimulatedMachine(seed: 5)
        let first = machine.process("first")
        let store = try #require(first.defaults(suiteName: Self.suite))
        store.set(1, forKey: "A")
        first.crash()
        #expect(!first.isRunning)
        let second = try #require(machine.process("second").defaults(suiteName: Self.suite))
        second.set(2, forKey: "A")
        #expect(second.synchronize(), "no lock is left held by the crashed process")
        await machine.settle()
        #expect(second.integer(forKey: "A") == 2)
    }
}
