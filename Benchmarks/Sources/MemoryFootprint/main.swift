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
// Then what stays when stores go (heap, not the resident set): 16,000 stores (smoke: 2,000) each opened,
// observed, written (set) and dropped, on distinct domains and on one domain (the steady
// state), after a warm-up round of the same size; the figure is the heap in use after − before (glibc's
// mallinfo2, ProcessResources) per store, in a fresh process, LiveDefaults beside Foundation.
// The figure is the growth of the process's resident set (Rss in /proc/self/smaps_rollup) from just before
// the work to just after it (Foundation already loaded in both, so its own start-up is not counted), median
// of five fresh processes;
// the process's total is shown beside it, and the growth split into its anonymous part (what the work
// allocated: heap, thread stacks, the runtime's metadata) and its file-backed part (code pages mapped on
// first use, the kernel mapping 64 KiB around each first touch: LiveDefaults' code is in the executable,
// Foundation's in its shared libraries, and both page in parts of the Swift runtime and libc).
import BenchmarkSupport
import Foundation
import Glibc
import LiveDefaults
import LiveDefaultsTesting

/// The process's resident set, in KiB: its resident pages (Rss), and their anonymous (heap, stacks, the
/// runtime's metadata) and file-backed (code and data mapped from the executable and libraries) parts, from
/// /proc/self/smaps_rollup, which walks the page tables; -1 where a line is missing.
///
/// Not /proc/self/status: its VmRSS and RssFile come from counters the kernel keeps per CPU and sums
/// approximately when read, which put this table's 10-key rows 64–200 KiB apart from run to run and from
/// the page tables.
func resident() -> (total: Int, anonymous: Int, file: Int) {
    guard let rollup = procFile("/proc/self/smaps_rollup") else { return (-1, -1, -1) }
    func field(_ name: String) -> Int {
        guard let line = rollup.split(separator: "\n").first(where: { $0.hasPrefix(name + ":") }),
            let number = Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
        else { return -1 }
        return number
    }
    let (total, anonymous) = (field("Rss"), field("Anonymous"))
    return (total, anonymous, total >= 0 && anonymous >= 0 ? total - anonymous : -1)
}

/// A /proc file's text, read to its end (such files report a size of 0, and a single read may stop short).
func procFile(_ path: String) -> String? {
    let descriptor = open(path, O_RDONLY)
    guard descriptor >= 0 else { return nil }
    defer { close(descriptor) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 16_384)
    while true {
        let count = read(descriptor, &buffer, buffer.count)
        if count < 0 && errno == EINTR { continue }
        guard count > 0 else { break }
        bytes += buffer[0..<count]
    }
    return String(decoding: bytes, as: UTF8.self)
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
    _ = resident()  // its own code paged in before the count, not during it
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

/// Child mode: `MemoryFootprint churn <system> <distinct|same> <n>`; prints the heap bytes in use before and
/// after the measured round.
func churn(system: String, kind: String, count: Int) async -> Never {
    var opened = 0
    /// Stores of a tenant each: no synchronize() of their own; LiveDefaults' background writer writes each, and
    /// one synchronize() at the end waits for all. Nothing here asks Foundation to synchronize a suite: its row
    /// holds whatever it keeps of a suite it was handed and dropped, written or not.
    func round() async {
        for _ in 0..<count {
            opened += 1
            let name = kind == "same" ? "com.example.churn" : "com.example.churn\(opened)"
            if system == "LiveDefaults" {
                guard let defaults = Defaults(suiteName: name) else { fatalError("no store for \(name)") }
                // Made here, so subscribed before the write: a stream subscribes when its iterator is made.
                var updates = defaults.updates(forKey: "Limit", emitCurrentValue: false).makeAsyncIterator()
                let follower = Task.detached { _ = await updates.next() }
                defaults.set(opened, forKey: "Limit")
                await follower.value
            } else {
                guard let defaults = UserDefaults(suiteName: name) else { fatalError("no store for \(name)") }
                let observer = NotificationCenter.default.addObserver(
                    forName: UserDefaults.didChangeNotification, object: defaults, queue: nil
                ) { _ in }
                defaults.set(opened, forKey: "Limit")
                NotificationCenter.default.removeObserver(observer)
            }
        }
        if system == "LiveDefaults" {
            precondition(Defaults(suiteName: "com.example.churn.flush")?.synchronize() == true, "a write failed")
        }
    }
    await round()
    let before = ProcessResources.current().heapBytes
    await round()
    print(before, ProcessResources.current().heapBytes)
    exit(0)
}

let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "measure", arguments.count == 4, let count = Int(arguments[3]) {
    await measure(system: arguments[1], row: arguments[2], count: count)
}
if arguments.first == "churn", arguments.count == 4, let count = Int(arguments[3]) {
    await churn(system: arguments[1], kind: arguments[2], count: count)
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
    "Resident memory a process gains for the work (Rss after − before, /proc/self/smaps_rollup; process total in brackets), median of \(runs);"
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

let churned = smoke ? 4_000 : 16_000
/// The goal: what a store opened and dropped leaves behind, amortised.
let keptGoal = 64
print()
print(
    "Heap kept per store opened, observed, written (set) and dropped: heap in use after − before"
        + " (glibc mallinfo2) ÷ \(churned) stores, after a warm-up round of \(churned); one fresh process each")
print("| stores | LiveDefaults | Foundation | goal |")
print("|---|---|---|---|")
for (title, kind) in [("distinct domains", "distinct"), ("one domain (steady state)", "same")] {
    var cells: [Int] = []
    for system in ["LiveDefaults", "Foundation"] {
        let output = spawnSelfOutput(["churn", system, kind, "\(churned)"])
            .split(whereSeparator: { $0 == " " || $0 == "\n" }).compactMap { Int($0) }
        guard output.count == 2 else { fatalError("\(system) churn \(kind): no figure") }
        cells.append((output[1] - output[0]) / churned)
    }
    let verdict = cells[0] <= keptGoal ? "≤ \(keptGoal) B: met" : "≤ \(keptGoal) B: NOT met"
    print("| \(churned) on \(title) | \(cells[0]) B | \(cells[1]) B | \(verdict) |")
}
