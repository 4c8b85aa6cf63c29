import BenchmarkSupport
import Foundation

/// The dconf column: runs the C helper built by Benchmarks/run (`dconf/dconf-bench.c`) and reads its lines.
struct DconfClient {
    let helper: String?

    var available: Bool { helper.map { FileManager.default.isExecutableFile(atPath: $0) } ?? false }

    private func run(_ arguments: [String]) -> [String: Timing] {
        guard let helper, available else { return [:] }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: helper)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        do { try process.run() } catch { return [:] }
        let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        var results: [String: Timing] = [:]
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count == 3, let median = Double(fields[1]), let p99 = Double(fields[2]) else { continue }
            results[String(fields[0])] = Timing(median: median, p99: p99)
        }
        return results
    }

    func populate(_ count: Int) { _ = run(["populate", "\(count)"]) }

    func reads(_ count: Int, iterations: Int, rounds: Int) -> (present: Timing, missing: Timing) {
        let results = run(["read", "\(count)", "\(iterations)", "\(rounds)"])
        return (results["read"] ?? .notApplicable, results["read-missing"] ?? .notApplicable)
    }

    func writes(iterations: Int, syncIterations: Int, rounds: Int) -> (fast: Timing, sync: Timing) {
        let results = run(["write", "\(iterations)", "\(syncIterations)", "\(rounds)"])
        return (results["write"] ?? .notApplicable, results["write-sync"] ?? .notApplicable)
    }

    func signal(count: Int) -> Timing {
        run(["signal", "\(count)"])["signal"] ?? .notApplicable
    }
}
