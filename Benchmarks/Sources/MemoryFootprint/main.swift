// Resident memory: what a domain, an observer and a watched domain cost a process, LiveDefaults beside
// Foundation's UserDefaults doing the same work, each measurement in a fresh process (`Benchmarks/run`):
//
//   MemoryFootprint [--smoke]
//
// Rows (each system, same files, same work):
// - one domain of 10 / 10,000 / 70,000 keys open and one key read (integers Key0…, an XML property list);
// - 1,000 observers of one key of a 10-key domain: LiveDefaults, 1,000 iterators of `updates(forKey:)`
//   registered (the library's cost), and 1,000 `for await` loops each in a task of its own (what a program
//   usually holds); Foundation, 1,000 NotificationCenter observers of `UserDefaults.didChangeNotification`
//   (what Foundation offers on Linux, where key-value observation of UserDefaults does not exist);
// - 1,000 watched domains: 1,000 suites of 10 keys, each opened and one key read.
// The figure is the growth of the process's resident set (VmRSS) from just before the work to just after it
// (Foundation already loaded in both, so its own start-up is not counted), median of five fresh processes;
// the process's total is shown beside it, and the growth split into its anonymous part (what the work
// allocated: heap, thread stacks, the runtime's metadata) and its file-backed part (code pages mapped on
// first use: LiveDefaults' code is in the executable, mapped by the kernel in 64 KiB runs around each first
// touch; Foundation's is in shared libraries that the loader had already mapped in large pieces).
import BenchmarkSupport
import Foundation
import Glibc
import LiveDefaults
import LiveDefaultsTesting

/// The process's resident set, in KiB: VmRSS, and its anonymous (RssAnon: heap, stacks, the runtime's
/// metadata) and file-backed (RssFile: code and data mapped from the executable and libraries) parts, from
/// /proc/self/status; -1 where a line is missing.
func resident() -> (total: Int, anonymous: Int, file: Int) {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return (-1, -1, -1) }
    func field(_ name: String) -> Int {
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(name + ":") }),
            let number = Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
        else { return -1 }
        return number
    }
    return (field("VmRSS"), field("RssAnon"), field("RssFile"))
}

/// Writes `count` domains of `keys` integer keys each (`<prefix><i>.plist`, Key0 = 0 …) as XML.
func prepare(_ directory: String, prefix: String, domains count: Int, keys: Int) {
    var contents: [String: PropertyList] = [:]
    for index in 0..<keys { contents["Key\(index)"] = .integer(index) }
    guard let data = try? PropertyList.dictionary(contents).encoded(as: .xml) else { fatalError("cannot encode") }
    for index in 0..<count {
        let name = count == 1 ? prefix : "\(prefix)\(index)"
        guard FileManager.default.createFile(atPath: "\(directory)/\(name).plist", contents: data) else {
            fatalError("cannot write \(directory)/\(name).plist")
        }
    }
}

/// Child mode: `MemoryFootprint measure <system> <row> <n>`; prints "before after" in KiB.
func measure(system: String, row: String, count: Int) async -> Never {
    _ = ProcessInfo.processInfo.environment  // Foundation loaded and running in both systems before the count
    _ = NotificationCenter.default
    let before = resident()
    var keep: [Any] = []
    var tasks: [Task<Void, Never>] = []
    switch (system, row) {
    case ("LiveDefaults", "domain"):
        let defaults = Defaults(suiteName: "com.example.memory.n\(count)")
        precondition(defaults?.integer(forKey: "Key1") == 1)
        keep.append(defaults as Any)
    case ("Foundation", "domain"):
        let defaults = UserDefaults(suiteName: "com.example.memory.n\(count)")
        precondition(defaults?.integer(forKey: "Key1") == 1)
        keep.append(defaults as Any)
    case ("LiveDefaults", "observers"):
        // The library's own cost: iterators registered with the store, each waiting for the key's next change
        // (what a `for await` loop holds), without the tasks that would run the loops.
        guard let defaults = Defaults(suiteName: "com.example.memory.n10") else { fatalError() }
        precondition(defaults.integer(forKey: "Key1") == 1)
        for _ in 0..<count {
            keep.append(defaults.updates(forKey: "Key1", emitCurrentValue: false).makeAsyncIterator())
        }
        keep.append(defaults)
        precondition(defaults.activeObserverCount == count, "\(defaults.activeObserverCount) registered")
    case ("LiveDefaults", "observer tasks"):
        // The same, each iterated by a `for await` loop in a task of its own: the task is most of it.
        guard let defaults = Defaults(suiteName: "com.example.memory.n10") else { fatalError() }
        precondition(defaults.integer(forKey: "Key1") == 1)
        for _ in 0..<count {
            let updates = defaults.updates(forKey: "Key1", emitCurrentValue: false)
            tasks.append(Task { for await _ in updates {} })
        }
        keep.append(defaults)
        while defaults.activeObserverCount < count { try? await Task.sleep(for: .milliseconds(1)) }
    case ("Foundation", "observers"), ("Foundation", "observer tasks"):
        guard let defaults = UserDefaults(suiteName: "com.example.memory.n10") else { fatalError() }
        precondition(defaults.integer(forKey: "Key1") == 1)
        for _ in 0..<count {
            keep.append(
                NotificationCenter.default.addObserver(
                    forName: UserDefaults.didChangeNotification, object: defaults, queue: nil
                ) { _ in })
        }
        keep.append(defaults)
    case ("LiveDefaults", "domains"):
        for index in 0..<count {
            let defaults = Defaults(suiteName: "com.example.memory.d\(index)")
            precondition(defaults?.integer(forKey: "Key1") == 1)
            keep.append(defaults as Any)
        }
    case ("Foundation", "domains"):
        for index in 0..<count {
            let defaults = UserDefaults(suiteName: "com.example.memory.d\(index)")
            precondition(defaults?.integer(forKey: "Key1") == 1)
            keep.append(defaults as Any)
        }
    default:
        fatalError("unknown \(system) \(row)")
    }
    let after = resident()
    print(before.total, after.total, after.anonymous - before.anonymous, after.file - before.file)
    withExtendedLifetime((keep, tasks)) {}
    exit(0)
}

let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "measure", arguments.count == 4, let count = Int(arguments[3]) {
    await measure(system: arguments[1], row: arguments[2], count: count)
}
let smoke = arguments.contains("--smoke")
let directory = temporaryConfigHome(variable: "LIVEDEFAULTS_MEMORY_DIRECTORY", prefix: "livedefaults-memory")
let sizes = smoke ? [10, 10_000] : [10, 10_000, 70_000]
for size in sizes { prepare(directory, prefix: "com.example.memory.n\(size)", domains: 1, keys: size) }
let many = smoke ? 100 : 1_000
prepare(directory, prefix: "com.example.memory.d", domains: many, keys: 10)
let runs = smoke ? 1 : 5

func kib(_ value: Int) -> String {
    value >= 10_240 ? String(format: "%.1f MiB", Double(value) / 1024) : "\(value) KiB"
}

print(
    "Resident memory a process gains for the work (VmRSS after − before; process total in brackets), median of \(runs);"
        + " then the growth's anonymous part (heap, stacks, runtime metadata: what the work allocated) and its"
        + " file-backed part (code pages mapped from the executable and libraries on first use)")
print(
    "| work | LiveDefaults | Foundation | LiveDefaults ÷ Foundation | anonymous: LiveDefaults | Foundation | ÷ |"
        + " code and files: LiveDefaults | Foundation |")
print("|---|---|---|---|---|---|---|---|---|")
let rows: [(String, String, Int)] =
    sizes.map { ("one domain of \($0) keys, one key read", "domain", $0) }
    + [
        ("\(many) observers of one key (LiveDefaults: registered iterators)", "observers", many),
        ("\(many) observers of one key (LiveDefaults: each a `for await` task)", "observer tasks", many),
        ("\(many) watched domains of 10 keys", "domains", many),
    ]

/// One measurement: growth, process total, anonymous growth, file-backed growth (KiB).
struct Sample {
    var growth: Int
    var total: Int
    var anonymous: Int
    var file: Int
}

func ratio(_ ours: Int, _ theirs: Int) -> String {
    theirs > 0 ? String(format: "%.2f", Double(ours) / Double(theirs)) : "–"
}

for (title, row, count) in rows {
    var cells: [Sample] = []
    for system in ["LiveDefaults", "Foundation"] {
        var samples: [Sample] = []
        for _ in 0..<runs {
            let output = spawnSelfOutput(["measure", system, row, "\(count)"])
                .split(whereSeparator: { $0 == " " || $0 == "\n" }).compactMap { Int($0) }
            guard output.count == 4 else { fatalError("\(system) \(row) \(count): no figure") }
            samples.append(
                Sample(growth: output[1] - output[0], total: output[1], anonymous: output[2], file: output[3]))
        }
        samples.sort { $0.growth < $1.growth }
        cells.append(samples[samples.count / 2])
    }
    let (ours, theirs) = (cells[0], cells[1])
    print(
        "| \(title) | \(kib(ours.growth)) (\(kib(ours.total))) | \(kib(theirs.growth)) (\(kib(theirs.total))) | "
            + "\(ratio(ours.growth, theirs.growth)) | \(kib(ours.anonymous)) | \(kib(theirs.anonymous)) | "
            + "\(ratio(ours.anonymous, theirs.anonymous)) | \(kib(ours.file)) | \(kib(theirs.file)) |")
}
