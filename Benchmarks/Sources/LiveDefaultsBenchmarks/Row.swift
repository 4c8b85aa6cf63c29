import BenchmarkSupport

/// One row of the results table.
struct Row: Sendable {
    var name: String
    var live: Timing
    var foundation: Timing
    var dconf: Timing
    /// The goal, as a minimum ratio of the other system's median to ours (nil: no goal for this row).
    var goalFoundation: Double?
    var goalDconf: Double?
    var note = ""

    func ratio(_ other: Timing) -> Double { other.median / live.median }

    var line: String {
        func ratioText(_ other: Timing, _ goal: Double?) -> String {
            let ratio = ratio(other)
            guard ratio.isFinite else { return "—" }
            let mark = goal.map { ratio >= $0 ? " ✓ (≥\(Int($0))×)" : " ✗ (goal ≥\(Int($0))×)" } ?? ""
            return String(format: "%.1f×", ratio) + mark
        }
        return
            "| \(name) | \(format(live.median)) (\(format(live.p99))) | \(format(foundation.median)) (\(format(foundation.p99))) | "
            + "\(ratioText(foundation, goalFoundation)) | \(format(dconf.median)) (\(format(dconf.p99))) | \(ratioText(dconf, goalDconf)) | \(note) |"
    }

    static let header = """
        | case | LiveDefaults median (p99) | Foundation median (p99) | ratio | dconf median (p99) | ratio | note |
        |---|---|---|---|---|---|---|
        """
}
