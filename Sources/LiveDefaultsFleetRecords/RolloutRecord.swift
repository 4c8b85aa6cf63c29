public import Foundation
public import LiveDefaults

/// A rollout's state, kept in etcd (`<prefix>.rollouts/<domain>/<key>`, JSON) and not in the program that
/// drives it: a driver that dies leaves it where it was, and `--status`, `--resume` and `--abort` read it.
public struct RolloutRecord: Sendable, Hashable, Codable {
    /// Where a rollout is.
    public enum Phase: String, Sendable, Hashable, Codable {
        /// Stages are being given the new value (or were, when its driver stopped: see ``FleetRollout``).
        case running
        /// Every stage passed: the new value is the domain's value.
        case completed
        /// A stage failed: every reached host went back to the old value.
        case rolledBack
        /// Stopped by `--abort`: every reached host went back to the old value.
        case aborted
    }

    /// The rollout's identifier: `r`, its start time (UTC, to the second) and four random hex digits
    /// (`r20261127-041503-9f3a`).
    public var id: String
    /// The domain.
    public var domain: String
    /// The key.
    public var key: String
    /// The key's value before the rollout, as an XML property list; nil when the key was absent.
    public var oldValue: Data?
    /// The value being rolled out, as an XML property list.
    public var newValue: Data
    /// The stages as given: host counts (`1`) or percentages of the live hosts (`10%`).
    public var stages: [String]
    /// How long every host of a stage must stay healthy, after it has the value, for the stage to pass.
    public var bakeSeconds: Double
    /// How long a stage may take to pass (the hosts taking the value, then the bake) before it fails.
    public var stageTimeoutSeconds: Double
    /// Where it is.
    public var phase: Phase
    /// The stage being given the value (0-based); the number of stages when completed.
    public var stage: Int
    /// Each reached host, with the etcd revision that gave it the new value.
    public var reached: [String: Int64]
    /// When it started, and when it last changed.
    public var started: Date
    /// When it last changed.
    public var updated: Date
    /// Why it stopped, when it rolled back or was aborted.
    public var reason: String?
    /// The host whose failure rolled it back, if one did.
    public var failedHost: String?
    /// What each reached host's health was when the driver last looked (`healthy: detail`).
    public var health: [String: String]
    /// A line per event, oldest first: each stage's start and end, the rollback.
    public var log: [String]

    /// A record (the driver makes them).
    package init(
        id: String, domain: String, key: String, oldValue: Data?, newValue: Data, stages: [String],
        bakeSeconds: Double, stageTimeoutSeconds: Double, phase: Phase, stage: Int, reached: [String: Int64],
        started: Date, updated: Date, reason: String? = nil, failedHost: String? = nil, health: [String: String],
        log: [String]
    ) {
        self.id = id
        self.domain = domain
        self.key = key
        self.oldValue = oldValue
        self.newValue = newValue
        self.stages = stages
        self.bakeSeconds = bakeSeconds
        self.stageTimeoutSeconds = stageTimeoutSeconds
        self.phase = phase
        self.stage = stage
        self.reached = reached
        self.started = started
        self.updated = updated
        self.reason = reason
        self.failedHost = failedHost
        self.health = health
        self.log = log
    }

    /// The bake time, to the millisecond (a decoded record's is within ``maximumSeconds``, so it fits).
    public var bake: Duration { Self.milliseconds(bakeSeconds) }
    /// The stage timeout, to the millisecond.
    public var stageTimeout: Duration { Self.milliseconds(stageTimeoutSeconds) }

    /// Whole milliseconds of `seconds`, clamped to 0…``maximumSeconds`` (NaN is 0), so that no value traps.
    private static func milliseconds(_ seconds: Double) -> Duration {
        let clamped = seconds.isNaN ? 0 : min(max(seconds, 0), maximumSeconds)
        return .milliseconds(Int64(exactly: (clamped * 1000).rounded(.down)) ?? 0)
    }

    /// The old value as a property list (nil: absent).
    public var oldPropertyList: PropertyList? { oldValue.flatMap { try? PropertyList.decode($0).value } }
    /// The new value as a property list.
    public var newPropertyList: PropertyList? { try? PropertyList.decode(newValue).value }

    /// Whether it ended (completed, rolled back or aborted).
    public var isFinished: Bool { phase != .running }

    /// The longest bake or stage timeout a record holds, in seconds: far beyond any real one, and small
    /// enough that a count of milliseconds of it never overflows.
    public static let maximumSeconds: Double = 1_000_000_000

    /// The record etcd's bytes hold, or nil when they are none or not one that can be driven: 1 to 100
    /// stages, a stage index within them, bake and timeout finite and within ``maximumSeconds``. Every
    /// reader (the driver, `--status`, history, the agents) takes records through here, so that a record
    /// written by another tool never traps one of them.
    public static func decode(_ bytes: Data) -> RolloutRecord? {
        guard let record = try? JSONDecoder.fleetRecords.decode(RolloutRecord.self, from: bytes),
            (1...100).contains(record.stages.count), (0...record.stages.count).contains(record.stage),
            (0...maximumSeconds).contains(record.bakeSeconds),
            (0...maximumSeconds).contains(record.stageTimeoutSeconds)
        else { return nil }
        return record
    }
}

/// One stage of a rollout: how many of the live hosts have the new value once it passes.
public enum RolloutStage: Sendable, Hashable, CustomStringConvertible {
    /// A number of hosts.
    case hosts(Int)
    /// A percentage of the live hosts (rounded up, at least one host).
    case percent(Int)

    /// A stage as written: `3` or `25%`.
    ///
    /// - Throws: ``FleetError/Code-swift.enum/invalidOption`` for anything else (0, a percentage above 100).
    public init(parsing text: String) throws(FleetError) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.hasSuffix("%") {
            guard let percent = Int(trimmed.dropLast()), (1...100).contains(percent) else {
                throw FleetError(.invalidOption, "a stage's percentage is 1% to 100%, not \(text)")
            }
            self = .percent(percent)
        } else {
            guard let count = Int(trimmed), count >= 1 else {
                throw FleetError(.invalidOption, "a stage is a host count (1 or more) or a percentage, not \(text)")
            }
            self = .hosts(count)
        }
    }

    /// The stages of a comma-separated list (`1,10%,50%,100%`).
    ///
    /// - Throws: ``FleetError/Code-swift.enum/invalidOption`` for an empty list or a stage that is not one.
    public static func list(_ text: String) throws(FleetError) -> [RolloutStage] {
        let parts = text.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        guard !text.isEmpty, parts.count <= 100 else {
            throw FleetError(.invalidOption, "--stages lists 1 to 100 stages, such as 1,10%,50%,100%")
        }
        var stages: [RolloutStage] = []
        for part in parts { stages.append(try RolloutStage(parsing: part)) }
        return stages
    }

    /// How many hosts the stage means among `live` hosts: at least one, at most all.
    public func hostCount(of live: Int) -> Int {
        guard live > 0 else { return 0 }
        switch self {
        case .hosts(let count): return min(max(count, 1), live)
        case .percent(let percent):
            // ⌈live × percent / 100⌉ by parts, so that no live count overflows (percent is 1…100 when parsed,
            // clamped here for one made in code).
            let share = min(max(percent, 0), 100)
            let (whole, rest) = live.quotientAndRemainder(dividingBy: 100)
            let hosts = whole * share + (rest * share + 99) / 100
            return min(max(hosts, 1), live)
        }
    }

    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    public var description: String {
        switch self {
        case .hosts(let count): "\(count)"
        case .percent(let percent): "\(percent)%"
        }
    }
}
