import Foundation
import LiveDefaultsTesting
import Logging
import Testing

@testable import LiveDefaults

/// A random scenario on a simulated machine, from a seed: processes setting, removing, synchronizing, committing
/// transactions and increments, other programs rewriting a file each way they do, crashes, power loss and failing
/// file-system calls — with what must always hold checked after every step of the machine, and what must hold once
/// it is quiet checked after every settle.
///
/// Two domains: `com.example.swarm`, written only by LiveDefaults processes (each its own keys, a counter every
/// process increments, a pair every process writes together), where durability and the change log are exact; and
/// `com.example.shared`, written only by other programs and read by every process, where a reader must see only
/// their whole versions, in order.
struct Swarm {
    static let domain = "com.example.swarm"
    static let shared = "com.example.shared"
    static let names = ["alpha", "beta", "gamma"]
    static let ownKeys = ["k0", "k1", "k2"]

    let seed: UInt64
    let machine: SimulatedMachine
    /// The scenario's own choices (apart from the machine's, so that a change in one does not move the other).
    private var random: SeededRandom
    /// Each process's stores while it runs (read by the step checks too).
    private let live = Lock<[String: Stores]>([:])
    private var stores: [String: Stores] {
        get { live.withLock { $0 } }
        nonmutating set { live.withLock { $0 = newValue } }
    }
    struct Stores: @unchecked Sendable {
        // @unchecked: Defaults is Sendable; the tuple-free struct only holds two of them.
        let own: Defaults
        let shared: Defaults
    }
    /// Keys whose log lines a power loss may have taken (the log is appended without a flush): their latest logged
    /// change may be older than the disk's value until a LiveDefaults process writes them again.
    private var logMayHaveLost: Set<String> = []
    /// Keys whose latest change the log may hold as a checkpoint only: a write that met an I/O error reading the log
    /// records the version it writes over as its keys, without their changes (Reliability.md, "The swarm"); until
    /// a LiveDefaults process writes them again.
    private var logMayMissChange: Set<String> = []
    /// Per process and key: the value acknowledged last (nil: none, or removed and acknowledged), and the values
    /// set since (nil: a removal) — what the file may hold.
    private var acknowledged: [String: PropertyList?] = [:]
    private var since: [String: [PropertyList?]] = [:]
    /// What each process set and has not acknowledged, by key.
    private var pending: [String: [String: PropertyList?]] = [:]
    private var faulted: Set<String> = []
    private var increments = 0
    /// Increments whose process was killed before it answered: each may have landed or not.
    private var unansweredIncrements = 0
    private var pairs = 0
    private var sharedWrites = 0
    private var counter = 0
    /// The versions other programs wrote of the shared domain, in order (an empty dictionary: no file), each with
    /// how many other writes must have landed for it to be on disk (``SimulatedMachine/otherWritesLanded``).
    private let history = Lock<[(version: [String: Int], landed: Int)]>([([:], 0)])
    /// How many other writes were asked for.
    private var otherWrites = 0
    /// Where in `history` each process's view of the shared domain was last seen.
    private let viewed = Lock<[String: Int]>([:])
    let violations = Lock<[String]>([])
    private(set) var step = 0
    /// What the scenario did, for a failure's report (`LIVEDEFAULTS_SWARM_VERBOSE`).
    private(set) var actions: [String] = []

    /// A scenario from `seed`, on a machine whose processes have the past bugs `reintroduced` again.
    init(seed: UInt64, reintroducing reintroduced: Set<ReintroducedBug> = []) {
        self.seed = seed
        machine = SimulatedMachine(seed: seed, reintroducing: reintroduced)
        random = SeededRandom(seed: seed ^ 0x5EED)
        machine.keepsTrace = ProcessInfo.processInfo.environment["LIVEDEFAULTS_SWARM_VERBOSE"] != nil
    }

    var path: String { "\(machine.userDirectory)/\(Self.domain).plist" }
    var sharedPath: String { "\(machine.userDirectory)/\(Self.shared).plist" }

    /// How to run a seed again: alone, and with Swift's hashing deterministic, without which the library's walks of
    /// its dictionaries order its work differently in each process (Docs/Development.md).
    static func replay(_ seed: UInt64) -> String {
        let deterministic = ProcessInfo.processInfo.environment["SWIFT_DETERMINISTIC_HASHING"] != nil
        return "replay: SWIFT_DETERMINISTIC_HASHING=1 LIVEDEFAULTS_SWARM_SEED=\(seed) swift test --filter Swarm"
            + (deterministic ? "" : "; this run's hashing was not deterministic, so it may not replay")
    }

    /// Runs `steps` random actions; returns the first violation, naming the seed and the step that replay it.
    mutating func run(steps: Int) -> String? {
        for name in Self.names { start(name) }
        installStepChecks()
        for index in 0..<steps {
            step = index
            act()
            if let first = violations.withLock({ $0.first }) {
                return "seed \(seed), step \(index): \(first)\n(\(Self.replay(seed)))\n"
                    + actions.suffix(30).joined(separator: "\n") + "\n"
                    + machine.trace.suffix(80).joined(separator: "\n")
            }
        }
        machine.settleNow()
        checkQuiet()
        checkNextWriteWorks()
        return violations.withLock { $0.first }.map { "seed \(seed), at the end: \($0)\n(\(Self.replay(seed)))" }
    }

    // MARK: Actions

    private mutating func act() {
        let running = Self.names.filter { stores[$0] != nil }
        let name = running.isEmpty ? Self.names[0] : running[random.below(running.count)]
        if stores[name] == nil { start(name) }
        let choice = random.below(100)
        actions.append("\(step) \(name) \(choice)")
        switch choice {
        case 0..<25: set(name)
        case 25..<32: remove(name)
        case 32..<42: synchronize(name)
        case 42..<50: increment(name)
        case 50..<55: writePair(name)
        case 55..<70:
            machine.settleNow()
            checkQuiet()
        case 70..<75: machine.advanceNow(by: .microseconds(Int64(random.below(50_000))))
        case 75..<85: otherWriter()
        case 85..<88:
            stores[name] = nil
            pending[name] = [:]
            faulted.remove(name)
            machine.process(name).crash()
            if random.oneIn(2) { start(name) }
        case 88..<89:
            machine.powerLoss()
            stores = [:]
            pending = [:]
            faulted = []
            logMayHaveLost.formUnion(diskContents(path).keys)
            // What other programs had not flushed may be gone: what the disk holds is the shared domain's version now.
            let survived = Self.sharedView(diskContents(sharedPath))
            let landed = machine.otherWritesLanded
            otherWrites = landed
            history.withLock { history in
                history.removeAll { $0.landed > landed }
                history.append((survived, landed))
            }
            for name in Self.names { start(name) }
        case 89..<93:
            // A failing call inside this process's own write: a synchronize or a transaction.
            let call = 1 + random.below(12)
            let code = random.oneIn(2) ? EIO : ENOSPC
            faulted.insert(name)
            let process = machine.process(name)
            switch random.below(3) {
            case 0: process.failingFileSystemCall(call, errno: code) { synchronize(name) }
            case 1: process.failingFileSystemCall(call, errno: code) { increment(name) }
            default: process.failingFileSystemCall(call, errno: code) { writePair(name) }
            }
            logMayMissChange.formUnion(diskContents(path).keys)
        case 93..<97:
            // Killed at a file-system call inside its own write.
            let call = 1 + random.below(16)
            let process = machine.process(name)
            let kind = random.below(3)
            if kind == 1 { unansweredIncrements += 1 }
            process.crash(atFileSystemCall: call) {
                switch kind {
                case 0: _ = stores[name]?.own.synchronize()
                case 1:
                    try? stores[name]?.own.transaction { tx in
                        tx.set(.integer((tx.value(forKey: "count")?.integerValue ?? 0) + 1), forKey: "count")
                    }
                default:
                    try? stores[name]?.own.transaction { tx in
                        tx.set("killed", forKey: "pair.x")
                        tx.set("killed", forKey: "pair.y")
                    }
                }
            }
            stores[name] = nil
            pending[name] = [:]
            faulted.remove(name)
        default:
            // A restart of a process that crashed, or a fresh look by one that runs.
            for name in Self.names where stores[name] == nil { start(name) }
        }
    }

    private mutating func start(_ name: String) {
        let process = machine.process(name)
        // A killed process's stores meet failing calls by the dozen: their reports are not what is checked.
        func configuration(_ domain: String) -> Defaults.Configuration {
            var configuration = process.configuration(applicationDomain: domain)
            configuration.logger = Logger(label: "swarm") { _ in SwiftLogNoOpLogHandler() }
            return configuration
        }
        guard let own = try? process.defaults(configuration: configuration(Self.domain)),
            let shared = try? process.defaults(configuration: configuration(Self.shared))
        else {
            violations.withLock { $0.append("\(name) could not open its stores") }
            return
        }
        stores[name] = Stores(own: own, shared: shared)
        pending[name] = [:]
        viewed.withLock { $0[name] = nil }
    }

    private func key(_ name: String, _ key: String) -> String { "\(name).\(key)" }

    private mutating func set(_ name: String) {
        guard let store = stores[name]?.own else { return }
        counter += 1
        let key = key(name, Self.ownKeys[random.below(Self.ownKeys.count)])
        let value = PropertyList.string("\(name)-\(counter)")
        store.set(value, forKey: key)
        since[key, default: []].append(value)
        pending[name, default: [:]][key] = .some(value)
    }

    private mutating func remove(_ name: String) {
        guard let store = stores[name]?.own else { return }
        let key = key(name, Self.ownKeys[random.below(Self.ownKeys.count)])
        store.removeObject(forKey: key)
        since[key, default: []].append(nil)
        pending[name, default: [:]][key] = .some(nil)
    }

    private mutating func synchronize(_ name: String) {
        guard let store = stores[name]?.own else { return }
        let succeeded = store.synchronize()
        if !succeeded {
            if !faulted.contains(name) {
                violations.withLock { $0.append("\(name)'s synchronize failed with no fault") }
            }
            return
        }
        faulted.remove(name)
        // Every result reported is true: what it acknowledged is on disk now.
        let disk = diskContents(path)
        for (key, value) in pending[name] ?? [:] {
            if disk[key] != value {
                violations.withLock {
                    $0.append(
                        "\(name) synchronized \(key) = \(String(describing: value)) but the disk holds \(String(describing: disk[key]))"
                    )
                }
            }
            acknowledged[key] = .some(value)
            since[key] = []
            logMayHaveLost.remove(key)
            logMayMissChange.remove(key)
        }
        pending[name] = [:]
    }

    private mutating func increment(_ name: String) {
        guard let store = stores[name]?.own else { return }
        do {
            try store.transaction { tx in
                let count = (tx.value(forKey: "count")?.integerValue) ?? 0
                tx.set(.integer(count + 1), forKey: "count")
            }
            increments += 1
            faulted.remove(name)
            logMayHaveLost.remove("count")
            logMayMissChange.remove("count")
        } catch {
            if !faulted.contains(name) {
                violations.withLock { $0.append("\(name)'s increment failed with no fault: \(error)") }
            }
        }
    }

    private mutating func writePair(_ name: String) {
        guard let store = stores[name]?.own else { return }
        pairs += 1
        let value = PropertyList.string("\(name)-pair-\(pairs)")
        do {
            try store.transaction { tx in
                tx.set(value, forKey: "pair.x")
                tx.set(value, forKey: "pair.y")
            }
            logMayHaveLost.subtract(["pair.x", "pair.y"])
            logMayMissChange.subtract(["pair.x", "pair.y"])
        } catch {
            if !faulted.contains(name) {
                violations.withLock { $0.append("\(name)'s pair failed with no fault: \(error)") }
            }
        }
    }

    private mutating func otherWriter() {
        otherWrites += 1
        let landed = otherWrites
        if random.oneIn(12) {
            history.withLock { $0.append(([:], landed)) }
            machine.write(nil, to: sharedPath)
            return
        }
        sharedWrites += 1
        let version = ["ext": sharedWrites, "size": random.below(1_000)]
        history.withLock { $0.append((version, landed)) }
        let format: PropertyListSerialization.PropertyListFormat = random.oneIn(2) ? .xml : .binary
        let data =
            (try? PropertyListSerialization.data(fromPropertyList: version, format: format, options: 0)) ?? Data()
        machine.write(data, to: sharedPath, as: OtherWriter.allCases[random.below(OtherWriter.allCases.count)])
    }

    // MARK: What holds at every step

    private func installStepChecks() {
        let live = live
        let history = history
        let machine = machine
        let viewed = viewed
        let violations = violations
        machine.afterEachStep {
            for (name, store) in live.withLock({ $0 }) {
                // Never half a transaction.
                let x = store.own.object(forKey: "pair.x") as? String
                let y = store.own.object(forKey: "pair.y") as? String
                if x != y {
                    violations.withLock { $0.append("\(name) sees half a pair: \(x ?? "nil") / \(y ?? "nil")") }
                }
                // Only whole versions someone wrote, and never an older one after a newer.
                let view = Swarm.sharedView(
                    ["ext": store.shared.value(forKey: "ext"), "size": store.shared.value(forKey: "size")]
                        .compactMapValues { $0 })
                let landed = machine.otherWritesLanded
                let versions = history.withLock { $0 }
                guard let index = versions.lastIndex(where: { $0.version == view && $0.landed <= landed }) else {
                    violations.withLock { $0.append("\(name) sees a version nobody wrote: \(view)") }
                    continue
                }
                let previous = viewed.withLock { $0[name] } ?? 0
                if index < previous {
                    violations.withLock { $0.append("\(name) went back from version \(previous) to \(index): \(view)") }
                }
                viewed.withLock { $0[name] = max(previous, index) }
            }
        }
    }

    // MARK: What holds once the machine is quiet

    private mutating func checkQuiet() {
        let disk = diskContents(path)
        // Acknowledged writes survive crashes and power loss; unacknowledged ones may or may not.
        for name in Self.names {
            for own in Self.ownKeys {
                let key = key(name, own)
                var allowed: [PropertyList?] = since[key] ?? []
                allowed.append(acknowledged[key] ?? nil)
                if !allowed.contains(where: { $0 == disk[key] }) {
                    violations.withLock {
                        $0.append(
                            "\(key) is \(String(describing: disk[key])) on disk; acknowledged \(String(describing: acknowledged[key] ?? nil)), since \(since[key] ?? [])"
                        )
                    }
                }
            }
        }
        // No increment lost, none counted twice (one whose process was killed before it answered may have landed).
        let count = disk["count"]?.integerValue ?? 0
        if count < increments || count > increments + unansweredIncrements {
            violations.withLock {
                $0.append(
                    "the counter is \(count), \(increments) increments acknowledged, \(unansweredIncrements) unanswered"
                )
            }
        }
        // Every running process that has nothing of its own pending sees the disk.
        for (name, store) in stores where !faulted.contains(name) && (pending[name] ?? [:]).isEmpty {
            for key in disk.keys where store.own.value(forKey: key) != disk[key] {
                violations.withLock {
                    $0.append(
                        "\(name) sees \(key) = \(String(describing: store.own.value(forKey: key))), the disk \(String(describing: disk[key]))"
                    )
                }
            }
        }
        // The change log's latest change of each key is the value on disk.
        if let (_, store) = stores.first(where: { !faulted.contains($0.key) }) {
            for key in disk.keys where !logMayHaveLost.contains(key) {
                let latest = store.own.loggedChanges(key: key, limit: 1).first
                if let latest, latest.origin == .external {
                    // Only LiveDefaults processes write this domain: the log names no other writer.
                    violations.withLock { $0.append("the log takes \(key) = \(latest.newValue) for another writer's") }
                }
                if logMayMissChange.contains(key) { continue }
                guard let latest else {
                    violations.withLock { $0.append("the log has no change of \(key)") }
                    continue
                }
                if latest.newValue != .value(disk[key]!) {
                    let log =
                        machine.contents(atPath: "\(machine.userDirectory)/.\(Self.domain).plist.log")
                        .map { String(decoding: $0, as: UTF8.self) } ?? "no log"
                    let verbose = ProcessInfo.processInfo.environment["LIVEDEFAULTS_SWARM_VERBOSE"] != nil
                    violations.withLock {
                        $0.append(
                            "the log's latest \(key) is \(latest.newValue), the disk \(String(describing: disk[key]))"
                                + (verbose ? "\n" + log : ""))
                    }
                }
            }
        }
    }

    /// After all of it, every running process writes and is read back.
    private mutating func checkNextWriteWorks() {
        for (name, store) in stores {
            store.own.set("last", forKey: key(name, "last"))
            if !store.own.synchronize() { violations.withLock { $0.append("\(name)'s next write failed") } }
            if diskContents(path)[key(name, "last")] != .string("last") {
                violations.withLock { $0.append("\(name)'s next write is not on disk") }
            }
        }
    }

    /// The shared domain's keys as the checks compare them.
    static func sharedView(_ contents: [String: PropertyList]) -> [String: Int] {
        contents.compactMapValues { $0.integerValue }.filter { $0.key == "ext" || $0.key == "size" }
    }

    private func diskContents(_ path: String) -> [String: PropertyList] {
        guard let data = machine.contents(atPath: path),
            case .dictionary(let contents) = try? PropertyList.decode(data).value
        else { return [:] }
        return contents
    }
}
