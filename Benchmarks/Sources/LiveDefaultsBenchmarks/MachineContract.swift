import LiveDefaults
import LiveDefaultsTesting

/// The simulated machine's contract program, timed: what a user's test of live settings costs on it (the test
/// suite's `SimulatedMachineTests.contract` asserts what it sees). Two processes; 1,000 changes made and
/// synchronized by one, each read by the other after a settle; a crash; a power loss after an acknowledged write;
/// thirty minutes passing. No real file, no sleep.
enum MachineContract {
    static let suite = "com.example.machine"

    /// Runs it once: how many of its checks held (``checks`` when all did).
    static func run(seed: UInt64) -> Int {
        let machine = SimulatedMachine(seed: seed)
        guard let writer = machine.process("writer").defaults(suiteName: suite),
            let reader = machine.process("reader").defaults(suiteName: suite)
        else { return 0 }
        var held = 0
        for change in 1...1_000 {
            writer.set(change, forKey: "Counter")
            _ = writer.synchronize()
            machine.settleNow()
            if reader.integer(forKey: "Counter") == change { held += 1 }
        }
        writer.set("kept", forKey: "Acknowledged")
        _ = writer.synchronize()
        writer.set("lost", forKey: "Unwritten")
        machine.process("writer").crash()
        machine.settleNow()
        guard let restarted = machine.process("writer").defaults(suiteName: suite) else { return held }
        if restarted.string(forKey: "Acknowledged") == "kept" && restarted.object(forKey: "Unwritten") == nil {
            held += 1
        }
        restarted.set(42, forKey: "AfterPower")
        _ = restarted.synchronize()
        machine.powerLoss()
        guard let afterPower = machine.process("reader").defaults(suiteName: suite) else { return held }
        if afterPower.integer(forKey: "AfterPower") == 42 { held += 1 }
        machine.advanceNow(by: .seconds(30 * 60))
        if afterPower.integer(forKey: "AfterPower") == 42 { held += 1 }
        return held
    }

    /// How many checks ``run(seed:)`` makes.
    static let checks = 1_003
}
