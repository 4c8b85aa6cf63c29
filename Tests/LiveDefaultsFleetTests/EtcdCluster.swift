#if Fleet
    import Foundation
    import TestProcesses
    import Testing

    #if canImport(Glibc)
        import Glibc
    #endif

    /// A real etcd cluster for a test: Debian's `etcd` (Scripts/install-dependencies installs it), members on
    /// loopback ports chosen free at creation, data in a temporary directory removed at the end. Elections are
    /// made quick (50 ms heartbeat, 500 ms election timeout) so that failure tests do not wait for seconds.
    final class EtcdCluster: @unchecked Sendable {
        // @unchecked: a cluster belongs to one test, which drives it from one task at a time; `processes` is only
        // read and written by that test's calls.

        struct Member {
            let name: String
            let clientPort: Int
            let peerPort: Int
            let secure: Bool
            var clientURL: String { "\(secure ? "https" : "http")://127.0.0.1:\(clientPort)" }
            var peerURL: String { "http://127.0.0.1:\(peerPort)" }
        }

        let directory: URL
        let members: [Member]
        /// With TLS, the members serve clients over HTTPS only and ask for a client certificate.
        let tls: TLSFiles?
        private let token = "livedefaults-test-\(UUID().uuidString.prefix(8))"
        private var processes: [Process?]

        /// The members' client URLs, comma-separated, as `defaults sync --etcd` takes them.
        var endpoints: String { members.map(\.clientURL).joined(separator: ",") }

        /// Chooses ports and a directory for `count` members without starting them (see ``start()``).
        init(members count: Int = 3, tls: Bool = false) throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("etcd-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            self.tls = tls ? try TLSFiles(in: directory.appendingPathComponent("tls")) : nil
            var ports = Set<Int>()
            while ports.count < count * 2 { ports.insert(try Self.freePort()) }
            let list = Array(ports)
            members = (0..<count).map {
                Member(name: "m\($0)", clientPort: list[2 * $0], peerPort: list[2 * $0 + 1], secure: tls)
            }
            processes = Array(repeating: nil, count: count)
        }

        /// A started cluster of `count` members, all healthy.
        static func started(members count: Int = 3, tls: Bool = false) throws -> EtcdCluster {
            let cluster = try EtcdCluster(members: count, tls: tls)
            try cluster.start()
            return cluster
        }

        deinit {
            for index in members.indices { stopMember(index) }
            try? FileManager.default.removeItem(at: directory)
        }

        /// Starts every member that is not running and waits until the cluster answers.
        func start() throws {
            for index in members.indices where processes[index]?.isRunning != true { try launch(index) }
            guard waitUntilHealthy() else { throw ClusterError("etcd did not become healthy:\n\(logTail())") }
        }

        private func launch(_ index: Int) throws {
            let member = members[index]
            let process = Process()
            process.executableURL = URL(fileURLWithPath: try Self.etcdPath())
            let initial = members.map { "\($0.name)=\($0.peerURL)" }.joined(separator: ",")
            process.arguments = [
                "--name", member.name, "--data-dir", directory.appendingPathComponent(member.name).path,
                "--listen-client-urls", member.clientURL, "--advertise-client-urls", member.clientURL,
                "--listen-peer-urls", member.peerURL, "--initial-advertise-peer-urls", member.peerURL,
                "--initial-cluster", initial, "--initial-cluster-token", token, "--initial-cluster-state", "new",
                "--heartbeat-interval", "50", "--election-timeout", "500", "--logger", "zap", "--log-level", "warn",
            ]
            if let tls {
                process.arguments! += [
                    "--cert-file", tls.serverCertificate, "--key-file", tls.serverKey, "--trusted-ca-file",
                    tls.authority,
                    "--client-cert-auth",
                ]
            }
            let log = directory.appendingPathComponent("\(member.name).log")
            if !FileManager.default.fileExists(atPath: log.path) {
                _ = FileManager.default.createFile(atPath: log.path, contents: nil)
            }
            let handle = try FileHandle(forWritingTo: log)
            handle.seekToEndOfFile()
            process.standardOutput = handle
            process.standardError = handle
            try process.run()
            processes[index] = process
        }

        /// Ends a member at once (SIGKILL), as a crash or a pulled plug would.
        func kill(_ index: Int) {
            guard let process = processes[index], process.isRunning else { return }
            Glibc.kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            processes[index] = nil
        }

        /// Stops a member cleanly (SIGTERM).
        func stopMember(_ index: Int) {
            guard let process = processes[index], process.isRunning else { return }
            process.terminate()
            process.waitUntilExit()
            processes[index] = nil
        }

        /// Starts a stopped member again on its data directory and ports.
        func restart(_ index: Int) throws {
            guard processes[index]?.isRunning != true else { return }
            try launch(index)
        }

        /// Waits until a linearizable read through the running members (or the given ones) succeeds: after a
        /// member was killed, until the others elected a leader.
        func waitUntilHealthy(members only: [Int]? = nil, timeout: Double = 30) -> Bool {
            eventually(timeout: timeout) {
                (try? etcdctl(["get", "--prefix", "/livedefaults-health"], members: only)) != nil
            }
        }

        /// Runs etcdctl against the running members; its standard output, or an error with its messages.
        @discardableResult
        func etcdctl(_ arguments: [String], members only: [Int]? = nil, input: String? = nil) throws -> String {
            let chosen = (only ?? Array(members.indices)).map { members[$0].clientURL }.joined(separator: ",")
            let process = Process()
            process.executableURL = URL(fileURLWithPath: try Self.which("etcdctl"))
            process.arguments = ["--endpoints", chosen, "--dial-timeout", "1s", "--command-timeout", "3s"] + arguments
            if let tls {
                process.arguments! += [
                    "--cacert", tls.authority, "--cert", tls.clientCertificate, "--key", tls.clientKey,
                ]
            }
            process.environment = [
                "ETCDCTL_API": "3", "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin",
            ]
            if let input {
                // `etcdctl txn` reads its transaction from standard input.
                let pipe = Pipe()
                process.standardInput = pipe
                pipe.fileHandleForWriting.write(Data(input.utf8))
                try pipe.fileHandleForWriting.close()
            }
            // Standard output only: etcdctl's warnings on standard error must not end up in a value.
            let result = try runToEnd(process, errors: .separate)
            guard result.status == 0 else {
                throw ClusterError("etcdctl \(arguments.joined(separator: " ")): \(result.errors)")
            }
            return result.output
        }

        /// etcd's value of a key as text, or nil when etcd has no such key.
        func value(_ key: String) throws -> String? {
            let lines = try etcdctl(["get", key, "--print-value-only"])
            return lines.isEmpty ? nil : String(lines.dropLast())  // etcdctl adds a newline
        }

        /// The keys under a prefix.
        func keys(prefix: String) throws -> [String] {
            try etcdctl(["get", "--prefix", prefix, "--keys-only"]).split(separator: "\n").map(String.init)
        }

        /// The cluster's current revision, as the running members (or the given ones) answer it.
        func revision(members only: [Int]? = nil) throws -> Int64 {
            let json = try etcdctl(["get", "/livedefaults-revision", "-w", "json"], members: only)
            guard let data = json.data(using: .utf8),
                let object = try JSONSerialization.jsonObject(with: data) as? [String: Any],
                let header = object["header"] as? [String: Any], let revision = header["revision"] as? NSNumber
            else { throw ClusterError("no revision in \(json)") }
            return revision.int64Value
        }

        /// The last lines of every member's log, for a failure message.
        func logTail() -> String {
            members.map { member in
                let text =
                    (try? String(contentsOf: directory.appendingPathComponent("\(member.name).log"), encoding: .utf8))
                    ?? ""
                return "--- \(member.name)\n" + text.split(separator: "\n").suffix(10).joined(separator: "\n")
            }.joined(separator: "\n")
        }

        // MARK: Tools

        static func etcdPath() throws -> String { try which("etcd") }

        /// Whether Debian's etcd and etcdctl are installed (Scripts/install-dependencies installs them).
        static var isInstalled: Bool { (try? which("etcd")) != nil && (try? which("etcdctl")) != nil }
        /// Why the suites that need a cluster are skipped where etcd is missing (they run wherever the
        /// project's scripts ran: Scripts/test and CI install it).
        static let notInstalled: Comment =
            "etcd and etcdctl are not installed: Scripts/install-dependencies installs Debian's etcd-server and etcd-client"

        static func which(_ name: String) throws -> String {
            let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
            for directory in path.split(separator: ":") + ["/usr/bin", "/usr/local/bin"] {
                let candidate = "\(directory)/\(name)"
                if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            }
            throw ClusterError("\(name) is not installed: run Scripts/install-dependencies")
        }

        /// A loopback TCP port that was free a moment ago (the kernel's choice for port 0).
        static func freePort() throws -> Int {
            let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard descriptor >= 0 else { throw ClusterError("socket: \(errno)") }
            defer { close(descriptor) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = 0
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard bound == 0 else { throw ClusterError("bind: \(errno)") }
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let named = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
            }
            guard named == 0 else { throw ClusterError("getsockname: \(errno)") }
            return Int(UInt16(bigEndian: address.sin_port))
        }
    }

    /// A certificate authority made for one test, a server certificate for 127.0.0.1 and a client certificate,
    /// all signed by it (openssl, PEM files). The server certificate is good for client authentication too:
    /// etcd 3.4's JSON gateway connects to its own gRPC server with it, and with `--client-cert-auth` a
    /// server-only certificate makes every gateway request fail with 503 "connection closed".
    struct TLSFiles {
        let authority: String
        let serverCertificate: String
        let serverKey: String
        let clientCertificate: String
        let clientKey: String

        init(in directory: URL) throws {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
            authority = path("ca.pem")
            serverCertificate = path("server.pem")
            serverKey = path("server.key")
            clientCertificate = path("client.pem")
            clientKey = path("client.key")
            try Self.openssl([
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", path("ca.key"), "-out", authority, "-days",
                "2",
                "-subj", "/CN=LiveDefaults test CA",
            ])
            for (name, subject, extensions) in [
                ("server", "/CN=127.0.0.1", "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth"),
                ("client", "/CN=fleet", "extendedKeyUsage=clientAuth"),
            ] {
                try Self.openssl([
                    "req", "-newkey", "rsa:2048", "-nodes", "-keyout", path("\(name).key"), "-out", path("\(name).csr"),
                    "-subj", subject,
                ])
                try extensions.replacingOccurrences(of: "\\n", with: "\n")
                    .write(toFile: path("\(name).ext"), atomically: true, encoding: .utf8)
                try Self.openssl([
                    "x509", "-req", "-in", path("\(name).csr"), "-CA", authority, "-CAkey", path("ca.key"),
                    "-CAcreateserial",
                    "-out", path("\(name).pem"), "-days", "2", "-extfile", path("\(name).ext"),
                ])
            }
        }

        private static func openssl(_ arguments: [String]) throws {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: try EtcdCluster.which("openssl"))
            process.arguments = arguments
            let result = try runToEnd(process, errors: .merged)
            guard result.status == 0 else { throw ClusterError("openssl \(arguments.first ?? ""): \(result.output)") }
        }
    }

    /// Waits for a condition; fails the test with the agents' logs and the cluster's when it does not come true.
    func expectEventually(
        _ what: String, hosts: [FleetHost], cluster: EtcdCluster, timeout: Double = 30,
        sourceLocation: SourceLocation = #_sourceLocation, _ condition: () -> Bool
    ) async {
        let met = await eventually(timeout: timeout, condition)
        if !met {
            let logs = hosts.map { "--- agent \($0.name)\n\($0.log.suffix(3000))" }.joined(separator: "\n")
            Issue.record("\(what) did not happen\n\(logs)\n\(cluster.logTail())", sourceLocation: sourceLocation)
        }
    }

    struct ClusterError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
#endif
