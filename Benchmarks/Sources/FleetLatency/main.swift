// Fleet latency: how long after a program on one host sets a key does a program on another host see it, when
// the hosts are kept in step by sync agents through a three-member etcd cluster? Release mode, with the
// cluster started by `Benchmarks/fleet` (which passes its endpoints):
//
//   Benchmarks/fleet [--writes N] [--fan-out-writes N] [--smoke]
//
// Rows, all against the same cluster in the same run:
// 1. The floor: a bare etcd put → the watch event for it (etcd's own commit on three members and delivery),
//    through the JSON gateway the agents use.
// 2. Host to host: a `set` in a store on host A → `updates(forKey:)` in a store on host B. Each host is a
//    directory of its own with its own agent, a separate process running the FleetSync service (the code
//    `defaults sync` runs: this executable in `agent` mode). The path: A's file, A's agent (inotify, a
//    transaction), etcd, B's agent (the watch, the locked merge into B's file), B's store (inotify).
// 3. Fan-out: one change reaching N hosts (N = 10, 30, 100 agents by default): a `set` on host 0 → the last of
//    hosts 1…N-1 to see it, beside etcd's own floor for the same fan-out: a put → the last of N-1 watches
//    (opened through the gateway) to deliver it. On one machine every agent, observer and member shares the
//    same cores, so these rows measure CPU contention as much as the fleet.
// 4. Rollouts (Rollouts.swift): what staging costs — a `FleetRollout` with the default stages and no bake over
//    1, 10, 30 registered hosts beside a plain write reaching the same hosts — and how fast a canary's failed
//    health check takes the value back.
import AsyncHTTPClient
import BenchmarkSupport
import Foundation
import Glibc
import LiveDefaults
import LiveDefaultsFleet
import Logging
import NIOCore
import NIOFoundationCompat
import NIOHTTP1

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("FleetLatency: \(message)\n".utf8))
    exit(2)
}

let domain = "com.example.fleet.bench"
let key = "Counter"
let executablePath = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path

// MARK: Agent mode

/// `FleetLatency agent <directory> <endpoints> <prefix> [<host ID>]`: the FleetSync service on one host's files
/// until killed; with a host ID, registered as a rollout's target with this executable's `health` mode as its
/// health check.
func runAgent(directory: String, endpoints: String, prefix: String, hostID: String?) async -> Never {
    do {
        let store = try Defaults(configuration: .rooted(at: directory, applicationDomain: domain))
        var logger = Logger(label: "agent \(hostID ?? directory)") { StreamLogHandler.standardError(label: $0) }
        logger.logLevel = .warning
        let identity = try hostID.map { id throws(FleetError) in
            try FleetHostIdentity(id: id, healthCheck: .command("'\(executablePath)' health '\(directory)'"))
        }
        let sync = try FleetSync(
            domains: [domain], etcd: try EtcdConnection(endpoints: endpoints), defaults: store,
            layout: FleetLayout(prefix: prefix), logger: logger, host: identity)
        try await sync.run()
    } catch {
        fail("agent: \(error)")
    }
    exit(0)
}

// MARK: Options

struct Options: Sendable {
    var writes = 300
    var fanOutWrites = 100
    var fanOut = [10, 30, 100]
    var rolloutHosts = [1, 10, 30]
    var rolloutTrials = 20
    var endpoints = ""
    var firstEndpoint: String {
        let first = String(endpoints.split(separator: ",").first ?? "")
        return first.hasPrefix("http") ? first : "http://" + first
    }
}

func parseOptions(_ arguments: [String]) -> Options {
    var options = Options()
    var arguments = arguments[...]
    func number(_ text: String?) -> Int {
        guard let text, let value = Int(text), value > 0 else {
            fail("expected a positive count, got \(text ?? "nothing")")
        }
        return value
    }
    while let argument = arguments.popFirst() {
        switch argument {
        case "--smoke":
            options.writes = 20
            options.fanOutWrites = 5
            options.fanOut = [10]
            options.rolloutHosts = [1, 10]
            options.rolloutTrials = 2
        case "--writes": options.writes = number(arguments.popFirst())
        case "--fan-out-writes": options.fanOutWrites = number(arguments.popFirst())
        case "--fan-out":
            let list = (arguments.popFirst() ?? "").split(separator: ",").map { number(String($0)) }
            guard !list.isEmpty, list.allSatisfy({ $0 >= 2 }) else {
                fail("--fan-out takes host counts ≥ 2, as 10,30,100")
            }
            options.fanOut = list
        case "--rollout-hosts":
            let list = (arguments.popFirst() ?? "").split(separator: ",").map { number(String($0)) }
            guard !list.isEmpty else { fail("--rollout-hosts takes host counts, as 1,10,30") }
            options.rolloutHosts = list
        case "--rollout-trials": options.rolloutTrials = number(arguments.popFirst())
        case "--etcd": options.endpoints = arguments.popFirst() ?? ""
        default:
            fail(
                "unknown argument \(argument); usage: FleetLatency --etcd URLS [--writes N] [--fan-out N,N…] [--fan-out-writes N] [--rollout-hosts N,N…] [--rollout-trials N] [--smoke]"
            )
        }
    }
    guard !options.endpoints.isEmpty else {
        fail("--etcd URLS is required (Benchmarks/fleet starts a cluster and passes it)")
    }
    return options
}

let commandLine = Array(CommandLine.arguments.dropFirst())
if commandLine.first == "agent", (4...5).contains(commandLine.count) {
    await runAgent(
        directory: commandLine[1], endpoints: commandLine[2], prefix: commandLine[3],
        hostID: commandLine.count == 5 ? commandLine[4] : nil)
}
if commandLine.first == "health", commandLine.count == 2 { runHealthCheck(directory: commandLine[1]) }
let options = parseOptions(commandLine)

/// Prints one row: median, p90, p99 and max of the latencies (nanoseconds), and how many never arrived.
func report(_ name: String, _ samples: [Double], lost: Int) {
    guard !samples.isEmpty else { return print("\(name): nothing arrived (\(lost) lost)") }
    let sorted = samples.sorted()
    func percentile(_ p: Double) -> Double { sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))] }
    let cells = [percentile(0.5), percentile(0.9), percentile(0.99), sorted[sorted.count - 1]].map(format)
    print(
        "| \(name) | \(samples.count + lost) | \(lost) | \(cells.joined(separator: " | ")) |")
}

/// Waits (without blocking a thread) until `arrivals` has the value; its arrival time, or nil after `seconds`.
func arrival(of value: Int, in arrivals: Arrivals, seconds: Double = 10) async -> UInt64? {
    let deadline = now() + UInt64(seconds * 1e9)
    while now() < deadline {
        if let time = arrivals.wait(for: value, seconds: 0) { return time }
        try? await Task.sleep(for: .microseconds(100))
    }
    return arrivals.wait(for: value, seconds: 0)
}

// MARK: 1. The floor: etcd put → watch event

func etcdRequest(_ endpoint: String, _ path: String, _ body: String) -> HTTPClientRequest {
    var request = HTTPClientRequest(url: endpoint + path)
    request.method = .POST
    request.headers.add(name: "Content-Type", value: "application/json")
    request.body = .bytes(ByteBuffer(string: body))
    return request
}

func base64(_ text: String) -> String { Data(text.utf8).base64EncodedString() }

/// A put → its event on `watchers` watches of the key (the last of them to deliver it), `writes` times.
func measureFloor(_ options: Options, watchers: Int = 1, writes: Int) async -> (samples: [Double], lost: Int) {
    let endpoints = options.endpoints.split(separator: ",").map { $0.hasPrefix("http") ? String($0) : "http://\($0)" }
    let endpoint = options.firstEndpoint
    // A watch holds its connection: room for one per watch, and one for the puts (AsyncHTTPClient opens 8 per
    // host by default and queues what is beyond).
    var configuration = HTTPClient.Configuration()
    configuration.connectionPool = .init(
        idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: watchers + 8)
    let http = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    let floorKey = "/livedefaults-bench/floor-\(watchers)"
    // Watches spread over the members, as agents spread over a cluster.
    let watches = (0..<watchers).map { index in watch(floorKey, on: endpoints[index % endpoints.count], http: http) }
    // The watches are open once a put shows up in every one.
    var opened = false
    for attempt in 0..<50 where !opened {
        _ = try? await http.execute(
            etcdRequest(
                endpoint, "/v3/kv/put", #"{"key":"\#(base64(floorKey))","value":"\#(base64(String(-1 - attempt)))"}"#),
            timeout: .seconds(5))
        opened = true
        for (arrivals, _) in watches where await arrival(of: -1 - attempt, in: arrivals, seconds: 0.3) == nil {
            opened = false
        }
    }
    guard opened else { fail("the floor's watches never delivered") }
    var samples: [Double] = []
    var lost = 0
    for value in 1...writes {
        let start = now()
        let put = try? await http.execute(
            etcdRequest(endpoint, "/v3/kv/put", #"{"key":"\#(base64(floorKey))","value":"\#(base64(String(value)))"}"#),
            timeout: .seconds(5))
        _ = try? await put?.body.collect(upTo: 1 << 16)
        var last: UInt64 = 0
        var missing = false
        for (arrivals, _) in watches {
            if let time = await arrival(of: value, in: arrivals) { last = max(last, time) } else { missing = true }
        }
        if missing { lost += 1 } else { samples.append(Double(last - start)) }
    }
    for (_, task) in watches { task.cancel() }
    for (_, task) in watches { _ = await task.value }
    try? await http.shutdown()
    return (samples, lost)
}

/// A watch of `key` on `endpoint`, recording when each integer value arrives.
func watch(_ key: String, on endpoint: String, http: HTTPClient) -> (Arrivals, Task<Void, Never>) {
    let arrivals = Arrivals()
    let task = Task {
        let body = #"{"create_request":{"key":"\#(base64(key))"}}"#
        guard let response = try? await http.execute(etcdRequest(endpoint, "/v3/watch", body), deadline: .distantFuture)
        else {
            fail("cannot open a watch on \(endpoint)")
        }
        var pending = Data()
        do {
            for try await chunk in response.body {
                pending.append(Data(buffer: chunk))
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = pending[pending.startIndex..<newline]
                    pending = Data(pending[(newline + 1)...])
                    guard let object = try? JSONSerialization.jsonObject(with: line) as? [String: Any],
                        let result = object["result"] as? [String: Any],
                        let events = result["events"] as? [[String: Any]]
                    else { continue }
                    for event in events {
                        guard let kv = event["kv"] as? [String: Any], let value = kv["value"] as? String,
                            let bytes = Data(base64Encoded: value),
                            let number = Int(String(decoding: bytes, as: UTF8.self))
                        else { continue }
                        arrivals.record(number)
                    }
                }
            }
        } catch {}
    }
    return (arrivals, task)
}

// MARK: 2, 3. Hosts kept in step by agents

/// A host: a directory, an agent process on it, a store on its files.
final class Host: Sendable {
    let directory: String
    let agent: Process
    let store: Defaults

    /// Host `index` under `root`, its agent syncing under `prefix`; registered as `hostID` for rollouts if given.
    init(_ index: Int, root: String, endpoints: String, prefix: String = FleetLayout().prefix, hostID: String? = nil) {
        directory = root + "/host\(index)"
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            store = try Defaults(configuration: .rooted(at: directory, applicationDomain: domain))
        } catch {
            fail("host \(index): \(error)")
        }
        agent = Process()
        agent.executableURL = URL(fileURLWithPath: executablePath)
        agent.arguments = ["agent", directory, endpoints, prefix] + (hostID.map { [$0] } ?? [])
        do { try agent.run() } catch { fail("cannot start an agent: \(error)") }
    }

    func stop() {
        kill(agent.processIdentifier, SIGKILL)
        agent.waitUntilExit()
    }
}

/// Follows the key on a host, recording when each integer value arrived.
func follow(_ host: Host) -> (Arrivals, Task<Void, Never>) {
    let arrivals = Arrivals()
    var iterator = host.store.updates(forKey: key, emitCurrentValue: false).makeAsyncIterator()
    let task = Task {
        while let value = await iterator.next() {
            if case .integer(let number)? = value { arrivals.record(number) }
        }
    }
    return (arrivals, task)
}

/// Sets the key on host 0 `count` times and measures until every observer has each value.
func measureHosts(count hostCount: Int, writes: Int, root: String, endpoints: String) async -> (
    samples: [Double], lost: Int
) {
    let hosts = (0..<hostCount).map { Host($0, root: root, endpoints: endpoints) }
    defer { for host in hosts { host.stop() } }
    let observers = hosts.dropFirst().map(follow)
    // Warm-up: every agent connected and every observer following.
    var value = -1
    var ready = false
    for _ in 0..<100 where !ready {
        hosts[0].store.set(value, forKey: key)
        var all = true
        for (arrivals, _) in observers where await arrival(of: value, in: arrivals, seconds: 0.3) == nil { all = false }
        ready = all
        value -= 1
    }
    guard ready else { fail("the agents never got in step") }
    var samples: [Double] = []
    var lost = 0
    for value in 1...writes {
        let start = now()
        hosts[0].store.set(value, forKey: key)
        var last: UInt64 = 0
        var missing = false
        for (arrivals, _) in observers {
            if let time = await arrival(of: value, in: arrivals) { last = max(last, time) } else { missing = true }
        }
        if missing { lost += 1 } else { samples.append(Double(last - start)) }
    }
    for (_, task) in observers { task.cancel() }
    return (samples, lost)
}

let root = NSTemporaryDirectory() + "fleet-latency-\(getpid())"
defer { try? FileManager.default.removeItem(atPath: root) }

print("Fleet latency through a three-member etcd cluster (\(options.endpoints))")
print("| row | writes | lost | median | p90 | p99 | max |")
print("|---|---|---|---|---|---|---|")
let floor = await measureFloor(options, writes: options.writes)
report("floor: etcd put → watch event (JSON gateway)", floor.samples, lost: floor.lost)
let pair = await measureHosts(count: 2, writes: options.writes, root: root + "/pair", endpoints: options.endpoints)
report("host A set → host B updates(forKey:), through agents", pair.samples, lost: pair.lost)
for hosts in options.fanOut {
    let watches = await measureFloor(options, watchers: hosts - 1, writes: options.fanOutWrites)
    report("floor: etcd put → last of \(hosts - 1) watches", watches.samples, lost: watches.lost)
    let fanOut = await measureHosts(
        count: hosts, writes: options.fanOutWrites, root: root + "/fan-out-\(hosts)", endpoints: options.endpoints)
    report("\(hosts) agents: host 0 set → last of \(hosts - 1) other hosts", fanOut.samples, lost: fanOut.lost)
}
await measureRollouts(options, root: root + "/rollouts")
try? FileManager.default.removeItem(atPath: root)
