// Release-mode micro benchmark: LiveDefaults against Foundation.UserDefaults, same machine, same run.
//
//   swift run -c release LiveDefaultsBench [--iterations N]
//
// Each case is timed in rounds of `iterations` calls after a warm-up; the table shows the median and the
// 99th percentile of the per-call time over the rounds, and the ratio of the medians.
import Foundation
import LiveDefaults

var iterations = 200_000
var rounds = 41
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--iterations": iterations = Int(arguments.popFirst() ?? "") ?? iterations
    case "--rounds": rounds = Int(arguments.popFirst() ?? "") ?? rounds
    case "--smoke":
        iterations = 2_000
        rounds = 5
    default:
        FileHandle.standardError.write(Data("usage: LiveDefaultsBench [--iterations N] [--rounds N] [--smoke]\n".utf8))
        exit(2)
    }
}

struct Measurement {
    var median: Double
    var p99: Double
}

let settings = (iterations: iterations, rounds: rounds)

/// Nanoseconds per call of `body`, median and p99 over rounds.
func measure(_ body: () -> Int) -> Measurement {
    let (iterations, rounds) = settings
    var sink = 0
    for _ in 0..<(iterations / 10) { sink &+= body() }
    var samples: [Double] = []
    for _ in 0..<rounds {
        let start = DispatchTime.now().uptimeNanoseconds
        for _ in 0..<iterations { sink &+= body() }
        let elapsed = DispatchTime.now().uptimeNanoseconds - start
        samples.append(Double(elapsed) / Double(iterations))
    }
    if sink == 42 { print("") }  // keeps the optimiser from deleting the loop
    samples.sort()
    return Measurement(median: samples[samples.count / 2], p99: samples[min(samples.count - 1, samples.count * 99 / 100)])
}

// Foundation.UserDefaults reads XDG_CONFIG_HOME once, at start-up: setting it later would send its files into
// the real home. So the benchmark runs itself again as a child whose environment already points at a
// temporary directory, and removes the directory when the child ends.
let directoryVariable = "LIVEDEFAULTS_BENCH_DIRECTORY"
guard let directory = ProcessInfo.processInfo.environment[directoryVariable] else {
    let directory = NSTemporaryDirectory() + "livedefaults-bench-\(getpid())"
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    let child = Process()
    child.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    child.arguments = Array(CommandLine.arguments.dropFirst())
    var environment = ProcessInfo.processInfo.environment
    environment["XDG_CONFIG_HOME"] = directory
    environment[directoryVariable] = directory
    child.environment = environment
    try child.run()
    child.waitUntilExit()
    try? FileManager.default.removeItem(atPath: directory)
    exit(child.terminationStatus)
}
guard ProcessInfo.processInfo.environment["XDG_CONFIG_HOME"] == directory else { fatalError("XDG_CONFIG_HOME not set") }

let domain = "com.example.bench"
let keyCount = 1_000
let live = try Defaults(configuration: .rooted(at: directory, applicationDomain: domain))
guard let foundation = UserDefaults(suiteName: domain + ".foundation") else { fatalError("no suite") }
for index in 0..<keyCount {
    live.set(index, forKey: "Key\(index)")
    foundation.set(index, forKey: "Key\(index)")
}
live.synchronize()
foundation.synchronize()

var rows: [(String, Measurement, Measurement)] = []
rows.append((
    "integer(forKey:), \(keyCount) keys",
    measure { live.integer(forKey: "Key500") },
    measure { foundation.integer(forKey: "Key500") }
))
let typedKey = DefaultsKey<Int>("Key500", default: 0)
rows.append((
    "defaults[.key] (typed Int) vs integer(forKey:)",
    measure { live[typedKey] },
    measure { foundation.integer(forKey: "Key500") }
))
rows.append((
    "integer(forKey:), missing key",
    measure { live.integer(forKey: "Missing") },
    measure { foundation.integer(forKey: "Missing") }
))

func format(_ nanoseconds: Double) -> String {
    nanoseconds >= 1_000 ? String(format: "%.2f µs", nanoseconds / 1_000) : String(format: "%.1f ns", nanoseconds)
}

print("LiveDefaults vs Foundation.UserDefaults — \(settings.iterations) calls × \(settings.rounds) rounds, per call")
print("case | LiveDefaults median (p99) | Foundation median (p99) | ratio")
print("---|---|---|---")
for (name, ours, theirs) in rows {
    print("\(name) | \(format(ours.median)) (\(format(ours.p99))) | \(format(theirs.median)) (\(format(theirs.p99))) | \(String(format: "%.1f×", theirs.median / ours.median))")
}
