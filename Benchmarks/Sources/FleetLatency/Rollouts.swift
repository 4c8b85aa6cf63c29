// Rollouts: the overhead of staging, and the time a canary's failed health check takes to undo it.
//
// Each fleet size gets hosts registered for rollouts (IDs h00, h01, … in the order a rollout reaches them), whose
// health check is this executable's `health` mode: it reads the host's own value and fails on a bad one
// (≥ `badValues`), noting when it failed. A writer host beside them has an agent but no registration (a plain
// `defaults write` on some machine of the fleet). Each size has a key prefix of its own, so that the leases of
// the hosts of a size before never count as live hosts of the next.
//
// Rows per size N:
// - plain write: a `set` on the writer → the last of the N hosts to see it (what a change costs unstaged);
// - rollout, no bake: `FleetRollout.start` with the default stages (1, 10 %, 50 %, 100 %) and a bake of 0 → it
//   returns completed (every stage: the own values written, applied, each host's health check run and reported,
//   the driver's next look at the hosts);
// - the canary's failed check → the canary back on the old value (the issue's figure: the check's exit, noted by
//   the check itself, to the old value seen by a store on the canary);
// - the canary takes the bad value → its check has failed (the check's own time, spawned by the agent at once);
// - rollout start → the driver returns rolled back (the rollback confirmed by the canary's report).
import BenchmarkSupport
import Foundation
import Glibc
import LiveDefaults
import LiveDefaultsFleet
import Synchronization

/// Values from here up make a host unhealthy.
let badValues = 666_000

/// `FleetLatency health <directory>`: the host's health check. Healthy unless the host's value is bad; a failure
/// appends `<value> <CLOCK_MONOTONIC ns>` to `<directory>/failed-checks` just before it exits 1.
func runHealthCheck(directory: String) -> Never {
    guard let store = try? Defaults(configuration: .rooted(at: directory, applicationDomain: domain)) else {
        print("cannot open the host's defaults")
        exit(1)
    }
    let value = store.integer(forKey: key)
    guard value >= badValues else {
        print("value \(value)")
        exit(0)
    }
    let line = Data("\(value) \(now())\n".utf8)
    let path = directory + "/failed-checks"
    if let handle = FileHandle(forWritingAtPath: path) {
        handle.seekToEndOfFile()
        handle.write(line)
        try? handle.close()
    } else {
        _ = FileManager.default.createFile(atPath: path, contents: line)
    }
    print("value \(value) is bad")
    exit(1)
}

/// Every value a store saw, in order, with its time (a value seen twice is there twice).
final class Timeline: Sendable {
    private let events = Mutex<[(value: Int, time: UInt64)]>([])

    func record(_ value: Int) {
        let time = now()
        events.withLock { $0.append((value, time)) }
    }

    /// When `value` was first seen after `time`.
    func first(_ value: Int, after time: UInt64) -> UInt64? {
        events.withLock { events in events.first { $0.value == value && $0.time >= time }?.time }
    }
}

/// A fleet of `count` registered hosts and a writer, with a store following the key on each registered host.
final class RolloutFleet: Sendable {
    let hosts: [Host]
    let writer: Host
    let layout: FleetLayout
    let etcd: EtcdConnection
    let arrivals: [Arrivals]
    let canary: Timeline
    let followers: [Task<Void, Never>]
    private let nextValue = Mutex(1)

    init(count: Int, root: String, endpoints: String) async {
        let prefix = "/livedefaults-bench-rollouts-\(count)-\(getpid())/"
        layout = FleetLayout(prefix: prefix)
        do { etcd = try EtcdConnection(endpoints: endpoints) } catch { fail("\(error)") }
        hosts = (0..<count).map { index in
            Host(index, root: root, endpoints: endpoints, prefix: prefix, hostID: String(format: "h%02d", index))
        }
        writer = Host(count, root: root, endpoints: endpoints, prefix: prefix)
        var arrivals: [Arrivals] = []
        var followers: [Task<Void, Never>] = []
        let canary = Timeline()
        // The writer last: `arrivals` without it are the registered hosts.
        for (index, host) in (hosts + [writer]).enumerated() {
            let recorder = Arrivals()
            var iterator = host.store.updates(forKey: key, emitCurrentValue: false).makeAsyncIterator()
            let timeline = index == 0 ? canary : nil
            followers.append(
                Task {
                    while let value = await iterator.next() {
                        guard case .integer(let number)? = value else { continue }
                        recorder.record(number)
                        timeline?.record(number)
                    }
                })
            arrivals.append(recorder)
        }
        self.arrivals = arrivals
        self.followers = followers
        self.canary = canary
        // Ready when every host is registered with a health report and a write reaches all of them.
        var registered = false
        for _ in 0..<300 where !registered {
            let live = (try? await FleetHosts.live(etcd: etcd, layout: layout)) ?? []
            registered = live.count == count && live.allSatisfy { $0.health != nil }
            if !registered { try? await Task.sleep(for: .milliseconds(100)) }
        }
        guard registered else { fail("the \(count) rollout hosts never registered") }
        guard await write().latency != nil else { fail("the rollout hosts never got in step") }
    }

    func stop() {
        for follower in followers { follower.cancel() }
        for host in hosts + [writer] { host.stop() }
    }

    /// A value not used before in this fleet.
    func fresh() -> Int {
        nextValue.withLock { value in
            defer { value += 1 }; return value
        }
    }

    /// When the last registered host has `value` (and the writer too, with `writer`), nil if one never gets it.
    func lastArrival(of value: Int, writer: Bool = false) async -> UInt64? {
        var last: UInt64 = 0
        for recorder in writer ? arrivals : Array(arrivals.dropLast()) {
            guard let time = await arrival(of: value, in: recorder) else { return nil }
            last = max(last, time)
        }
        return last
    }

    /// A plain write of a fresh value on the writer: the value, and the time until the last host has it (nil if
    /// one never does).
    func write() async -> (value: Int, latency: Double?) {
        let value = fresh()
        let start = now()
        writer.store.set(value, forKey: key)
        return (value, await lastArrival(of: value).map { Double($0 - start) })
    }

    func rollout(_ value: Int, _ options: FleetRollout.Options) async -> RolloutRecord? {
        do {
            return try await FleetRollout.start(
                domain: domain, key: key, value: .integer(value), etcd: etcd, layout: layout, options: options)
        } catch {
            print("rollout of \(value) failed: \(error)")
            return nil
        }
    }

    /// When the canary's health check first failed on `value` (from the check's own note).
    func failedCheck(of value: Int) -> UInt64? {
        guard let text = try? String(contentsOfFile: hosts[0].directory + "/failed-checks", encoding: .utf8) else {
            return nil
        }
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ")
            if fields.count == 2, Int(fields[0]) == value, let time = UInt64(fields[1]) { return time }
        }
        return nil
    }
}

/// Samples of one row and how many trials gave none.
struct Row {
    var samples: [Double] = []
    var lost = 0

    mutating func add(_ sample: Double?) {
        if let sample { samples.append(sample) } else { lost += 1 }
    }
}

func measureRollouts(_ options: Options, root: String) async {
    print("")
    print("Rollouts (default stages 1,10%,50%,100%; health check: a process reading the host's own value):")
    print("| row | trials | lost | median | p90 | p99 | max |")
    print("|---|---|---|---|---|---|---|")
    for count in options.rolloutHosts {
        let fleet = await RolloutFleet(count: count, root: root + "/\(count)", endpoints: options.endpoints)
        var plain = Row()
        var staged = Row()
        var stagedSeen = Row()
        for _ in 0..<options.rolloutTrials {
            plain.add(await fleet.write().latency)
            let value = fleet.fresh()
            let start = now()
            let record = await fleet.rollout(value, FleetRollout.Options(bake: .zero))
            let end = now()
            if record?.phase == .completed, let seen = await fleet.lastArrival(of: value) {
                staged.add(Double(end - start))
                stagedSeen.add(Double(seen - start))
                // The next trial's plain write is made on the writer once it has the rollout's value too: one
                // made before its agent saw the completion would be a write during the rollout, which the
                // completion replaces (Docs/Fleet.md).
                _ = await fleet.lastArrival(of: value, writer: true)
            } else {
                staged.add(nil)
                stagedSeen.add(nil)
            }
        }
        let hosts = "\(count) host\(count == 1 ? "" : "s")"
        report("\(hosts): plain write → the last host has it", plain.samples, lost: plain.lost)
        report("\(hosts): rollout, bake 0 → the last host has it", stagedSeen.samples, lost: stagedSeen.lost)
        report("\(hosts): rollout, bake 0 → completed (driver returns)", staged.samples, lost: staged.lost)

        var back = Row()
        var check = Row()
        var returned = Row()
        for _ in 0..<options.rolloutTrials {
            let (old, latency) = await fleet.write()
            guard latency != nil else {
                back.add(nil)
                check.add(nil)
                returned.add(nil)
                continue
            }
            let bad = badValues + fleet.fresh()
            let start = now()
            // A long bake: the stage cannot pass before the canary's check has run.
            let record = await fleet.rollout(
                bad, FleetRollout.Options(stages: [.hosts(1), .percent(100)], bake: .seconds(30)))
            let end = now()
            let applied = fleet.canary.first(bad, after: start)
            let failed = fleet.failedCheck(of: bad)
            let restored = applied.flatMap { fleet.canary.first(old, after: $0) }
            guard record?.phase == .rolledBack, let applied, let failed, let restored else {
                print(
                    "  a canary trial gave no figure: rollout \(record.map { "\($0.phase): \($0.log.suffix(3))" } ?? "failed"), bad value seen \(applied != nil), check failed \(failed != nil), old value back \(restored != nil)"
                )
                back.add(nil)
                check.add(nil)
                returned.add(nil)
                continue
            }
            back.add(Double(restored) - Double(failed))
            check.add(Double(failed) - Double(applied))
            returned.add(Double(end - start))
        }
        report("\(hosts): canary's failed check → canary back on the old value", back.samples, lost: back.lost)
        report("\(hosts): canary has the bad value → its check failed", check.samples, lost: check.lost)
        report("\(hosts): rollout start → rolled back (driver returns)", returned.samples, lost: returned.lost)
        fleet.stop()
    }
}
