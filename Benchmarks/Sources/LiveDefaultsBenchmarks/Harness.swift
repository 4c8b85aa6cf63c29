import Foundation
import Glibc

/// Timing: warm-up, then rounds of iterations; the median and 99th percentile of the per-operation time.
struct Measurement: Sendable {
    var median: Double  // nanoseconds per operation
    var p99: Double

    static let notApplicable = Measurement(median: .nan, p99: .nan)
}

struct Harness: Sendable {
    var iterations: Int
    var rounds: Int

    /// Times `body`, called `iterations` times per round.
    func measure(iterations: Int? = nil, rounds: Int? = nil, _ body: () -> Int) -> Measurement {
        let iterations = max(1, iterations ?? self.iterations)
        let rounds = max(3, rounds ?? self.rounds)
        var sink = 0
        for _ in 0..<max(1, iterations / 10) { sink &+= body() }
        var samples: [Double] = []
        samples.reserveCapacity(rounds)
        for _ in 0..<rounds {
            let start = now()
            for _ in 0..<iterations { sink &+= body() }
            samples.append(Double(now() - start) / Double(iterations))
        }
        if sink == 0x5EED { print("") }  // keeps the optimiser from removing the loop
        return Self.summary(samples)
    }

    static func summary(_ samples: [Double]) -> Measurement {
        guard !samples.isEmpty else { return .notApplicable }
        let sorted = samples.sorted()
        return Measurement(
            median: sorted[sorted.count / 2], p99: sorted[min(sorted.count - 1, Int(Double(sorted.count) * 0.99))])
    }
}

/// CLOCK_MONOTONIC in nanoseconds, the same clock in every process.
func now() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
}

/// Resident memory of this process, in bytes.
func residentBytes() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = text.split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}

func format(_ nanoseconds: Double) -> String {
    if nanoseconds.isNaN { return "—" }
    if nanoseconds >= 1_000_000 { return String(format: "%.2f ms", nanoseconds / 1_000_000) }
    if nanoseconds >= 1_000 { return String(format: "%.2f µs", nanoseconds / 1_000) }
    return String(format: "%.1f ns", nanoseconds)
}

/// One row of the results table.
struct Row: Sendable {
    var name: String
    var live: Measurement
    var foundation: Measurement
    var dconf: Measurement
    /// The goal, as a minimum ratio of the other system's median to ours (nil: no goal for this row).
    var goalFoundation: Double?
    var goalDconf: Double?
    var note = ""

    func ratio(_ other: Measurement) -> Double { other.median / live.median }

    var line: String {
        func ratioText(_ other: Measurement, _ goal: Double?) -> String {
            let ratio = ratio(other)
            guard ratio.isFinite else { return "—" }
            let mark = goal.map { ratio >= $0 ? " ✓ (≥\(Int($0))×)" : " ✗ (goal ≥\(Int($0))×)" } ?? ""
            return String(format: "%.1f×", ratio) + mark
        }
        return "| \(name) | \(format(live.median)) (\(format(live.p99))) | \(format(foundation.median)) (\(format(foundation.p99))) | "
            + "\(ratioText(foundation, goalFoundation)) | \(format(dconf.median)) (\(format(dconf.p99))) | \(ratioText(dconf, goalDconf)) | \(note) |"
    }

    static let header = """
        | case | LiveDefaults median (p99) | Foundation median (p99) | ratio | dconf median (p99) | ratio | note |
        |---|---|---|---|---|---|---|
        """
}
