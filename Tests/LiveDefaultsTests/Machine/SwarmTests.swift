import Foundation
import TestProcesses
import Testing

@testable import LiveDefaults

/// Random scenarios on the simulated machine (``Swarm``), from fixed seeds: a failure names the seed and the step
/// that replay it (`LIVEDEFAULTS_SWARM_SEED=<seed>` runs that one alone).
/// `.blockingWork`: a scenario runs its machine synchronously for seconds; on the cooperative pool it would hold one
/// of its threads, and tests awaiting streams starve behind it. `.serialized`: one scenario at a time, as each
/// keeps a core busy; run side by side they took every slot of `.blockingWork` and every core, and the fleet's
/// real-time tests beside them (etcd, agents) ran ten times slower, past their time limit.
@Suite("Swarm: random scenarios on the simulated machine, invariants after every step", .blockingWork, .serialized)
struct SwarmTests {
    /// The seeds run: 1 to 40, or `LIVEDEFAULTS_SWARM_SEED` alone, or `LIVEDEFAULTS_SWARM_SEEDS` of them (a long
    /// run) from `LIVEDEFAULTS_SWARM_FIRST` (1 unless given: runs side by side or one after another take ranges of
    /// their own, so that no scenario is run twice).
    static var seeds: [UInt64] {
        let environment = ProcessInfo.processInfo.environment
        if let seed = environment["LIVEDEFAULTS_SWARM_SEED"].flatMap({ UInt64($0) }) { return [seed] }
        if let count = environment["LIVEDEFAULTS_SWARM_SEEDS"].flatMap({ UInt64($0) }), count > 0 {
            let first = environment["LIVEDEFAULTS_SWARM_FIRST"].flatMap { UInt64($0) } ?? 1
            let (last, overflow) = first.addingReportingOverflow(count - 1)
            return overflow ? Array(first...UInt64.max) : Array(first...last)
        }
        return Array(1...40)
    }

    /// The steps of each seed's scenario: 200, or `LIVEDEFAULTS_SWARM_STEPS`.
    static var steps: Int {
        ProcessInfo.processInfo.environment["LIVEDEFAULTS_SWARM_STEPS"].flatMap { Int($0) } ?? 200
    }

    @Test("fixed seeds", arguments: seeds)
    func fixedSeed(_ seed: UInt64) {
        var swarm = Swarm(seed: seed)
        if let violation = swarm.run(steps: Self.steps) { Issue.record(Comment(rawValue: violation)) }
    }
}

/// The swarm finds past bugs: each brought back into the simulated processes (``ReintroducedBug``) is found by
/// some seed among the first ones, and the seed and the step that found it are reported.
/// `.serialized`: one bug hunt at a time (see ``SwarmTests``).
@Suite("Swarm: past bugs brought back are found", .blockingWork, .serialized)
struct SwarmFindsBugsTests {
    @Test("each past bug is found by a seed among the first hundred", arguments: ReintroducedBug.allCases)
    func findsBug(_ bug: ReintroducedBug) {
        var found: String?
        var steps = 0
        for seed in UInt64(1)...100 {
            var swarm = Swarm(seed: seed, reintroducing: [bug])
            if let violation = swarm.run(steps: 200) {
                steps += swarm.step + 1
                found = violation
                break
            }
            steps += 200
        }
        guard let found else {
            Issue.record("\(bug) was not found in 100 seeds of 200 steps")
            return
        }
        print("\(bug): found after \(steps) steps: \(found.split(separator: "\n").first ?? "")")
    }
}
