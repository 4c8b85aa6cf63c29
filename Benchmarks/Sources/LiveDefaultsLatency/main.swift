// Cross-process latency: how long after another process writes a domain file does an observer in this
// process get the new value? Release mode:
//
//   swift run -c release --package-path Benchmarks LiveDefaultsLatency [--writes N] [--burst N] [--foundation-writes N] [--smoke]
//
// The benchmark starts a copy of itself as the writer. For each paced write the writer changes the
// domain file, reports the moment the change was on disk (CLOCK_MONOTONIC, shared by all processes), and
// waits for the next command; this process follows the key with `updates(forKey:)` and timestamps each
// arrival. Three writers: temp file + rename, in-place truncate + write (as Foundation.UserDefaults
// writes), and LiveDefaults itself (`set` + `synchronize()`, timed from before the `set`). Then a burst of
// back-to-back writes, which must end with the final value delivered. Then, for comparison, Foundation:
// a reader that calls `synchronize()` before every read (without it, it never sees another process).
import BenchmarkSupport
import Configuration
import Foundation
import Glibc
import LiveDefaults
import LiveDefaultsConfiguration
import LiveDefaultsTesting
import Synchronization

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("LiveDefaultsLatency: \(message)\n".utf8))
    exit(2)
}

let domain = "com.example.latency"

// MARK: The writer process

/// Writes the domain file the way a given kind of writer does, then prints when it was done.
func runWriter(directory: String) -> Never {
    let path = directory + "/\(domain).plist"
    let library = try? Defaults(configuration: .rooted(at: directory, applicationDomain: domain + ".writer"))
    func rawWrite(_ value: Int, key: String, inPlace: Bool) {
        guard let data = try? PropertyList.dictionary([key: .integer(value)]).encoded(as: .xml) else {
            fail("cannot encode \(key)")
        }
        if let failure = writeFile(path, data, inPlace: inPlace) { fail(failure) }
    }
    while let line = readLine() {
        let words = line.split(separator: " ").map(String.init)
        guard words.count == 3, let value = Int(words[2]) else { fail("bad command \(line)") }
        switch words[0] {
        case "rename", "in-place":
            // Timed from before the write: the figure includes the writer's own open/write/close/rename,
            // because an observer can get the value before the writer runs its next instruction.
            let start = now()
            rawWrite(value, key: words[1], inPlace: words[0] == "in-place")
            print("\(value) \(start)")
        case "library":
            // Another LiveDefaults process, writing the same domain: timed from before the set.
            guard let library else { fail("no store") }
            let start = now()
            try? library.trySet(.integer(value), forKey: words[1], inDomain: domain, layer: .currentUser)
            library.synchronize()
            print("\(value) \(start)")
        case "burst":
            for index in 1..<value { rawWrite(index, key: words[1], inPlace: false) }
            let start = now()
            rawWrite(value, key: words[1], inPlace: false)
            print("\(value) \(start)")
        case "foundation":
            guard let foundation = UserDefaults(suiteName: domain) else { fail("no Foundation suite") }
            let start = now()
            foundation.set(value, forKey: words[1])
            foundation.synchronize()
            print("\(value) \(start)")
        default:
            fail("unknown command \(line)")
        }
        fflush(nil)
    }
    exit(0)
}

// MARK: Set-up

var writes = 1_000
var burst = 10_000
var foundationWrites = 20
var arguments = CommandLine.arguments.dropFirst()
if arguments.first == "--writer" {
    guard let directory = ProcessInfo.processInfo.environment["XDG_CONFIG_HOME"] else { fail("no directory") }
    runWriter(directory: directory)
}
while let argument = arguments.popFirst() {
    switch argument {
    case "--writes": writes = Int(arguments.popFirst() ?? "") ?? writes
    case "--burst": burst = Int(arguments.popFirst() ?? "") ?? burst
    case "--foundation-writes": foundationWrites = Int(arguments.popFirst() ?? "") ?? foundationWrites
    case "--smoke":
        writes = 50
        burst = 500
        foundationWrites = 3
    default: fail("usage: LiveDefaultsLatency [--writes N] [--burst N] [--foundation-writes N] [--smoke]")
    }
}

// Foundation reads XDG_CONFIG_HOME once, at start-up: the benchmark runs itself again with it pointing at a
// temporary directory (for this process's Foundation reader and for the writer), then removes it.
let directory = temporaryConfigHome(variable: "LIVEDEFAULTS_LATENCY_DIRECTORY", prefix: "livedefaults-latency")

let writer = Process()
writer.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
writer.arguments = ["--writer"]
let toWriter = Pipe()
let fromWriter = Pipe()
writer.standardInput = toWriter
writer.standardOutput = fromWriter
try writer.run()

/// One line from the writer: the value written and when.
func writerReport() -> (value: Int, time: UInt64) {
    guard let line = readLine(from: fromWriter) else { fail("the writer stopped") }
    let words = line.split(separator: " ")
    guard words.count == 2, let value = Int(words[0]), let time = UInt64(words[1]) else { fail("bad report") }
    return (value, time)
}

func send(_ command: String) {
    toWriter.fileHandleForWriting.write(Data((command + "\n").utf8))
}

let defaults = try Defaults(configuration: .rooted(at: directory, applicationDomain: domain))

func follow(_ key: String) -> (Arrivals, Task<Void, Never>) {
    let arrivals = Arrivals()
    let task = Task.detached {
        for await value in defaults.updates(forKey: key, emitCurrentValue: false) {
            if case .integer(let integer)? = value { arrivals.record(integer) }
        }
    }
    // The subscription is registered when the task starts iterating.
    while defaults.activeObserverCount == 0 { usleep(100) }
    return (arrivals, task)
}

struct Row {
    var name: String
    var samples: [Double]  // milliseconds
    var lost: Int

    func percentile(_ fraction: Double) -> Double {
        let sorted = samples.sorted()
        guard !sorted.isEmpty else { return .nan }
        return sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))]
    }
}

/// The same, through swift-configuration: a `LiveDefaultsProvider` watch on the key.
func followThroughProvider(_ key: String) -> (Arrivals, Task<Void, Never>) {
    let arrivals = Arrivals()
    let provider = LiveDefaultsProvider(defaults: defaults)
    let task = Task.detached {
        _ = try? await provider.watchValue(forKey: AbsoluteConfigKey([key]), type: .int) { updates in
            for await update in updates {
                if case .int(let integer)? = try? update.get().value?.content { arrivals.record(integer) }
            }
        }
    }
    while defaults.activeObserverCount == 0 { usleep(100) }
    return (arrivals, task)
}

func measure(_ mode: String, writes: Int, throughProvider: Bool = false) -> Row {
    let key = "Key-\(mode)\(throughProvider ? "-provider" : "")"
    let (arrivals, task) = throughProvider ? followThroughProvider(key) : follow(key)
    var samples: [Double] = []
    var lost = 0
    for value in 1...writes {
        send("\(mode) \(key) \(value)")
        let report = writerReport()
        if let arrival = arrivals.wait(for: value, seconds: 2) {
            samples.append(Double(Int64(arrival) - Int64(report.time)) / 1_000_000)
        } else {
            lost += 1
        }
    }
    task.cancel()
    while defaults.activeObserverCount > 0 { usleep(100) }
    return Row(
        name: throughProvider ? "\(mode), to LiveDefaultsProvider.watchValue" : mode, samples: samples, lost: lost)
}

func milliseconds(_ value: Double) -> String { String(format: "%.3f ms", value) }

// MARK: Runs

print("Cross-process latency, another process's write → updates(forKey:) in this process")
print("writer | writes | lost | median | p90 | p99 | max")
print("---|---|---|---|---|---|---")
for (mode, throughProvider) in [("rename", false), ("in-place", false), ("library", false), ("rename", true)] {
    let row = measure(mode, writes: writes, throughProvider: throughProvider)
    print(
        "\(row.name) | \(writes) | \(row.lost) | \(milliseconds(row.percentile(0.5))) | \(milliseconds(row.percentile(0.9))) | \(milliseconds(row.percentile(0.99))) | \(milliseconds(row.percentile(1)))"
    )
}

// A burst: 10,000 back-to-back renames; the observer must end on the final value.
do {
    let (arrivals, task) = follow("Burst")
    send("burst Burst \(burst)")
    let report = writerReport()
    let arrival = arrivals.wait(for: burst, seconds: 10)
    let delivered = arrival != nil
    let afterLast = arrival.map { Double(Int64($0) - Int64(report.time)) / 1_000_000 }
    print("")
    print(
        "burst of \(burst) back-to-back writes: final value \(delivered ? "delivered" : "NOT delivered")"
            + (afterLast.map { ", \(milliseconds($0)) after the last write" } ?? "")
            + ", \(arrivals.count) intermediate values seen (newest wins)")
    task.cancel()
    while defaults.activeObserverCount > 0 { usleep(100) }
    if !delivered { exit(1) }
}

// Foundation.UserDefaults in this process, for comparison, same machine, same run: first without
// synchronize() (it keeps what it loaded and never sees the writer), then with a synchronize() before
// every read.
do {
    guard let foundation = UserDefaults(suiteName: domain) else { fail("no Foundation suite") }
    _ = foundation.integer(forKey: "FoundationKey")  // loaded now, before any write
    send("foundation FoundationKey 1")
    _ = writerReport()
    let watchUntil = now() + 2_000_000_000
    var seenWithoutSynchronize = false
    while now() < watchUntil, !seenWithoutSynchronize {
        seenWithoutSynchronize = foundation.integer(forKey: "FoundationKey") == 1
        usleep(1_000)
    }
    var samples: [Double] = []
    for value in 2...(foundationWrites + 1) {
        send("foundation FoundationKey \(value)")
        let report = writerReport()
        let deadline = now() + 5_000_000_000
        while now() < deadline {
            foundation.synchronize()
            if foundation.integer(forKey: "FoundationKey") == value {
                samples.append(Double(Int64(now()) - Int64(report.time)) / 1_000_000)
                break
            }
        }
    }
    let row = Row(name: "Foundation", samples: samples, lost: foundationWrites - samples.count)
    print("")
    print("Foundation.UserDefaults reader in this process, writer = Foundation in the other process:")
    print(
        "- without synchronize(): \(seenWithoutSynchronize ? "saw the write" : "never saw the write in 2 s of polling")"
    )
    print(
        "- synchronize() before every read: \(foundationWrites) writes, \(row.lost) not seen in 5 s, "
            + "median \(milliseconds(row.percentile(0.5))), p99 \(milliseconds(row.percentile(0.99)))")
}

toWriter.fileHandleForWriting.closeFile()
writer.waitUntilExit()
