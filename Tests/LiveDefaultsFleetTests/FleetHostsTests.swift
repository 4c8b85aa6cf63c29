#if Fleet
    import Foundation
    import LiveDefaults
    import Testing
    import TestProcesses

    #if canImport(Glibc)
        import Glibc
    #endif

    /// Hosts a rollout can address: each agent registers its host under an etcd lease and reports its own health
    /// check, and `defaults hosts` lists what etcd holds. Real agents against a real cluster.
    @Suite(
        "Fleet hosts: registration under a lease, health checks", .blockingWork, .serialized,
        .timeLimit(.minutes(3)), .enabled(if: EtcdCluster.isInstalled, EtcdCluster.notInstalled)
    )
    struct FleetHostsTests {
        let domain = "com.example.api"

        /// A health command that reads a file of the host's (`ok` is healthy) and says what it read.
        func checkReading(_ host: FleetHost) -> String {
            let path = host.directory + "/health"
            _ = FileManager.default.createFile(atPath: path, contents: Data("ok\n".utf8))
            return "read state < '\(path)'; echo \"state $state of $LIVEDEFAULTS_HOST_ID\"; test \"$state\" = ok"
        }

        func setHealth(_ host: FleetHost, _ text: String) throws {
            try Data((text + "\n").utf8).write(to: URL(fileURLWithPath: host.directory + "/health"))
        }

        func health(_ entry: [String: Any]?) -> [String: Any] { entry?["health"] as? [String: Any] ?? [:] }

        @Test(
            "hosts register with their health; a failing check is reported; a killed agent's host goes with its lease, a stopped one's at once"
        )
        func registerAndReport() async throws {
            let cluster = try EtcdCluster.started(members: 1)
            let a = try FleetHost("host-a")
            let b = try FleetHost("host-b")
            let options = ["--health-interval", "0.2", "--lease-time", "2"]
            try a.startAgent(
                [domain], etcd: cluster.endpoints, options: options + ["--health-command", checkReading(a)])
            try b.startAgent(
                [domain], etcd: cluster.endpoints, options: options + ["--health-command", checkReading(b)])

            await expectEventually("both hosts registered and healthy", hosts: [a, b], cluster: cluster) {
                guard let listed = try? a.hosts(etcd: cluster.endpoints), listed.status == 0 else { return false }
                return listed.hosts.count == 2 && listed.hosts.values.allSatisfy { $0["healthy"] as? Bool == true }
            }
            let listed = try a.hosts(etcd: cluster.endpoints).hosts
            #expect(listed["host-a"]?["domains"] as? [String] == [domain])
            // The command ran in the agent's environment, with the host's ID.
            #expect(health(listed["host-b"])["detail"] as? String == "state ok of host-b")
            #expect((listed["host-a"]?["healthCheck"] as? String)?.hasPrefix("command: read state") == true)

            // B's check fails: reported with what it said, and `defaults hosts` exits 1.
            try setHealth(b, "overloaded")
            await expectEventually("host B reported unhealthy", hosts: [a, b], cluster: cluster) {
                guard let listed = try? a.hosts(etcd: cluster.endpoints) else { return false }
                return listed.status == 1 && listed.hosts["host-b"]?["healthy"] as? Bool == false
                    && health(listed.hosts["host-b"])["detail"] as? String == "exit 1: state overloaded of host-b"
                    && listed.hosts["host-a"]?["healthy"] as? Bool == true
            }
            // And healthy again when it passes.
            try setHealth(b, "ok")
            await expectEventually("host B healthy again", hosts: [a, b], cluster: cluster) {
                (try? a.hosts(etcd: cluster.endpoints))?.hosts["host-b"]?["healthy"] as? Bool == true
            }

            // B's agent killed: nobody revokes its lease, so its host goes when the lease ends (2 s).
            let killed = Date()
            b.stopAgent(signal: SIGKILL)
            await expectEventually("host B gone with its lease", hosts: [a, b], cluster: cluster, timeout: 15) {
                (try? a.hosts(etcd: cluster.endpoints))?.hosts["host-b"] == nil
            }
            let gone = Date().timeIntervalSince(killed)
            #expect(gone >= 1, "the lease outlives the agent by up to its time: gone after \(gone) s")

            // A's agent stopped: its lease is revoked, so its host is gone as the agent exits.
            #expect(a.stopAgent()?.status == 0)
            let after = try a.hosts(etcd: cluster.endpoints)
            #expect(after.hosts.isEmpty, "\(after.hosts)")
            #expect(try a.defaults(["hosts", "--etcd", cluster.endpoints]).output == "no live host\n")
        }

        @Test(
            "a hanging health command is killed and reported; a health URL is healthy on 2xx only; a host without a check is healthy"
        )
        func hangingCommandAndURL() async throws {
            let cluster = try EtcdCluster.started(members: 1)
            let hang = try FleetHost("hang")
            let web = try FleetHost("web")
            let plain = try FleetHost("plain")
            let server = try HealthServer()
            try hang.startAgent(
                [domain], etcd: cluster.endpoints,
                options: [
                    "--health-command", "echo started; sleep 31.5", "--health-timeout", "0.3", "--health-interval",
                    "0.2",
                    "--lease-time", "2",
                ])
            try web.startAgent(
                [domain], etcd: cluster.endpoints,
                options: ["--health-url", server.url, "--health-interval", "0.2", "--lease-time", "2"])
            try plain.startAgent([domain], etcd: cluster.endpoints, options: ["--lease-time", "2"])
            let hosts = [hang, web, plain]

            await expectEventually("the hanging check reported as timed out", hosts: hosts, cluster: cluster) {
                let entry = (try? hang.hosts(etcd: cluster.endpoints))?.hosts["hang"]
                return entry?["healthy"] as? Bool == false
                    && (health(entry)["detail"] as? String)?.contains("did not finish within 0.3 seconds") == true
            }
            // The killed command's process group goes with it: checks never pile up, whatever runs now is the
            // current check's `sleep` (one at a time, over several checks).
            var most = 0
            await RealTime.sample(times: 30, every: .milliseconds(100)) {
                most = max(most, commandLines(containing: "31.5").count)
            }
            #expect(most <= 1, "timed-out health commands still run: \(most) at once")

            await expectEventually("the URL check healthy on 200", hosts: hosts, cluster: cluster) {
                let entry = (try? web.hosts(etcd: cluster.endpoints))?.hosts["web"]
                return entry?["healthy"] as? Bool == true && health(entry)["detail"] as? String == "HTTP 200"
            }
            try server.answer(503)
            await expectEventually("the URL check unhealthy on 503", hosts: hosts, cluster: cluster) {
                let entry = (try? web.hosts(etcd: cluster.endpoints))?.hosts["web"]
                return entry?["healthy"] as? Bool == false && health(entry)["detail"] as? String == "HTTP 503"
            }
            let entry = try plain.hosts(etcd: cluster.endpoints).hosts["plain"]
            #expect(entry?["healthy"] as? Bool == true)
            #expect(entry?["healthCheck"] == nil)
            // Only the hosts of one domain, and none of another.
            #expect(try plain.hosts(etcd: cluster.endpoints).hosts.count == 3)
            let other = try plain.defaultsOutput(["hosts", "--etcd", cluster.endpoints, "--domain", "com.example.none"])
            #expect(other.status == 1)
        }

        @Test("a host ID held by a live agent is not taken; a second agent takes it once the first one's lease ends")
        func hostIDHeld() async throws {
            let cluster = try EtcdCluster.started(members: 1)
            let first = try FleetHost("first")
            let second = try FleetHost("second")
            let options = ["--host-id", "web-1", "--lease-time", "2"]
            try first.startAgent([domain], etcd: cluster.endpoints, options: options)
            await expectEventually("web-1 registered by the first agent", hosts: [first], cluster: cluster) {
                (try? first.hosts(etcd: cluster.endpoints))?.hosts["web-1"] != nil
            }
            let firstPID = try first.hosts(etcd: cluster.endpoints).hosts["web-1"]?["pid"] as? Int
            try second.startAgent(["com.example.other"], etcd: cluster.endpoints, options: options)
            await expectEventually("the second agent says the name is held", hosts: [second], cluster: cluster) {
                second.log.contains("host ID web-1 is registered by another live agent (pid \(firstPID ?? -1)")
            }
            #expect(try first.hosts(etcd: cluster.endpoints).hosts["web-1"]?["pid"] as? Int == firstPID)

            first.stopAgent(signal: SIGKILL)
            await expectEventually("web-1 taken over by the second agent", hosts: [first, second], cluster: cluster) {
                let entry = (try? second.hosts(etcd: cluster.endpoints))?.hosts["web-1"]
                return entry?["domains"] as? [String] == ["com.example.other"]
            }
        }

        @Test("a bad host ID or health option is refused before anything starts")
        func badOptions() throws {
            let host = try FleetHost("options")
            let etcd = "http://127.0.0.1:9"
            for (options, message) in [
                (["--host-id", "a/b"], "a host ID has only letters, digits"),
                (["--host-id", ""], "a host ID cannot be empty"),
                (["--host-id", String(repeating: "h", count: 254)], "at most 253 bytes"),
                (["--lease-time", "1"], "a host's lease lasts 2 seconds to 1 hour"),
                (["--health-url", "ftp://x"], "is not an http:// or https:// URL"),
                (["--health-command", "true", "--health-url", "http://x"], "give one health check"),
                (["--health-interval", "nan"], "--health-interval takes seconds"),
            ] {
                let result = try host.defaults(["sync", domain, "--etcd", etcd] + options)
                #expect(result.status != 0, "\(options)")
                #expect(result.output.contains(message), "\(options): \(result.output)")
            }
        }
    }

    /// The command lines (`/proc/*/cmdline`, arguments joined by spaces) of this machine's processes that contain
    /// `text`.
    func commandLines(containing text: String) -> [String] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.filter { Int($0) != nil }.compactMap { pid in
            guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { return nil }
            let line = String(decoding: data.map { $0 == 0 ? UInt8(ascii: " ") : $0 }, as: UTF8.self)
            return line.contains(text) && line.hasPrefix("sleep") ? line : nil
        }
    }

    /// A health endpoint in a real second process (Python's http.server on a loopback port), whose answer a test
    /// sets.
    final class HealthServer {
        let process: Process
        let url: String
        private let statusFile: String

        init() throws {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("health-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            statusFile = directory.appendingPathComponent("status").path
            try Data("200".utf8).write(to: URL(fileURLWithPath: statusFile))
            let port = try EtcdCluster.freePort()
            let script = """
                import http.server, sys
                class H(http.server.BaseHTTPRequestHandler):
                    def do_GET(self):
                        code = int(open(sys.argv[2]).read())
                        self.send_response(code); self.send_header('Content-Length', '2'); self.end_headers()
                        self.wfile.write(b'ok')
                    def log_message(self, *args): pass
                http.server.HTTPServer(('127.0.0.1', int(sys.argv[1])), H).serve_forever()
                """
            process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["python3", "-c", script, String(port), statusFile]
            try process.run()
            url = "http://127.0.0.1:\(port)/health"
        }

        func answer(_ status: Int) throws {
            // Atomically: a check that read the file between a plain write's truncate and its bytes found it
            // empty, and the server closed the connection without an answer.
            try Data(String(status).utf8).write(to: URL(fileURLWithPath: statusFile), options: .atomic)
        }

        deinit {
            // SIGKILL without waiting: Foundation reaps it (a wait here has been seen to hang when the
            // process had ended already).
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }
    }
#endif
