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
    /// The row's goals on its medians, checked (the ratios above are added by ``goals``).
    var checks: [Goal] = []
    var note = ""

    func ratio(_ other: Timing) -> Double { other.median / live.median }

    /// Every goal of the row: its checks, and the ratios to Foundation and dconf it must reach.
    var goals: [Goal] {
        var goals = checks
        if let goal = goalFoundation, ratio(foundation).isFinite {
            goals.append(.atLeast(goal, measured: ratio(foundation), "≥ \(Int(goal))× Foundation's median"))
        }
        if let goal = goalDconf, ratio(dconf).isFinite {
            goals.append(.atLeast(goal, measured: ratio(dconf), "≥ \(Int(goal))× dconf's median"))
        }
        return goals
    }

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

/// A goal of a row, checked against a median: what it asks, and by how much the measurement misses it.
///
/// Medians only: a smoke run (CI) takes a few dozen samples, whose 99th percentile is their largest, so a p99
/// goal is reported in the row's note but is no tripwire.
struct Goal: Sendable {
    /// What the goal asks, for a person: the bound and what it bounds.
    var text: String
    /// How many times over the goal the measurement is (measured ÷ allowed for a bound, wanted ÷ measured for
    /// a ratio to reach): 1 or less is met.
    var factor: Double

    var isMet: Bool { factor <= 1 }

    /// At most `limit`; `measured` is the row's median (or a quantity derived from medians).
    static func atMost(_ limit: Double, measured: Double, _ text: String) -> Goal {
        Goal(text: text, factor: limit > 0 ? measured / limit : .infinity)
    }

    /// At least `minimum` (a ratio to another system, say).
    static func atLeast(_ minimum: Double, measured: Double, _ text: String) -> Goal {
        Goal(text: text, factor: measured > 0 ? minimum / measured : .infinity)
    }

    /// How many times a smoke run may miss a goal before it fails: a tripwire for a regression of the kind
    /// that made a write 60 times slower, not a timing test (a smoke run's medians are rough).
    static let tripwire = 3.0
}
