import Foundation
import Glibc

/// A measured case: the median and 99th percentile of the per-operation time over the rounds.
public struct Timing: Sendable {
    /// The median, in nanoseconds per operation.
    public var median: Double  // nanoseconds per operation
    /// The 99th percentile, in nanoseconds per operation.
    public var p99: Double

    /// A timing from its median and 99th percentile (nanoseconds per operation).
    public init(median: Double, p99: Double) {
        self.median = median
        self.p99 = p99
    }

    /// A row a system cannot run (printed as "—").
    public static let notApplicable = Timing(median: .nan, p99: .nan)
}

/// Timing: warm-up, then rounds of iterations, each round timed as a whole.
public struct Harness: Sendable {
    /// Operations per timed round.
    public var iterations: Int
    /// Timed rounds (each gives one sample).
    public var rounds: Int

    /// A plan of `rounds` rounds of `iterations` operations.
    public init(iterations: Int, rounds: Int) {
        self.iterations = iterations
        self.rounds = rounds
    }

    /// Times `body`, called `iterations` times per round.
    public func measure(iterations: Int? = nil, rounds: Int? = nil, _ body: () -> Int) -> Timing {
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

    /// Times two cases in alternating rounds (`first`, then `second`, each `iterations` times a round), so that a
    /// drift in the machine (a disk whose flushes slow down for a while) falls on both alike: for rows that
    /// differ by one thing and are read as a difference.
    public func measureInterleaved(
        iterations: Int? = nil, rounds: Int? = nil, _ first: () -> Int, _ second: () -> Int
    ) -> (Timing, Timing) {
        let timings = withoutActuallyEscaping(first) { first in
            withoutActuallyEscaping(second) { second in
                measureInterleaved(iterations: iterations, rounds: rounds, [first, second])
            }
        }
        return (timings[0], timings[1])
    }

    /// Times any number of cases in turns, round after round (each `iterations` times a round, in the order
    /// given): ``measureInterleaved(iterations:rounds:_:_:)`` for a row read against more than one floor.
    public func measureInterleaved(iterations: Int? = nil, rounds: Int? = nil, _ cases: [() -> Int]) -> [Timing] {
        let iterations = max(1, iterations ?? self.iterations)
        let rounds = max(3, rounds ?? self.rounds)
        var sink = 0
        for _ in 0..<max(1, iterations / 10) {
            for body in cases { sink &+= body() }
        }
        var samples = [[Double]](repeating: [], count: cases.count)
        for _ in 0..<rounds {
            for (index, body) in cases.enumerated() {
                let start = now()
                for _ in 0..<iterations { sink &+= body() }
                samples[index].append(Double(now() - start) / Double(iterations))
            }
        }
        if sink == 0x5EED { print("") }  // keeps the optimiser from removing the loops
        return samples.map(Self.summary)
    }

    /// The median and 99th percentile of per-operation samples (nanoseconds).
    public static func summary(_ samples: [Double]) -> Timing {
        guard !samples.isEmpty else { return .notApplicable }
        let sorted = samples.sorted()
        return Timing(
            median: sorted[sorted.count / 2], p99: sorted[min(sorted.count - 1, Int(Double(sorted.count) * 0.99))])
    }
}

/// CLOCK_MONOTONIC in nanoseconds, the same clock in every process.
public func now() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
}

/// A paced writer's start (``now()``), printed before it writes: the process that times the write learns the
/// start at once and is already waiting for the arrival, instead of waking, to read the start, at the moment
/// the write reaches the reader it times (on two cores, that wake-up competed with the reader's own threads).
public func announceStart() {
    print(now())
    fflush(nil)
}

/// Resident memory of this process, in bytes.
public func residentBytes() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = text.split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}

/// A duration in nanoseconds, printed with a unit people read at a glance (ns, µs, ms).
public func format(_ nanoseconds: Double) -> String {
    if nanoseconds.isNaN { return "—" }
    if nanoseconds < 0 { return "-" + format(-nanoseconds) }
    if nanoseconds >= 1_000_000 { return String(format: "%.2f ms", nanoseconds / 1_000_000) }
    if nanoseconds >= 1_000 { return String(format: "%.2f µs", nanoseconds / 1_000) }
    return String(format: "%.1f ns", nanoseconds)
}

/// A difference from a reference, signed: "+ " and the duration, or "- " and it when below the reference (a
/// floor measured in the same run can come out above the row it is the floor of, on a noisy machine).
public func formatOffset(_ nanoseconds: Double) -> String {
    nanoseconds < 0 ? "- " + format(-nanoseconds) : "+ " + format(nanoseconds)
}
