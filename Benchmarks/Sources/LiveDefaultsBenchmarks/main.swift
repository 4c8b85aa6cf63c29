import BenchmarkSupport
import CoreMetrics
// LiveDefaults side by side with Foundation.UserDefaults and GNOME dconf, in one run, release mode.
//
//   Benchmarks/run [--smoke]        (installs dconf's client library and a private D-Bus session, builds, runs)
//
// This executable is what the script runs. Without `--dconf <helper>` the dconf column stays empty.
import Foundation
import Glibc
import LiveDefaults
import LiveDefaultsTesting

var harness = Harness(iterations: 200_000, rounds: 31)
var smoke = false
/// `--keys-only`: the read and write rows alone (a before/after comparison of the library's key paths).
var keysOnly = false
/// `--only SECTION` (repeatable): the named sections alone, for a quick before/after of one row family.
var onlySections: Set<String> = []
let sectionNames = [
    "reads", "writes", "transactions", "codable", "cold-open", "cross-process", "volume-swap", "observers", "large",
    "memory", "machine", "metrics", "fleet-reasons",
]
var dconfHelper: String?
var arguments = Array(CommandLine.arguments.dropFirst())[...]

// Child modes, run by the suite itself in fresh processes.
if let mode = arguments.first, mode.hasPrefix("--child-") {
    runChild(Array(arguments))
}

while let argument = arguments.popFirst() {
    switch argument {
    case "--smoke":
        smoke = true
        harness = Harness(iterations: 2_000, rounds: 5)
    case "--dconf": dconfHelper = arguments.popFirst()
    case "--keys-only": keysOnly = true
    case "--only":
        guard let section = arguments.popFirst(), sectionNames.contains(section) else {
            FileHandle.standardError.write(Data("--only takes one of: \(sectionNames.joined(separator: ", "))\n".utf8))
            exit(2)
        }
        onlySections.insert(section)
    default:
        FileHandle.standardError.write(
            Data("usage: LiveDefaultsBenchmarks [--smoke] [--keys-only] [--only SECTION]... [--dconf HELPER]\n".utf8))
        exit(2)
    }
}

// Foundation reads XDG_CONFIG_HOME once, at start-up: run again with it pointing at a temporary directory,
// unless the caller (the run script) already did.
let directory = temporaryConfigHome(variable: "LIVEDEFAULTS_BENCH_DIRECTORY", prefix: "livedefaults-benchmarks")

let dconf = DconfClient(helper: dconfHelper, directory: directory)
let keyCounts = [10, 100, 1_000, 10_000]
var rows: [Row] = []

/// Whether a section runs: all of them unless `--only` named some.
@MainActor func wanted(_ section: String) -> Bool { onlySections.isEmpty || onlySections.contains(section) }

print(
    "LiveDefaults benchmarks — \(smoke ? "smoke run" : "full run"), \(ProcessInfo.processInfo.activeProcessorCount) cores, "
        + "dconf \(dconf.available ? "included" : "not available (run through Benchmarks/run to include it)")")
fflush(nil)

// MARK: Reads, at three domain sizes

for count in keyCounts where wanted("reads") {
    let (live, foundation) = populatedStores(count)
    let present = "Key\(count / 2)"
    let typed = DefaultsKey<Int>(present, default: -1)
    let readDatabase = dconf.freshDatabase("reads", keys: count)
    dconf.populate(readDatabase)
    let dconfReads = dconf.reads(readDatabase, iterations: harness.iterations / 10, rounds: harness.rounds)
    rows.append(
        Row(
            name: "typed read `defaults[.key]`, \(count) keys",
            live: harness.measure { live[typed] },
            foundation: harness.measure { foundation.integer(forKey: present) },
            dconf: dconfReads.present, goalFoundation: 30, goalDconf: 5,
            note: "Foundation: integer(forKey:)"))
    rows.append(
        Row(
            name: "untyped read `integer(forKey:)`, \(count) keys",
            live: harness.measure { live.integer(forKey: present) },
            foundation: harness.measure { foundation.integer(forKey: present) },
            dconf: dconfReads.present))
    rows.append(
        Row(
            name: "read of a missing key, \(count) keys",
            live: harness.measure { live.integer(forKey: "Missing") },
            foundation: harness.measure { foundation.integer(forKey: "Missing") },
            dconf: dconfReads.missing))
    printProgress()
}

// MARK: Writes

for count in [10, 10_000] where wanted("writes") {
    let (live, foundation) = populatedStores(count)
    // dconf on a database of the same size, used by no other case. write_sync waits for dconf's service to
    // write the whole database: fewer of them at 10,000 keys.
    let writeDatabase = dconf.freshDatabase("writes", keys: count)
    dconf.populate(writeDatabase)
    let dconfWrites = dconf.writes(
        writeDatabase, iterations: smoke ? 50 : 2_000, syncIterations: smoke ? 2 : (count > 1_000 ? 4 : 40),
        rounds: smoke ? 3 : 7)
    var value = 0
    // A typed write: the key's check (its type, and its range where it has one) and then `set`.
    let typedWritten = DefaultsKey<Int>("TypedWritten", default: 0)
    rows.append(
        Row(
            name: "typed write `defaults[.key] = v`, \(count) keys",
            live: harness.measure(iterations: harness.iterations / 20) {
                value += 1
                live[typedWritten] = value
                return value
            },
            foundation: harness.measure(iterations: harness.iterations / 20) {
                value += 1
                foundation.set(value, forKey: "TypedWritten")
                return value
            },
            dconf: .notApplicable, goalFoundation: 10, note: "Foundation: set(_:forKey:) (no typed API)"))
    rows.append(
        Row(
            name: "write `set(_:forKey:)`, \(count) keys",
            live: harness.measure(iterations: harness.iterations / 20) {
                value += 1
                live.set(value, forKey: "Written")
                return value
            },
            foundation: harness.measure(iterations: harness.iterations / 20) {
                value += 1
                foundation.set(value, forKey: "Written")
                return value
            },
            dconf: dconfWrites.fast, goalFoundation: 10, note: "dconf: write_fast (queued)"))
    // An absolute time of a few hundred nanoseconds, which the VM's speed moves by more than the tripwire's margin:
    // the row's ratio to Foundation's `set`, measured beside it, is its tripwire (a write made synchronous, many
    // times slower, falls far below it).
    rows[rows.count - 1].checks.append(
        .atMost(500, measured: rows[rows.count - 1].live.median, "≤ 0.5 µs").withoutTripwire)
    live.synchronize()
    foundation.synchronize()
    if keysOnly { continue }
    let flushes = smoke ? 3 : (count > 1_000 ? 40 : 400)
    rows.append(
        Row(
            name: "write + flush to disk, \(count) keys",
            live: harness.measure(iterations: flushes, rounds: smoke ? 3 : 11) {
                value += 1
                live.set(value, forKey: "Flushed")
                live.synchronize()
                return value
            },
            foundation: harness.measure(iterations: flushes, rounds: smoke ? 3 : 11) {
                value += 1
                foundation.set(value, forKey: "Flushed")
                foundation.synchronize()
                return value
            },
            dconf: dconfWrites.sync, goalFoundation: count == 10_000 ? 2 : nil,
            note: "synchronize(); dconf: write_sync"))
    // The same write with the change log on and off, in alternating rounds: what recording each version (the
    // log's last line read, one line appended, both under the file lock the write holds) adds to a durable write.
    // The rounds without the log write a domain of their own of the same size: writes that skip the log leave
    // versions it never recorded, which the next logged write of that domain would record as external.
    let unloggedStore = populatedStores(count, variant: ".unlogged").0
    measureChangeLogOnAndOff(
        "write + flush to disk, \(count) keys", iterations: flushes / 2, rounds: smoke ? 3 : 21,
        logged: {
            value += 1
            live.set(value, forKey: "Flushed")
            live.synchronize()
            return value
        },
        unlogged: {
            value += 1
            unloggedStore.set(value, forKey: "Flushed")
            unloggedStore.synchronize()
            return value
        })
    // The physical floor of a durable write of the same bytes, in the same run: the domain file's bytes as
    // LiveDefaults writes them, written and flushed with nothing else around (no lock file, no re-read).
    if let bytes = FileManager.default.contents(atPath: "\(directory)/com.example.bench.n\(count).plist") {
        let floorPath = "\(directory)/flush-floor-n\(count)"
        rows.append(
            Row(
                name: "floor: write the same bytes + fdatasync, \(count) keys",
                live: harness.measure(iterations: flushes, rounds: smoke ? 3 : 11) {
                    DurableWrite.inPlace(floorPath, bytes)
                },
                foundation: .notApplicable, dconf: .notApplicable,
                note: "\(bytes.count) bytes, one file rewritten in place: no crash safety"))
        rows.append(
            Row(
                name: "floor: temporary file + fdatasync + rename, \(count) keys",
                live: harness.measure(iterations: flushes, rounds: smoke ? 3 : 11) {
                    DurableWrite.replacing(floorPath, bytes)
                },
                foundation: .notApplicable, dconf: .notApplicable,
                note: "the least a crash-safe replace costs (without its lock and re-read), not durable on power loss"))
        let durable = harness.measure(iterations: flushes, rounds: smoke ? 3 : 11) {
            DurableWrite.replacingDurably(floorPath, bytes)
        }
        // The goal is the 10-key domain's: a large domain's write is dominated by encoding it, which the floor
        // (the bytes written, nothing made) does not do. Its two sides are measured in turns, round after round:
        // a disk's flushes drift between rows measured at different times by more than the goal's margin.
        if count == 10 {
            let timings = harness.measureInterleaved(
                iterations: flushes / 2, rounds: smoke ? 3 : 21,
                [
                    {
                        value += 1
                        live.set(value, forKey: "Flushed")
                        live.synchronize()
                        return value
                    },
                    { DurableWrite.replacingDurably(floorPath, bytes) },
                    { DurableWrite.replacingDurablyUnderLock(floorPath, bytes) },
                ])
            let (write, floor, locked) = (timings[0], timings[1], timings[2])
            let factor = write.median / floor.median
            rows.append(
                Row(
                    name: "write + flush to disk, \(count) keys, in turns with the durable floor",
                    live: write, foundation: .notApplicable, dconf: .notApplicable,
                    checks: [
                        // Re-based on this VM's floors: the protocol's lock and look at the version alone took more
                        // than the first goal's margin in the same rounds (Docs/Decisions/WritePath.md).
                        .atMost(
                            1.25 * floor.median, measured: write.median,
                            "≤ 1.25× the durable floor (temporary file + fdatasync + rename + fsync of the directory)")
                    ],
                    note: "the floor in the same rounds: \(format(floor.median)) (\(format(floor.p99))); "
                        + String(format: "%.2f×", factor)))
            // What any write with the write protocol's two cheapest steps pays, in the same rounds: the
            // goal's margin beside what the lock and the look at the version on disk take of it.
            rows.append(
                Row(
                    name: "floor: flock + stat + temporary file + fdatasync + rename + fsync of the directory, "
                        + "\(count) keys, in the same turns",
                    live: locked, foundation: .notApplicable, dconf: .notApplicable,
                    note: String(
                        format: "%.3f× the durable floor: the lock file's open, flock and close and one stat, "
                            + "nothing encoded; the write above is %.2f× this", locked.median / floor.median,
                        write.median / locked.median)))
        }
        rows.append(
            Row(
                name: "floor: temporary file + fdatasync + rename + fsync of the directory, \(count) keys",
                live: durable,
                foundation: .notApplicable, dconf: .notApplicable,
                note: "the least a replace costs that survives power loss: what synchronize() promises"))
        if count == 10 {
            // The ways to spend less on the crash-safe replace, same bytes, same run.
            let variants: [(String, String, (String, Data) -> Int)] = [
                (
                    "temporary file + fsync + rename", "fsync also commits the timestamps",
                    DurableWrite.replacingWithFsync
                ),
                (
                    "O_TMPFILE + fdatasync + linkat + rename", "linkat cannot replace a name: one more step",
                    DurableWrite.replacingUnnamed
                ),
                (
                    "flock + temporary file + fdatasync + rename", "the cross-process lock every write takes",
                    DurableWrite.replacingUnderLock
                ),
            ]
            for (name, note, body) in variants {
                rows.append(
                    Row(
                        name: "floor variant: \(name), \(count) keys",
                        live: harness.measure(iterations: flushes, rounds: smoke ? 3 : 11) { body(floorPath, bytes) },
                        foundation: .notApplicable, dconf: .notApplicable, note: note))
            }
        }
    }
    printProgress()
}

if keysOnly {
    print("")
    print(Row.header)
    for row in rows { print(row.line) }
    exit(reportGoals(rows, smoke: smoke))
}

// MARK: Transactions: several keys committed as one version, against the same keys set one by one

if wanted("transactions") {
    // A domain of its own (11 keys to start with); every row writes the same keys into it (same file size).
    let (live, foundation) = populatedStores(11)
    let flushes = smoke ? 3 : 300
    let rounds = smoke ? 3 : 11
    var value = 0
    for keys in [1, 10, 100] {
        let names = (0..<keys).map { "Tx\($0)" }
        let commit = {
            value += 1
            _ = try? live.transaction { tx in
                for name in names { tx.set(value, forKey: name) }
            }
            return value
        }
        // The domain holds the transaction's keys before anything is timed, so that the one-key write it is
        // held to writes a file of the same size; the two take turns, round after round (a machine busier for
        // a moment weighs on both alike).
        _ = commit()
        let (transaction, oneKey) = harness.measureInterleaved(iterations: flushes, rounds: rounds, commit) {
            value += 1
            live.set(value, forKey: "Tx0")
            live.synchronize()
            return value
        }
        rows.append(
            Row(
                name: "transaction of \(keys) keys, committed (on disk)",
                live: transaction,
                foundation: harness.measure(iterations: flushes, rounds: rounds) {
                    value += 1
                    for name in names { foundation.set(value, forKey: name) }
                    foundation.synchronize()
                    return value
                },
                dconf: .notApplicable,
                checks: transactionGoals(keys: keys, transaction: transaction.median, oneKey: oneKey.median),
                note: String(
                    format:
                        "%.2f× one set + synchronize() on the same domain (goals: 10 keys ≤ 1.1×, 100 keys ≤ 1.3× "
                        + "and ≤ 0.8 ms); Foundation: set × %d + synchronize(), no transaction",
                    transaction.median / oneKey.median, keys)))
        rows.append(
            Row(
                name: "one set + synchronize(), the same domain (the \(keys)-key transaction's keys in it)",
                live: oneKey, foundation: .notApplicable, dconf: .notApplicable,
                note: "what the transaction above is held to; measured in turns with it"))
        rows.append(
            Row(
                name: "the same \(keys) keys set one by one + synchronize()",
                live: harness.measure(iterations: flushes, rounds: rounds) {
                    value += 1
                    for name in names { live.set(value, forKey: name) }
                    live.synchronize()
                    return value
                },
                foundation: .notApplicable, dconf: .notApplicable,
                note: "readers may see some keys before the others"))
        if keys == 100 {
            // What the change log adds to a transaction of many keys (each key's old and new value in its entry),
            // in alternating rounds, as for the one-key write above; the rounds without it write a domain of
            // their own of the same size (writes that skip the log leave versions it never recorded).
            let unlogged = populatedStores(11, variant: ".unlogged").0
            _ = try? unlogged.transaction { tx in
                for name in names { tx.set(0, forKey: name) }
            }
            measureChangeLogOnAndOff(
                "transaction of 100 keys", iterations: flushes / 2, rounds: rounds, logged: commit,
                unlogged: {
                    value += 1
                    _ = try? unlogged.transaction { tx in
                        for name in names { tx.set(value, forKey: name) }
                    }
                    return value
                })
        }
        // The same bytes as the transaction wrote, replaced as every write replaces them.
        if let bytes = FileManager.default.contents(atPath: "\(directory)/com.example.bench.n11.plist") {
            let floorPath = "\(directory)/transaction-floor-\(keys)"
            rows.append(
                Row(
                    name: "floor: temporary file + fdatasync + rename, \(keys)-key transaction's file",
                    live: harness.measure(iterations: flushes, rounds: rounds) {
                        DurableWrite.replacing(floorPath, bytes)
                    },
                    foundation: .notApplicable, dconf: .notApplicable, note: "\(bytes.count) bytes"))
        }
    }
    printProgress()
}

// MARK: Codable

if wanted("codable") {
    struct Item: Codable {
        var name: String
        var value: Int
    }
    let items = (0..<10_000).map { Item(name: "item\($0)", value: $0) }
    let runs = smoke ? 3 : 11
    rows.append(
        Row(
            name: "Codable encode of 10,000 structs",
            live: harness.measure(iterations: 1, rounds: runs) {
                (try? PropertyListValueEncoder().encode(items)).map { _ in 1 } ?? 0
            },
            foundation: harness.measure(iterations: 1, rounds: runs) {
                (try? PropertyListEncoder().encode(items))?.count ?? 0
            }, dconf: .notApplicable,
            note:
                "ours: property-list structure (what a typed key stores); Foundation: PropertyListEncoder, binary Data")
    )
    printProgress()
}

// MARK: Cold open: a new process reads one key of a 100- and a 10,000-key domain

// The deployment's layers: a process with 200 variables of its prefix (none naming the key read) and a ConfigMap of
// 50 keys, its store opened with and without them, turn by turn; the goal is on the ratio of the two.
if wanted("cold-open") {
    _ = populatedStores(100)
    let runs = smoke ? 9 : 41
    var variables: [String: String] = [:]
    for index in 0..<200 { variables["BENCH_SETTING_\(index)"] = "\(index)" }
    // A ConfigMap's 50 keys, as the kubelet lays them out: a time-stamped directory, `..data`, a link per key.
    let keys = directory + "/configmap"
    let version = keys + "/..2026_11_28_00_00_00.000000"
    try? FileManager.default.createDirectory(atPath: version, withIntermediateDirectories: true)
    try? FileManager.default.createSymbolicLink(
        atPath: keys + "/..data", withDestinationPath: "..2026_11_28_00_00_00.000000")
    for index in 0..<50 {
        try? Data("\(index)".utf8).write(to: URL(fileURLWithPath: version + "/Key\(index)Base"))
        try? FileManager.default.createSymbolicLink(
            atPath: keys + "/Key\(index)Base", withDestinationPath: "..data/Key\(index)Base")
    }
    variables["LIVEDEFAULTS_BENCH_KEYS"] = keys
    var inside: [String: [Double]] = [:]
    for _ in 0..<runs {
        for mode in ["environment-none", "environment", "keyfiles-floor"] {
            let output = spawnSelfOutput(
                ["--child-cold-open", mode, "com.example.bench.n100", "Key50"], addingEnvironment: variables)
            if let nanoseconds = Double(output.trimmingCharacters(in: .whitespacesAndNewlines)) {
                inside[mode, default: []].append(nanoseconds)
            }
        }
    }
    let with = Harness.summary(inside["environment"] ?? [])
    let without = Harness.summary(inside["environment-none"] ?? [])
    let keyFilesFloor = Harness.summary(inside["keyfiles-floor"] ?? [])
    let factor = with.median / without.median
    // Re-based on the floor measured in the same turns: the 50 files' system calls alone took more than the
    // 0.2× of the open that the goal used to leave the layers.
    let bound = without.median + 1.5 * keyFilesFloor.median
    rows.append(
        Row(
            name:
                "cold open with the deployment's layers: 200 variables of the prefix, a ConfigMap of 50 keys, 100-key domain",
            live: with, foundation: .notApplicable, dconf: .notApplicable,
            checks: [
                .atMost(
                    bound, measured: with.median,
                    "≤ the same open without them + 1.5× the floor of reading the 50 files")
            ],
            note:
                "without the prefix and the directory, same process environment: \(format(without.median)) (\(format(without.p99))); "
                + String(format: "%.2f×", factor)
                + "; the goal: ≤ \(format(bound)) (\(with.median <= bound ? "met" : "NOT met"))"))
    rows.append(
        Row(
            name: "floor: new process, read the ConfigMap's 50 files (open, fstat, read, close each), nothing else",
            live: keyFilesFloor, foundation: .notApplicable, dconf: .notApplicable,
            note: "the files alone, in turns with the two opens above; the goal leaves the layers 1.5× this"))
    printProgress()
}

for count in [100, 10_000] where wanted("cold-open") {
    _ = populatedStores(count)
    // A smoke run's median of fresh processes feeds the tripwire, and these rows' goals are absolute times on a
    // machine whose speed drifts: 21 runs, not a smoke run's usual handful, so that one slow stretch does not
    // make the median.
    let runs = smoke ? 21 : 41
    let key = "Key\(count / 2)"
    // At 100 keys also after the process has used Foundation (`-warm`): the store's own cost without the
    // runtime's and Foundation's first use.
    let modes =
        ["floor", "floor-watched", "unwatched", "live", "foundation"]
        + (count == 100 ? ["floor-warm", "floor-watched-warm", "live-warm", "foundation-warm"] : [])
    /// In a fresh process each time: from opening the domain to having the value (the process's own start
    /// is the same for both and is shown apart). The modes take turns, run after run, so that a machine
    /// busier for a few seconds (a shared VM) weighs on each of them alike rather than on one block of runs.
    var inside: [String: [Double]] = [:]
    var whole: [String: [Double]] = [:]
    for _ in 0..<runs {
        for mode in modes {
            let start = now()
            let output = spawnSelfOutput(["--child-cold-open", mode, "com.example.bench.n\(count)", key])
            whole[mode, default: []].append(Double(now() - start))
            if let nanoseconds = Double(output.trimmingCharacters(in: .whitespacesAndNewlines)) {
                inside[mode, default: []].append(nanoseconds)
            }
        }
    }
    func coldOpen(_ mode: String) -> (inProcess: Timing, whole: Timing) {
        (Harness.summary(inside[mode] ?? []), Harness.summary(whole[mode] ?? []))
    }
    let floor = coldOpen("floor")
    let unwatched = coldOpen("unwatched")
    let live = coldOpen("live")
    let foundation = coldOpen("foundation")
    rows.append(
        Row(
            name:
                "floor: new process, read the \(count)-key file + parse it with the library's reader + look the key up",
            live: floor.inProcess, foundation: .notApplicable, dconf: .notApplicable,
            note: "open/fstat/read, no store, search list, lock or watcher; the first use of the reader's types "
                + "(the runtime's first conformance lookups) is in it, as in every row below"))
    rows.append(
        Row(
            name: "floor of a watched open: the floor + an inotify descriptor, a watch and a thread waiting on it, "
                + "\(count) keys",
            live: coldOpen("floor-watched").inProcess, foundation: .notApplicable, dconf: .notApplicable,
            note: "what any store that sees another process's write at once sets up besides reading: "
                + "inotify_init1, inotify_add_watch, pthread_create (a process's first thread)"))
    rows.append(
        Row(
            name:
                "cold open without the watcher (`Configuration(applicationDomain:)`, `watching: .off`), \(count)-key domain",
            live: unwatched.inProcess, foundation: .notApplicable, dconf: .notApplicable,
            note: "the same store, nothing watched: what watching adds is the next row minus this one"))
    rows.append(
        Row(
            name: "cold open: new process, `Defaults(suiteName:)` + first read of a \(count)-key domain",
            live: live.inProcess, foundation: foundation.inProcess, dconf: .notApplicable,
            goalFoundation: count == 10_000 ? 3 : 2,
            checks: count == 10_000
                ? [
                    Goal.atMost(2_500_000, measured: live.inProcess.median, "≤ 2.5 ms").tripwire(
                        limit: 2_500_000, floor: coldOpen("floor-watched").inProcess.median)
                ] : [],
            note: (count == 100
                ? "goal of 300 µs: under the floor row above in a fresh process; see the row of a process that "
                    + "has used Foundation; "
                : "goal: ≤ 2.5 ms (\(live.inProcess.median <= 2_500_000 ? "met" : "NOT met")); ")
                + "the process's own configuration and every layer where it lives, as a program opens a suite "
                + "(Foundation: `UserDefaults(suiteName:)`); "
                + "whole process, start to exit: \(format(live.whole.median)) vs \(format(foundation.whole.median))"))
    if count == 100 {
        rows.append(
            Row(
                name: "floor, in a process that has used Foundation (its environment read first), \(count) keys",
                live: coldOpen("floor-warm").inProcess, foundation: .notApplicable, dconf: .notApplicable,
                note: "the runtime's first dictionary and conformance scan, and Foundation's start, done before"))
        rows.append(
            Row(
                name: "floor of a watched open, in a process that has used Foundation, \(count) keys",
                live: coldOpen("floor-watched-warm").inProcess, foundation: .notApplicable, dconf: .notApplicable,
                note: "the floor above + inotify_init1, inotify_add_watch, pthread_create"))
        rows.append(
            Row(
                name:
                    "cold open in a process that has used Foundation, `Defaults(suiteName:)` + first read, \(count) keys",
                live: coldOpen("live-warm").inProcess, foundation: coldOpen("foundation-warm").inProcess,
                dconf: .notApplicable,
                checks: [
                    Goal.atMost(300_000, measured: coldOpen("live-warm").inProcess.median, "≤ 300 µs").tripwire(
                        limit: 300_000, floor: coldOpen("floor-watched-warm").inProcess.median)
                ],
                note: "goal: ≤ 300 µs (\(coldOpen("live-warm").inProcess.median <= 300_000 ? "met" : "NOT met")); "
                    + "the measure the goal was set in; the store's own cost"))
    }
    printProgress()
}

// MARK: Another process's write → an observer here, beside the physical floor

for count in [10, 10_000] where wanted("cross-process") {
    let latency = CrossProcess.measure(
        directory: directory, keys: count, writes: smoke ? 30 : (count > 1_000 ? 200 : 500))
    let signalDatabase = dconf.freshDatabase("signal", keys: count)
    dconf.populate(signalDatabase)
    let signal = dconf.signal(signalDatabase, count: smoke ? 5 : 40)  // each waits for a write_sync
    let overhead = latency.live.median - latency.floor.median
    // The goals (Docs/Benchmarks.md): the overhead over the floor and the 99th percentile below, looser for
    // the large domain, whose file is 45 times larger.
    let (goalOverhead, goalP99) = count > 1_000 ? (1_000_000.0, 3_000_000.0) : (100_000.0, 1_000_000.0)
    rows.append(
        Row(
            name: "raw inotify floor: another process writes → read the file here, \(count) keys",
            live: latency.floor, foundation: .notApplicable, dconf: .notApplicable,
            note: "one inotify watch, read the file, find the value's text (no parser): the physical floor"))
    rows.append(
        Row(
            name: "another process writes → observer here, \(count) keys", live: latency.live,
            foundation: .notApplicable, dconf: signal,
            checks: [
                .overFloor(
                    goalOverhead, live: latency.live.median, floor: latency.floor.median,
                    "floor + ≤ \(format(goalOverhead)) at the median")
            ],
            note:
                "floor \(formatOffset(overhead)) at the median (goal: ≤ \(format(goalOverhead)), p99 ≤ \(format(goalP99)): "
                + "\(overhead <= goalOverhead && latency.live.p99 <= goalP99 ? "met" : "NOT met")); lost \(latency.lost); "
                + "dconf: its changed signal on a database of \(count) keys; Foundation never sees it without synchronize()"
        ))
    printProgress()
}

// MARK: The same, by each kind of writer, with the change log on and off

// A script's rename and a LiveDefaults store's write, each with the log on and off in both processes, side by
// side: the log is recorded after the observers hear of a change, so it must not move the reader's overhead.
if wanted("cross-process") {
    for writer in [CrossProcess.Writer.script, .liveDefaults, .command] {
        for changeLog in [true, false] {
            let latency = CrossProcess.measure(
                directory: directory, keys: 10, writes: smoke ? 30 : 500, writer: writer, changeLog: changeLog)
            let overhead = latency.live.median - latency.floor.median
            let who =
                switch writer {
                case .script: "a script (temp file + rename)"
                case .liveDefaults: "a LiveDefaults store (set + synchronize())"
                case .command: "an unwatched LiveDefaults store, as `defaults write` (set + synchronize())"
                }
            let log = changeLog ? "change log on" : "change log off"
            appendLatencyRows(
                latency, floor: "raw inotify floor: \(who) writes → read the file here, 10 keys, \(log)",
                floorNote: "the same writer, watched by the raw floor",
                live: "\(who) writes → observer here, 10 keys, \(log)",
                checks: [
                    .overFloor(
                        100_000, live: latency.live.median, floor: latency.floor.median,
                        "floor + ≤ 100.00 µs at the median")
                ],
                note: "floor \(formatOffset(overhead)) at the median (goal: ≤ 100.00 µs, p99 ≤ 1.00 ms: "
                    + "\(overhead <= 100_000 && latency.live.p99 <= 1_000_000 ? "met" : "NOT met")); lost \(latency.lost)"
            )
        }
    }
    printProgress()
}

// MARK: The same with a validator of every version, beside the same without

// `addValidator`: each version another process writes is judged (two keys of a snapshot of every key) before it
// is delivered. The two rows alternate writer runs in one section, so that the difference is the validator's.
if wanted("cross-process") {
    var overheads: [Bool: Double] = [:]
    for validated in [false, true] {
        let latency = CrossProcess.measure(
            directory: directory, keys: 10, writes: smoke ? 30 : 500, writer: .script, validated: validated)
        let overhead = latency.live.median - latency.floor.median
        overheads[validated] = overhead
        let with = validated ? "with a validator" : "without a validator"
        appendLatencyRows(
            latency, floor: "raw inotify floor: a script writes → read the file here, 10 keys (\(with) there)",
            floorNote: "the same writer, watched by the raw floor",
            live: "a script writes → observer here, 10 keys, \(with)",
            checks: validated
                ? [
                    // Tripwired as the rows above, on the whole latency: against the floor, plus the goal of
                    // an observer's overhead and the validator's.
                    Goal(
                        text: "a validator adds ≤ 50.00 µs at the median",
                        factor: (overhead - (overheads[false] ?? overhead)) / 50_000,
                        tripwireFactor: latency.live.median / (latency.floor.median + 150_000))
                ] : [],
            note: "floor \(formatOffset(overhead)) at the median"
                + (validated
                    ? "; the validator adds \(formatOffset(overhead - (overheads[false] ?? overhead))) (goal ≤ 50.00 µs: "
                        + "\(overhead - (overheads[false] ?? overhead) <= 50_000 ? "met" : "NOT met"))" : "")
                + "; lost \(latency.lost)")
    }
    printProgress()
}

// MARK: Another process's transaction → a snapshot observer here, beside the floor

if wanted("cross-process") {
    let latency = CrossProcess.measureTransactions(directory: directory, writes: smoke ? 30 : 500)
    appendLatencyRows(
        latency, floor: "raw inotify floor: another process commits a 2-key transaction → read the file here",
        floorNote: "from before the writer's transaction (flock, re-read, fdatasync, rename) to the file read here",
        live: "another process commits a 2-key transaction → snapshot observer here (`updates(of:)`)",
        note: "floor \(formatOffset(latency.live.median - latency.floor.median)) at the median; lost \(latency.lost); "
            + "Foundation has no transactions and never sees another process without synchronize()")
    printProgress()
}

// MARK: A Kubernetes-style volume swap → an observer here, beside the floor for the same swap

if wanted("volume-swap") {
    let swap = VolumeSwap.measure(directory: directory, keys: 10, writes: smoke ? 30 : 500)
    let overhead = swap.live.median - swap.floor.median
    rows.append(
        Row(
            name: "raw inotify floor: another process swaps a volume's ..data (kubelet) → read the file here, 10 keys",
            live: swap.floor, foundation: .notApplicable, dconf: .notApplicable,
            note: "one inotify watch on the volume, on the ..data rename read the file through its links (no parser)"))
    rows.append(
        Row(
            name: "another process swaps a volume's ..data (kubelet) → observer here, 10 keys", live: swap.live,
            foundation: .notApplicable, dconf: .notApplicable,
            note: "managed directory = a ConfigMap-style volume; floor \(formatOffset(overhead)) at the median; "
                + "lost \(swap.lost); Foundation and dconf never see it"))
    printProgress()
}

// MARK: Fan-out and many domains

if wanted("observers") {
    for observers in smoke ? [1_000] : [1_000, 10_000] {
        let fanOut = FanOut.measure(
            directory: directory, observers: observers, changes: smoke ? 10 : (observers > 1_000 ? 50 : 200))
        rows.append(
            Row(
                name: "\(observers) observers of one key: set → all notified", live: fanOut.live,
                foundation: fanOut.foundation, dconf: .notApplicable,
                note: "Foundation: \(observers) didChangeNotification observers, posted synchronously"))
    }
    for domainCount in smoke ? [100] : [1_000, 10_000] {
        let domains = ManyDomains.measure(directory: directory, domains: domainCount, changes: smoke ? 20 : 200)
        rows.append(
            Row(
                name: "\(domainCount) domains watched: another process writes one → its observer",
                live: domains.many, foundation: .notApplicable, dconf: .notApplicable,
                note: "with 1 domain watched: \(format(domains.single.median)); \(domains.watches) inotify watches; "
                    + "Foundation never sees it"))
    }
    printProgress()
}

// MARK: Many writers, large domains

if wanted("large") {
    let writers = ConcurrentWriters.measure(directory: directory, processes: 16, keysEach: smoke ? 20 : 200)
    rows.append(
        Row(
            name: "16 processes write distinct keys of one domain at once", live: writers.perKey,
            foundation: .notApplicable, dconf: .notApplicable,
            note: String(
                format: "%.0f keys/s in all, each key set + synchronize(); lost %d of %d", writers.keysPerSecond,
                writers.lost, writers.total)))
    for megabytes in smoke ? [1] : [1, 10] {
        let large = LargeDomain.measure(directory: directory, megabytes: megabytes, runs: smoke ? 3 : 11)
        rows.append(
            Row(
                name: "cold open: new process, open + first read of a \(megabytes) MB domain", live: large.coldOpen,
                foundation: large.foundationColdOpen, dconf: .notApplicable,
                note: "\(large.keys) keys of about 100 bytes"))
        rows.append(
            Row(
                name: "write + flush to disk, \(megabytes) MB domain", live: large.flush,
                foundation: large.foundationFlush, dconf: .notApplicable, note: "one key changed, synchronize()"))
    }
    printProgress()
}

// MARK: Memory

if wanted("memory") {
    func growth(_ mode: String) -> Timing {
        let output = spawnSelfOutput(["--child-memory", mode, "com.example.bench.n10000", "Key5000"])
        let bytes = Double(output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? .nan
        return Timing(median: bytes, p99: bytes)
    }
    let live = growth("live")
    let foundation = growth("foundation")
    print("")
    print(
        String(
            format:
                "memory: resident growth for opening a 10,000-key domain: LiveDefaults %.1f MiB, Foundation %.1f MiB",
            live.median / 1_048_576, foundation.median / 1_048_576))
}

// MARK: The simulated machine: the contract program a user's test of live settings is made of

if wanted("machine") {
    var allHeld = true
    let timing = harness.measure(iterations: 1, rounds: smoke ? 3 : 11) {
        let held = MachineContract.run(seed: 1)
        if held != MachineContract.checks { allHeld = false }
        return held
    }
    rows.append(
        Row(
            name: "simulated machine: 2 processes, 1,000 changes each settled and read, a crash, a power loss, 30 min",
            live: timing, foundation: .notApplicable, dconf: .notApplicable,
            note: "no peer simulates a machine; the whole program, no real file\(allHeld ? "" : "; A CHECK FAILED")"))
    rows[rows.count - 1].checks.append(.atMost(500_000_000, measured: timing.median, "≤ 0.5 s: well under a second"))
    if !allHeld { print("machine: the contract program's checks did not all hold") }
    printProgress()
}

// MARK: The fleet agent's look at the change log before each push (the reason it sends with the values)

if wanted("fleet-reasons") {
    let (live, _) = populatedStores(10, variant: ".reasons")
    let domain = "com.example.bench.n10.reasons"
    // A log of 500 versions, each with a reason: the log's size when it starts over is 512 KiB.
    for index in 0..<500 {
        try? live.transaction(inDomain: domain, reason: "change \(index)") { $0.set(index, forKey: "Key\(index % 9)") }
    }
    let version = live.heldVersion(inDomain: domain)
    let contents = live.persistentDomainValues(forName: domain) ?? [:]
    for (key, what) in [
        ("Key\(499 % 9)", "changed by the newest version"), ("Key9", "last changed before the log's end"),
    ] {
        let values: [String: PropertyList?] = [key: contents[key]]
        rows.append(
            Row(
                name: "fleet agent's reason look before a push, the key \(what), log of 500 versions",
                live: harness.measure(iterations: smoke ? 20 : 2_000, rounds: smoke ? 3 : 11) {
                    live.fleetPushReasons(forValues: values, ofVersion: version, inDomain: domain).count
                },
                foundation: .notApplicable, dconf: .notApplicable,
                note: "no peer sends why; beside the host-to-host push through etcd (Docs/Benchmarks.md, fleet)"))
        if key != "Key9" {
            // The usual push: the change's own line (or its intent) answers, so the look costs a line's parse.
            rows[rows.count - 1].checks.append(
                .atMost(
                    100_000, measured: rows[rows.count - 1].live.median,
                    "≤ 100 µs: the last line or two read, a small share of a push through etcd"))
        }
    }
    printProgress()
}

// MARK: Metrics: reads and writes before and after a metrics backend is bootstrapped (last: a process
// bootstraps swift-metrics once, and every later row would run with it)

if wanted("metrics") {
    let (live, _) = populatedStores(10)
    let typed = DefaultsKey<Int>("Key5", default: -1)
    var value = 0
    func measureAll() -> [Timing] {
        [
            harness.measure { live[typed] },
            harness.measure { live.integer(forKey: "Key5") },
            harness.measure(iterations: harness.iterations / 20) {
                value += 1
                live.set(value, forKey: "Metered")
                return value
            },
            harness.measure(iterations: smoke ? 3 : 200, rounds: smoke ? 3 : 11) {
                value += 1
                live.set(value, forKey: "Metered")
                live.synchronize()
                return value
            },
        ]
    }
    let without = measureAll()
    MetricsSystem.bootstrap(CountingMetrics())
    let with = measureAll()
    let names = [
        "typed read `defaults[.key]`", "untyped read `integer(forKey:)`", "`set(_:forKey:)`", "`set` + `synchronize()`",
    ]
    for (index, name) in names.enumerated() {
        for (timing, variant) in [(without, "no metrics backend"), (with, "a metrics backend bootstrapped")] {
            rows.append(
                Row(
                    name: "\(name), 10 keys, \(variant)", live: timing[index], foundation: .notApplicable,
                    dconf: .notApplicable, note: "swift-metrics; the backend counts in atomics (CountingMetrics)"))
        }
    }
    printProgress()
}

print("")
print(Row.header)
for row in rows { print(row.line) }
let goalsStatus = reportGoals(rows, smoke: smoke)

// MARK: Helpers

/// The two rows of a latency measured beside its floor: the raw watcher's, then ours.
@MainActor func appendLatencyRows(
    _ latency: CrossProcess.Result, floor: String, floorNote: String, live: String, checks: [Goal] = [],
    note: String
) {
    rows.append(
        Row(name: floor, live: latency.floor, foundation: .notApplicable, dconf: .notApplicable, note: floorNote))
    rows.append(
        Row(
            name: live, live: latency.live, foundation: .notApplicable, dconf: .notApplicable, checks: checks,
            note: note))
}

/// A transaction's goals, against one key's `set` + `synchronize()` on the same domain and in absolute time
/// (Docs/Benchmarks.md, "Goals, checked and guarded").
func transactionGoals(keys: Int, transaction: Double, oneKey: Double) -> [Goal] {
    switch keys {
    case 10: [.atMost(1.1 * oneKey, measured: transaction, "≤ 1.1× one set + synchronize()")]
    case 100:
        [
            .atMost(1.3 * oneKey, measured: transaction, "≤ 1.3× one set + synchronize()"),
            .atMost(800_000, measured: transaction, "≤ 0.8 ms").withoutTripwire,
        ]
    default: []
    }
}

/// Prints the rows that miss a goal, with by how much; in a smoke run (CI), returns 1 when one misses a goal by
/// more than ``Goal/tripwire`` times, else 0.
@MainActor func reportGoals(_ rows: [Row], smoke: Bool) -> Int32 {
    let missed = rows.flatMap { row in row.goals.filter { !$0.isMet }.map { (row.name, $0) } }
    print("")
    let checked = rows.reduce(0) { $0 + $1.goals.count }
    if missed.isEmpty {
        print("Every goal met (\(checked) goals on medians).")
        return 0
    }
    print("Goals NOT met (\(missed.count) of \(checked), on medians):")
    for (name, goal) in missed {
        // Where the tripwire checks something else than the goal, what it checked, so that a failure reads alone.
        let guarded =
            switch goal.tripwireFactor {
            case nil: " (no tripwire)"
            case let guarded? where guarded != goal.factor: String(format: " (tripwire: %.2f× its guard)", guarded)
            default: ""
            }
        print(String(format: "- %@: %@, missed %.2f×", name, goal.text, goal.factor) + guarded)
    }
    let tripped = missed.filter { ($0.1.tripwireFactor ?? 0) > Goal.tripwire }
    guard smoke, !tripped.isEmpty else { return 0 }
    print(
        "benchmarks: \(tripped.count) goal(s) missed by more than \(Int(Goal.tripwire))× (their tripwire): a regression, "
            + "not noise")
    return 1
}

/// A LiveDefaults store and a Foundation suite on the same size of domain, with `count` integer keys.
@MainActor func populatedStores(_ count: Int, variant: String = "") -> (Defaults, UserDefaults) {
    let domain = "com.example.bench.n\(count)\(variant)"
    let live: Defaults
    do { live = try Defaults(configuration: .rooted(at: directory, applicationDomain: domain)) } catch {
        fatalError("\(error)")
    }
    if live.persistentDomainValues(forName: domain)?.count != count {
        var contents: [String: PropertyList] = [:]
        for index in 0..<count { contents["Key\(index)"] = .integer(index) }
        try? live.trySetPersistentDomain(contents, forName: domain)
        live.synchronize()
    }
    // Foundation keeps its own copy in a domain of the same size.
    guard let foundation = UserDefaults(suiteName: domain + ".foundation") else { fatalError("no Foundation suite") }
    if foundation.object(forKey: "Key\(count - 1)") == nil {
        for index in 0..<count { foundation.set(index, forKey: "Key\(index)") }
        foundation.synchronize()
    }
    return (live, foundation)
}

/// The same write with the change log on (`logged`) and off (`unlogged`, on a domain of its own of the same
/// size: writes that skip the log leave versions it never recorded), in alternating rounds: two rows, `name`
/// with "change log on" and "change log off".
@MainActor func measureChangeLogOnAndOff(
    _ name: String, iterations: Int, rounds: Int, logged: () -> Int, unlogged: () -> Int
) {
    let (on, off) = harness.measureInterleaved(
        iterations: iterations, rounds: rounds,
        {
            Defaults.changeLogEnabled = true
            return logged()
        },
        {
            Defaults.changeLogEnabled = false
            return unlogged()
        })
    Defaults.changeLogEnabled = true
    for (timing, variant) in [(on, "change log on"), (off, "change log off")] {
        rows.append(
            Row(
                name: "\(name), \(variant)", live: timing, foundation: .notApplicable, dconf: .notApplicable,
                note: "rounds alternating on/off, two domains of this size (Defaults.changeLogEnabled)"))
    }
}

@MainActor func printProgress() {
    print("  \(rows.count) rows measured")
    fflush(nil)
}

// Last, after the helpers above (top-level code runs in order): the tripwire's verdict.
exit(goalsStatus)
