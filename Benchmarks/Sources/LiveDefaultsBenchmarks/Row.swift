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

    /// What a smoke run's tripwire (``tripwire``) checks: how many times over its guard the measurement is, or
    /// nil when the goal has no tripwire. Most goals guard themselves (the factor); see ``overFloor(_:live:floor:_:)``,
    /// ``tripwire(limit:floor:)`` and ``withoutTripwire``.
    var tripwireFactor: Double?

    var isMet: Bool { factor <= 1 }

    /// At most `limit`; `measured` is the row's median (or a quantity derived from medians).
    static func atMost(_ limit: Double, measured: Double, _ text: String) -> Goal {
        let factor = limit > 0 ? measured / limit : .infinity
        return Goal(text: text, factor: factor, tripwireFactor: factor)
    }

    /// At least `minimum` (a ratio to another system, say).
    static func atLeast(_ minimum: Double, measured: Double, _ text: String) -> Goal {
        let factor = measured > 0 ? minimum / measured : .infinity
        return Goal(text: text, factor: factor, tripwireFactor: factor)
    }

    /// At most `limit` above a physical floor measured in the same run: the goal is on the difference of the two
    /// medians, the tripwire on the whole latency against the floor plus the limit. A difference of two medians
    /// of a few dozen samples each is mostly the VM's drift between them (the landed build of a week before read
    /// 2× to 9.8× its goal in three smoke runs in a row); a regression of the kind the tripwire is for (a store
    /// 30 times further from the floor) moves the whole latency as much.
    static func overFloor(_ limit: Double, live: Double, floor: Double, _ text: String) -> Goal {
        Goal(
            text: text, factor: limit > 0 ? (live - floor) / limit : .infinity,
            tripwireFactor: floor + limit > 0 ? live / (floor + limit) : .infinity)
    }

    /// The goal, with its tripwire on the measurement against the larger of the goal's `limit` and a `floor`
    /// measured in the same turns: for an absolute time that the VM's drift can carry above the goal with nothing
    /// changed in the code (a fresh process's open, whose floor row, no store at all, has read more than its goal
    /// on a slow stretch). A regression of the store's own cost still moves the measurement away from its floor.
    func tripwire(limit: Double, floor: Double) -> Goal {
        var goal = self
        // factor × limit is the measurement, for a goal made by `atMost(limit, …)`.
        goal.tripwireFactor = floor > limit && floor.isFinite ? factor * limit / floor : factor
        return goal
    }

    /// The goal, checked and reported, but no tripwire: for an absolute time (a disk's flush, a `set` of a few
    /// hundred nanoseconds) that the VM varies more than the tripwire's margin between runs of one build, where
    /// another goal of the row, relative to something measured beside it, guards the same code.
    var withoutTripwire: Goal {
        var goal = self
        goal.tripwireFactor = nil
        return goal
    }

    /// How many times a smoke run may miss a goal before it fails: a tripwire for a regression of the kind
    /// that made a write 60 times slower, not a timing test (a smoke run's medians are rough).
    static let tripwire = 3.0
}
