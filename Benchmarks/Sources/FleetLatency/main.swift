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
// 3. One change reaching ten hosts: a `set` on host 0 → the last of hosts 1…9 to see it.
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

// MARK: Agent mode

/// `FleetLatency agent <directory> <endpoints>`: the FleetSync service on one host's files until killed.
func runAgent(directory: String, endpoints: String) async -> Never {
    do {
        let store = try Defaults(configuration: .rooted(at: directory, applicationDomain: domain))
        var logger = Logger(label: "agent") { StreamLogHandler.standardError(label: $0) }
        logger.logLevel = .warning
        let sync = try FleetSync(
            domains: [domain], etcd: try EtcdConnection(endpoints: endpoints), defaults: store, logger: logger)
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
        case "--writes": options.writes = number(arguments.popFirst())
        case "--fan-out-writes": options.fanOutWrites = number(arguments.popFirst())
        case "--etcd": options.endpoints = arguments.popFirst() ?? ""
        default:
            fail(
                "unknown argument \(argument); usage: FleetLatency --etcd URLS [--writes N] [--fan-out-writes N] [--smoke]"
            )
        }
    }
    guard !options.endpoints.isEmpty else {
        fail("--etcd URLS is required (Benchmarks/fleet starts a cluster and passes it)")
    }
    return options
}

let commandLine = Array(CommandLine.arguments.dropFirst())
if commandLine.first == "agent", commandLine.count == 3 {
    await runAgent(directory: commandLine[1], endpoints: commandLine[2])
}
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

func measureFloor(_ options: Options) async -> (samples: [Double], lost: Int) {
    let endpoint = options.firstEndpoint
    let http = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup)
    let floorKey = "/livedefaults-bench/floor"
    let arrivals = Arrivals()
    let watch = Task {
        let body = #"{"create_request":{"key":"\#(base64(floorKey))"}}"#
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
    // The watch is open once a put shows up in it.
    var opened = false
    for attempt in 0..<50 where !opened {
        _ = try? await http.execute(
            etcdRequest(
                endpoint, "/v3/kv/put", #"{"key":"\#(base64(floorKey))","value":"\#(base64(String(-1 - attempt)))"}"#),
            timeout: .seconds(5))
        opened = await arrival(of: -1 - attempt, in: arrivals, seconds: 0.2) != nil
    }
    guard opened else { fail("the floor's watch never delivered") }
    var samples: [Double] = []
    var lost = 0
    for value in 1...options.writes {
        let start = now()
        let put = try? await http.execute(
            etcdRequest(endpoint, "/v3/kv/put", #"{"key":"\#(base64(floorKey))","value":"\#(base64(String(value)))"}"#),
            timeout: .seconds(5))
        _ = try? await put?.body.collect(upTo: 1 << 16)
        if let time = await arrival(of: value, in: arrivals) { samples.append(Double(time - start)) } else { lost += 1 }
    }
    watch.cancel()
    try? await http.shutdown()
    return (samples, lost)
}

// MARK: 2, 3. Hosts kept in step by agents

/// A host: a directory, an agent process on it, a store on its files.
final class Host: Sendable {
    let directory: String
    let agent: Process
    let store: Defaults

    init(_ index: Int, root: String, endpoints: String) {
        directory = root + "/host\(index)"
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            store = try Defaults(configuration: .rooted(at: directory, applicationDomain: domain))
        } catch {
            fail("host \(index): \(error)")
        }
        agent = Process()
        agent.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        agent.arguments = ["agent", directory, endpoints]
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
let floor = await measureFloor(options)
report("floor: etcd put → watch event (JSON gateway)", floor.samples, lost: floor.lost)
let pair = await measureHosts(count: 2, writes: options.writes, root: root + "/pair", endpoints: options.endpoints)
report("host A set → host B updates(forKey:), through agents", pair.samples, lost: pair.lost)
let ten = await measureHosts(
    count: 10, writes: options.fanOutWrites, root: root + "/ten", endpoints: options.endpoints)
report("host 0 set → last of 9 other hosts", ten.samples, lost: ten.lost)
try? FileManager.default.removeItem(atPath: root)
