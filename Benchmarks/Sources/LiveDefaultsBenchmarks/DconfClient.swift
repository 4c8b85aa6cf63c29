import BenchmarkSupport
import Foundation

/// The dconf column: runs the C helper built by Benchmarks/run (`dconf/dconf-bench.c`) and reads its lines.
///
/// Every case runs on a dconf database of its own, holding exactly the keys of the row's size: the helper
/// gets a profile (`DCONF_PROFILE`) naming a user database that no other case has touched (dconf's writer
/// service keeps one file per database name, `$XDG_CONFIG_HOME/dconf/<name>`). One shared database that
/// already held every size's keys made dconf's writes and signals look a hundred times slower than they
/// are on a database of the row's size.
struct DconfClient {
    let helper: String?
    /// Where the profiles are written (the benchmark's temporary `XDG_CONFIG_HOME`).
    let directory: String

    var available: Bool { helper.map { FileManager.default.isExecutableFile(atPath: $0) } ?? false }

    /// A fresh database name for one case and size; `populate` fills it. The name becomes part of a D-Bus
    /// object path (`/ca/desrt/dconf/Writer/<name>`), so letters, digits and `_` only.
    struct Database {
        let name: String
        let keys: Int
    }

    private static let serial = Serial()

    /// A database no other case uses, for `keys` keys.
    func freshDatabase(_ purpose: String, keys: Int) -> Database {
        Database(name: "bench_\(purpose)_n\(keys)_\(Self.serial.next())", keys: keys)
    }

    private func run(_ arguments: [String], in database: Database) -> [String: Timing] {
        guard let helper, available else { return [:] }
        let profile = "\(directory)/dconf-profile-\(database.name)"
        do {
            try Data("user-db:\(database.name)\n".utf8).write(to: URL(fileURLWithPath: profile))
        } catch {
            return [:]
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: helper)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(["DCONF_PROFILE": profile]) { $1 }
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

    /// Writes the database's keys (`/livedefaults/n<keys>/key<i>`, one change set).
    func populate(_ database: Database) {
        _ = run(["populate", "\(database.keys)"], in: database)
    }

    func reads(_ database: Database, iterations: Int, rounds: Int) -> (present: Timing, missing: Timing) {
        let results = run(["read", "\(database.keys)", "\(iterations)", "\(rounds)"], in: database)
        return (results["read"] ?? .notApplicable, results["read-missing"] ?? .notApplicable)
    }

    func writes(_ database: Database, iterations: Int, syncIterations: Int, rounds: Int) -> (fast: Timing, sync: Timing)
    {
        let results = run(["write", "\(iterations)", "\(syncIterations)", "\(rounds)"], in: database)
        return (results["write"] ?? .notApplicable, results["write-sync"] ?? .notApplicable)
    }

    func signal(_ database: Database, count: Int) -> Timing {
        run(["signal", "\(count)"], in: database)["signal"] ?? .notApplicable
    }
}

/// Numbers for database names, unique within the run.
private final class Serial: @unchecked Sendable {
    // @unchecked: `value` is only touched under `lock`.
    private let lock = NSLock()
    private var value = 0

    func next() -> Int {
        lock.withLock {
            value += 1
            return value
        }
    }
}
