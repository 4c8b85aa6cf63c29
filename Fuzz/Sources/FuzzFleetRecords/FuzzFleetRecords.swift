import DefaultsToolSupport
import Foundation
import FuzzSupport
import LiveDefaults
import LiveDefaultsFleetRecords

/// What the fleet reads from etcd and from the agent's files, written by any tool: the first byte picks the
/// reader, the rest is its input.
///
/// 0 a rollout record, 1 a host's registration, 2 a host's health report, 3 the keys-under-rollout file,
/// 4 a `--stages` list. Each is a value or nothing (an error), never a trap — and a record that decodes
/// is one every reader can use: the arithmetic the driver, `--status`, history and the agents do with it
/// is done here too (the stage shown 1-based, the stage's own description looked up, its host count among
/// any number of live hosts, the bake and timeout as durations).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let data = fuzzInput(start, count)
    guard let selector = data.first else { return 0 }
    let input = Data(data.dropFirst())
    switch selector % 5 {
    case 0:
        guard let record = RolloutRecord.decode(input) else { return 0 }
        require((1...100).contains(record.stages.count), "a decoded record has 1 to 100 stages")
        let shown = record.stage + 1
        _ = min(shown, record.stages.count)
        _ = "stage \(shown) of \(record.stages.count)"
        if record.stage < record.stages.count, let stage = try? RolloutStage(parsing: record.stages[record.stage]) {
            for live in [0, 1, 3, 1000, Int.max] {
                let hosts = stage.hostCount(of: live)
                require((0...live).contains(hosts), "a stage's host count is within the live hosts")
            }
        }
        require(record.bake >= .zero && record.stageTimeout >= .zero, "a record's durations are not negative")
        _ = record.bake + record.stageTimeout
        _ = record.oldPropertyList
        _ = record.newPropertyList
        _ = record.isFinished
        _ = record.reached.values.max()
    case 1:
        guard let host = FleetHostRecord.decode(input) else { return 0 }
        _ = host.isHealthy
        _ = host.health?.appliedRevisions.values.max()
    case 2:
        guard let report = HealthReport.decode(input) else { return 0 }
        _ = report.appliedRevisions.values.max()
        _ = report.checked.timeIntervalSince(report.since)
        for refusing in (report.refusals ?? [:]).values {
            for refusal in refusing { _ = refusal.description }
        }
    case 3:
        let listed = KeysUnderRollout.decode(input)
        _ = listed.keys.keys.sorted()
    default:
        guard let stages = try? RolloutStage.list(String(decoding: input, as: UTF8.self)) else { return 0 }
        require((1...100).contains(stages.count), "a stage list has 1 to 100 stages")
        for stage in stages {
            for live in [0, 1, 7, Int.max] {
                require((0...live).contains(stage.hostCount(of: live)), "a host count within the live hosts")
            }
            _ = stage.description
        }
    }
    return 0
}
