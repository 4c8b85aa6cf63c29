#if Fleet
    import DefaultsToolSupport
    import Foundation
    import LiveDefaults
    import NIOCore
    import NIOHTTP1
    import TestProcesses
    import Testing

    @testable import LiveDefaultsFleet

    @Suite("Fleet layout, sync state and options (no etcd needed)", .blockingWork)
    struct FleetLayoutTests {
        let layout = FleetLayout()

        @Test("hosts and their health live beside the domains, where no domain's keys can be")
        func hostKeys() throws {
            #expect(layout.hostsPrefix == "/livedefaults/.hosts/")
            #expect(FleetLayout(prefix: "/fleet").healthPrefix == "/fleet/.health/")
            // No domain name starts with a dot, so no domain's prefix is under them.
            #expect(throws: DefaultsError.self) { try DomainName.validate(".hosts") }
            // The machine's name is always a valid host ID, whatever the host name is.
            try FleetHostIdentity.validate(id: FleetHostIdentity.machineName)
            for good in ["web-1", "pod_7:a", "h.example.com", String(repeating: "h", count: 253)] {
                try FleetHostIdentity.validate(id: good)
            }
            for bad in ["", ".", "..", "a b", "a/b", "é", String(repeating: "h", count: 254)] {
                #expect(throws: FleetError.self, "\(bad)") { try FleetHostIdentity.validate(id: bad) }
            }
            // A health report is written again only when the host's health changes, or an unhealthy host's reason.
            let now = Date()
            let healthy = HealthReport(isHealthy: true, detail: "ok", checked: now, since: now)
            #expect(healthy.saysTheSame(as: HealthReport(isHealthy: true, detail: "fine", checked: now, since: now)))
            #expect(!healthy.saysTheSame(as: HealthReport(isHealthy: false, detail: "ok", checked: now, since: now)))
            #expect(!healthy.saysTheSame(as: nil))
            func failing(_ detail: String) -> HealthReport {
                HealthReport(isHealthy: false, detail: detail, checked: now, since: now)
            }
            #expect(failing("HTTP 503").saysTheSame(as: failing("HTTP 503")))
            #expect(!failing("HTTP 503").saysTheSame(as: failing("connection closed")))
        }

        @Test("a rollout record written by another tool is read only when it can be driven, never trapping a reader")
        func hostileRolloutRecords() throws {
            func record(stage: String = "1", stages: String = "[\"1\",\"100%\"]", bake: String = "60") -> Data {
                Data(
                    """
                    {"id":"r1","domain":"com.example.api","key":"K","newValue":"","stages":\(stages),\
                    "bakeSeconds":\(bake),"stageTimeoutSeconds":60,"phase":"running","stage":\(stage),"reached":{},\
                    "started":"2026-11-27T00:00:00Z","updated":"2026-11-27T00:00:00Z","health":{},"log":[]}
                    """.utf8)
            }
            let good = try #require(RolloutRecord.decode(record()))
            #expect(good.stage == 1 && good.stages == ["1", "100%"] && good.bakeSeconds == 60)
            #expect(RolloutRecord.decode(record(stage: "2")) != nil, "completed: the stage index is the count")
            for bad in [
                record(stage: "\(Int.max)"), record(stage: "-1"), record(stage: "3"), record(stages: "[]"),
                record(bake: "1e300"), record(bake: "-5"), Data("{}".utf8), Data("not json".utf8),
            ] {
                #expect(RolloutRecord.decode(bad) == nil, "\(String(decoding: bad, as: UTF8.self))")
            }
        }

        @Test("a stage's hosts among the live ones: percentages rounded up, at least one, at most all")
        func stageHostCounts() {
            #expect(RolloutStage.percent(10).hostCount(of: 30) == 3)
            #expect(RolloutStage.percent(50).hostCount(of: 7) == 4)
            #expect(RolloutStage.percent(1).hostCount(of: 1) == 1)
            #expect(RolloutStage.percent(1).hostCount(of: 250) == 3)
            #expect(RolloutStage.percent(100).hostCount(of: Int.max) == Int.max)
            #expect(RolloutStage.percent(1).hostCount(of: Int.max) == Int.max / 100 + 1)
            #expect(RolloutStage.hosts(3).hostCount(of: 2) == 2)
            #expect(RolloutStage.hosts(3).hostCount(of: 0) == 0)
            #expect(RolloutStage.hosts(-3).hostCount(of: 5) == 1)
        }

        /// The fuzz target FuzzFleetRecords's committed inputs (`Fuzz/FleetRecordRegressions/`: hand-made hostile
        /// records and whatever the fuzzer found), each given to every reader of the fleet's records.
        static let recordRegressions: [URL] = {
            let directory = URL(fileURLWithPath: #filePath)
                .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("Fuzz/FleetRecordRegressions")
            let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
            return names.filter { !$0.hasPrefix(".") }.sorted().map { directory.appendingPathComponent($0) }
        }()

        @Test("the fleet record regression inputs are there")
        func recordRegressionsPresent() {
            #expect(Self.recordRegressions.count >= 3, "Fuzz/FleetRecordRegressions/ not found next to the tests")
        }

        @Test("a hostile fleet record is a value every reader can use, or nothing", arguments: recordRegressions)
        func recordRegression(_ file: URL) throws {
            // The first byte picks the fuzz target's reader; every reader gets the rest here.
            let input = Data(try Data(contentsOf: file).dropFirst())
            if let record = RolloutRecord.decode(input) {
                #expect(record.stage < Int.max && record.stage <= record.stages.count)
                #expect(record.bake >= .zero && record.stageTimeout >= .zero)
            }
            _ = FleetHostRecord.decode(input)?.isHealthy
            _ = HealthReport.decode(input)
            _ = KeysUnderRollout.decode(input)
            if let stages = try? RolloutStage.list(String(decoding: input, as: UTF8.self)) {
                for stage in stages {
                    for live in [0, 7, Int.max] { #expect((0...live).contains(stage.hostCount(of: live))) }
                }
            }
        }

        @Test("a defaults key maps to one etcd key under the domain's prefix, and back")
        func keys() {
            #expect(
                layout.etcdKey(domain: "com.example.api", key: "RateLimit") == "/livedefaults/com.example.api/RateLimit"
            )
            let etcdKey = Data("/livedefaults/com.example.api/a/b c".utf8)
            #expect(layout.defaultsKey(domain: "com.example.api", etcdKey: etcdKey) == "a/b c")
            #expect(
                layout.defaultsKey(domain: "com.example.api", etcdKey: Data("/livedefaults/com.example.api/".utf8))
                    == nil)
            #expect(
                layout.defaultsKey(domain: "com.example.api", etcdKey: Data("/livedefaults/com.example.apix/k".utf8))
                    == nil
            )
            #expect(
                layout.defaultsKey(
                    domain: "com.example.api", etcdKey: Data("/livedefaults/com.example.api/".utf8) + Data([0xFF]))
                    == nil)
            #expect(FleetLayout(prefix: "/fleet").prefix == "/fleet/")
        }

        @Test("a prefix's range end is the prefix with its last byte below 0xFF increased")
        func rangeEnd() {
            #expect(FleetLayout.rangeEnd(ofPrefix: Data("/a/".utf8)) == Data("/a0".utf8))
            #expect(FleetLayout.rangeEnd(ofPrefix: Data([0x61, 0xFF, 0xFF])) == Data([0x62]))
            #expect(FleetLayout.rangeEnd(ofPrefix: Data([0xFF])) == Data([0]))
            #expect(FleetLayout.rangeEnd(ofPrefix: Data()) == Data([0]))
        }

        @Test("values are XML property lists; any property-list format is read back")
        func values() throws {
            let value = PropertyList.dictionary(["Limit": .integer(50), "Hosts": .array([.string("a"), .string("b")])])
            let bytes = try FleetLayout.encode(value)
            #expect(String(decoding: bytes, as: UTF8.self).contains("<plist version=\"1.0\">"))
            #expect(try FleetLayout.decode(bytes) == value)
            #expect(try FleetLayout.decode(value.encoded(as: .binary)) == value)
            #expect(
                try FleetLayout.decode(Data("<plist version=\"1.0\"><integer>7</integer></plist>".utf8)) == .integer(7))
            #expect(try FleetLayout.decode(Data("\"plain words\"".utf8)) == .string("plain words"))
            #expect(try FleetLayout.decode(Data("word".utf8)) == .string("word"))
            // Old-style text quotes a string with spaces; bare words with a space are no property list.
            #expect(throws: (any Error).self) { try FleetLayout.decode(Data("plain words".utf8)) }
            #expect(throws: (any Error).self) { try FleetLayout.decode(Data("<plist><integer>x".utf8)) }
        }

        @Test("the sync state survives its file, deletions included, and a foreign file is no state")
        func stateRoundTrip() throws {
            var state = MirrorState(prefix: "/livedefaults/")
            state.clusterID = 16_802_204_702_832_603_495
            state.revision = 42
            state.keys["Limit"] = MirrorState.Entry(revision: 40, value: .integer(5))
            state.keys["Gone"] = MirrorState.Entry(revision: 41, value: nil)
            let data = try state.encoded()
            #expect(MirrorState.decode(data, prefix: "/livedefaults/") == state)
            #expect(MirrorState.decode(data, prefix: "/other/") == nil)
            #expect(MirrorState.decode(Data("junk".utf8), prefix: "/livedefaults/") == nil)
            #expect(state.agreedRevision("Limit") == 40)
            #expect(state.agreedRevision("Gone") == 0)
            #expect(state.agreedRevision("Never") == 0)
            state.pruneDeletions()
            #expect(state.keys["Gone"] == nil && state.keys["Limit"] != nil)
        }

        @Test("a second mirror of the same domain and user is refused while the first holds the state's lock")
        func stateLock() throws {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("state-\(UUID().uuidString)")
                .path
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let first = try MirrorStateFile(directory: directory, domain: "com.example.api")
            #expect(throws: FleetError.self) { try MirrorStateFile(directory: directory, domain: "com.example.api") }
            _ = try MirrorStateFile(directory: directory, domain: "com.example.other")
            withExtendedLifetime(first) {}
        }

        @Test("endpoints and options are parsed as etcdctl takes them, with clear errors")
        func connectionOptions() throws {
            let connection = try EtcdConnection(endpoints: "127.0.0.1:2379, https://10.0.0.2:2379")
            #expect(connection.endpoints.map(\.absoluteString) == ["http://127.0.0.1:2379", "https://10.0.0.2:2379"])
            #expect(throws: FleetError.self) { try EtcdConnection(endpoints: "") }
            #expect(throws: FleetError.self) { try EtcdConnection(endpoints: "ftp://x:1") }
            #expect(throws: FleetError.self) { try EtcdConnection(endpoints: "127.0.0.1:2379", certificate: "/c.pem") }
            let user = try EtcdConnection.user(fromOption: "fleet:pa:ss")
            #expect(user.name == "fleet" && user.password == "pa:ss")
            #expect(throws: FleetError.self) { try EtcdConnection.user(fromOption: "nocolon") }
            #expect(throws: FleetError.self) {
                try EtcdClient(
                    connection: EtcdConnection(endpoints: "https://127.0.0.1:1", caCertificate: "/nonexistent.pem"))
            }
        }

        @Test("FleetSync refuses the global domain, invalid and repeated names")
        func domainChecks() throws {
            let etcd = try EtcdConnection(endpoints: "127.0.0.1:2379")
            #expect(throws: FleetError.self) { try FleetSync(domains: [], etcd: etcd) }
            #expect(throws: FleetError.self) { try FleetSync(domains: ["NSGlobalDomain"], etcd: etcd) }
            #expect(throws: FleetError.self) { try FleetSync(domains: ["../x"], etcd: etcd) }
            #expect(throws: FleetError.self) { try FleetSync(domains: ["a", "a"], etcd: etcd) }
            #expect(FleetSync.defaultStateDirectory(for: .rooted(at: "/tmp/x/")) == "/tmp/x/.livedefaults-sync")
        }

        @Test("retry delays double from the minimum up to the maximum")
        func retryDelays() {
            let timing = FleetSync.Timing(minimumRetryDelay: .milliseconds(100), maximumRetryDelay: .seconds(1))
            #expect(timing.retryDelay(afterFailures: 1) == .milliseconds(100))
            #expect(timing.retryDelay(afterFailures: 2) == .milliseconds(200))
            #expect(timing.retryDelay(afterFailures: 4) == .milliseconds(800))
            #expect(timing.retryDelay(afterFailures: 5) == .seconds(1))
            #expect(timing.retryDelay(afterFailures: Int.max) == .seconds(1))
        }
    }

    /// What etcd's gateway sends, and what a broken or hostile member could send instead: every line is a value
    /// or an error, never a trap.
    @Suite("etcd gateway messages", .blockingWork)
    struct EtcdMessageTests {
        func parse(_ text: String) throws(FleetError) -> EtcdWatchResponse {
            try EtcdClient.watchResponse(ByteBuffer(string: text), endpoint: "http://test")
        }

        @Test("a watch line's events, with 64-bit revisions as strings and IDs over Int64.max")
        func events() throws {
            let line = """
                {"result":{"header":{"cluster_id":"16802204702832603495","revision":"9"},"events":[\
                {"kv":{"key":"L2E=","mod_revision":"9","value":"eA=="}},{"type":"DELETE","kv":{"key":"L2I=","mod_revision":"9"}}]}}
                """
            let response = try parse(line)
            #expect(response.header?.cluster_id?.value == 16_802_204_702_832_603_495)
            #expect(response.events?.count == 2)
            #expect(response.events?[0].kv?.key == Data("/a".utf8))
            #expect(response.events?[0].kv?.value == Data("x".utf8))
            #expect(response.events?[1].type == "DELETE")
        }

        @Test("a cancelled watch: compaction, a lost leader, an authentication failure")
        func cancellations() {
            var compacted = FleetError(.compacted, "http://test: the watch's revision was compacted (now 3)")
            compacted.compactRevision = 3
            #expect(throws: compacted) {
                try parse(#"{"result":{"header":{},"canceled":true,"compact_revision":"3"}}"#)
            }
            let noLeader = #"{"error":{"grpc_code":14,"http_code":503,"message":"etcdserver: no leader"}}"#
            #expect(throws: FleetError(.unreachable, "http://test ended the watch: etcdserver: no leader")) {
                try parse(noLeader)
            }
            #expect(throws: FleetError.self) {
                try parse(#"{"error":{"grpc_code":16,"message":"invalid auth token"}}"#)
            }
        }

        @Test("hostile lines are errors: not JSON, wrong types, numbers out of range, bad base64, no result")
        func hostile() {
            for line in [
                "", "{", "null", "[]", #"{"result":"x"}"#,
                #"{"result":{"header":{"revision":"99999999999999999999"}}}"#,
                #"{"result":{"header":{"revision":"-"}}}"#, #"{"result":{"events":[{"kv":{"key":"%%%"}}]}}"#,
                #"{"result":{"header":{"cluster_id":"-1"}}}"#, #"{}"#, #"{"error":"text"}"#,
                String(repeating: "[", count: 100_000),
            ] {
                #expect(throws: FleetError.self, "\(line.prefix(60))") { try parse(line) }
            }
        }

        @Test("an error answer's gRPC status decides: 14 tries the next endpoint, 16 renews the token")
        func errorAnswers() {
            func failure(_ status: HTTPResponseStatus, _ body: String) -> FleetError.Code {
                EtcdClient.failure(status: status, body: ByteBuffer(string: body), endpoint: "e").code
            }
            #expect(failure(.serviceUnavailable, #"{"error":"etcdserver: no leader","code":14}"#) == .unreachable)
            #expect(failure(.unauthorized, #"{"error":"invalid auth token","code":16}"#) == .authenticationFailed)
            #expect(failure(.badRequest, #"{"error":"bad","code":3}"#) == .etcdError)
            #expect(failure(.badGateway, "<html>not etcd</html>") == .etcdError)
            // A member stopping under a request (found by the soak: the key was taken for refused and left
            // unpushed): tried again, not refused.
            let closing = #"{"error":"grpc: the client connection is closing","code":1}"#
            #expect(failure(.requestTimeout, closing) == .unreachable)
            #expect(failure(.gatewayTimeout, #"{"error":"context deadline exceeded","code":4}"#) == .unreachable)
            #expect(failure(.requestTimeout, "") == .unreachable)
        }
    }

    /// Property tests over mutated input: whatever bytes a member or a damaged state file holds, parsing gives a
    /// value or an error, never a trap (a seeded generator, so a failure repeats).
    @Suite("Fleet input under mutation", .blockingWork)
    struct FleetMutationTests {
        /// A small xorshift generator: the same sequence for the same seed on every run.
        struct Generator: RandomNumberGenerator {
            var state: UInt64
            mutating func next() -> UInt64 {
                state ^= state << 13
                state ^= state >> 7
                state ^= state << 17
                return state
            }
        }

        /// `count` variants of `bytes`: bytes flipped, inserted, removed, the whole cut short.
        static func mutations(of bytes: [UInt8], count: Int, seed: UInt64) -> [[UInt8]] {
            var generator = Generator(state: seed)
            let alphabet = Array(#"{}[]":,0123456789-"abcdefghijklmnopqrstuvwxyz\ "#.utf8) + [0, 0xFF, 0x80]
            return (0..<count).map { _ in
                var mutated = bytes
                for _ in 0..<Int.random(in: 1...4, using: &generator) {
                    let position = mutated.isEmpty ? 0 : Int.random(in: 0..<mutated.count, using: &generator)
                    let byte = alphabet.randomElement(using: &generator) ?? 0
                    switch Int.random(in: 0..<4, using: &generator) {
                    case 0 where !mutated.isEmpty: mutated[position] = byte
                    case 1: mutated.insert(byte, at: position)
                    case 2 where !mutated.isEmpty: mutated.remove(at: position)
                    default: mutated = Array(mutated.prefix(position))
                    }
                }
                return mutated
            }
        }

        @Test("mutated watch lines and error answers parse to a value or an error")
        func watchLines() {
            let lines = [
                #"{"result":{"header":{"cluster_id":"16802204702832603495","revision":"9"},"events":[{"kv":{"key":"L2E=","mod_revision":"9","value":"eA=="}},{"type":"DELETE","kv":{"key":"L2I=","mod_revision":"9"}}]}}"#,
                #"{"result":{"header":{},"canceled":true,"compact_revision":"3"}}"#,
                #"{"error":{"grpc_code":14,"http_code":503,"message":"etcdserver: no leader"}}"#,
            ]
            var values = 0
            for (index, line) in lines.enumerated() {
                for mutated in Self.mutations(of: Array(line.utf8), count: 3_000, seed: 0x9E37_79B9 &+ UInt64(index)) {
                    let buffer = ByteBuffer(bytes: mutated)
                    if (try? EtcdClient.watchResponse(buffer, endpoint: "m")) != nil { values += 1 }
                    _ = EtcdClient.failure(status: .badRequest, body: buffer, endpoint: "m")
                }
            }
            #expect(values > 0, "some mutations are still valid lines")
        }

        @Test("mutated status files are a status or an error, and a report decides on either")
        func statusFiles() throws {
            var status = SyncStatus(
                domain: "com.example.api", processID: 7, started: Date(timeIntervalSince1970: 1_700_000_000),
                statusInterval: 1, endpoints: ["http://127.0.0.1:2379"])
            status.pendingKeys = ["A", "B"]
            status.lastError = "etcd: no leader"
            let bytes = Array(try status.encoded())
            #expect(try SyncStatus.decode(Data(bytes)) == status)
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("status-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let path = SyncStatus.path(stateDirectory: directory.path, domain: "com.example.api")
            var decoded = 0
            for mutated in Self.mutations(of: bytes, count: 2_000, seed: 0x5EED_5747) {
                if (try? SyncStatus.decode(Data(mutated))) != nil { decoded += 1 }
                if decoded < 20 {
                    // The report reads what it finds: never a trap, and never "in step" without an agent.
                    try Data(mutated).write(to: URL(fileURLWithPath: path))
                    #expect(!SyncStatusReport(domain: "com.example.api", stateDirectory: directory.path).inStep)
                }
            }
            #expect(decoded > 0, "some mutations are still statuses")
        }

        @Test("mutated sync state files are a state or no state")
        func stateFiles() throws {
            var state = MirrorState(prefix: "/livedefaults/")
            state.clusterID = 42
            state.revision = 9
            state.keys["Limit"] = MirrorState.Entry(revision: 8, value: .array([.integer(5), .string("x")]))
            state.keys["Gone"] = MirrorState.Entry(revision: 9, value: nil)
            for format in [PropertyList.Format.binary, .xml] {
                guard case .dictionary(let root) = try PropertyList.decode(try state.encoded()).value else {
                    Issue.record("the state is a dictionary")
                    return
                }
                let bytes = Array(try PropertyList.dictionary(root).encoded(as: format))
                for mutated in Self.mutations(of: bytes, count: 2_000, seed: 0xD1B5_4A32 &+ UInt64(bytes.count)) {
                    _ = MirrorState.decode(Data(mutated), prefix: "/livedefaults/")
                }
                #expect(MirrorState.decode(Data(bytes), prefix: "/livedefaults/") == state)
            }
        }
    }
#endif
