#if Fleet
    import Foundation
    import LiveDefaults
    import TestProcesses

    #if canImport(Glibc)
        import Glibc
    #endif

    /// One simulated machine: its own defaults directory (`XDG_CONFIG_HOME`), its own `defaults sync` agent (a
    /// real process, the built `defaults` binary), and `defaults` commands run with its environment.
    final class FleetHost: @unchecked Sendable {
        // @unchecked: a host belongs to one test and is driven from one task at a time.

        let name: String
        let directory: String
        let logPath: String
        private var agent: Process?
        /// Every agent process started on this host.
        private var launched: [Process] = []

        static let tool = builtExecutable(named: "defaults")

        init(_ name: String) throws {
            self.name = name
            let root = FileManager.default.temporaryDirectory.appendingPathComponent(
                "fleet-\(name)-\(UUID().uuidString)")
            directory = root.appendingPathComponent("config").path
            logPath = root.appendingPathComponent("agent.log").path
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        }

        deinit {
            for process in launched where process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
            // Under `swift test --sanitize=thread` the agents are sanitized too, but report into their own logs:
            // pass a report on to this process's output, where CI looks for one.
            if log.contains("ThreadSanitizer") || log.contains("AddressSanitizer") {
                FileHandle.standardError.write(Data("agent \(name)'s log:\n\(log)\n".utf8))
            }
            try? FileManager.default.removeItem(atPath: (directory as NSString).deletingLastPathComponent)
        }

        var environment: [String: String] {
            var environment = ProcessInfo.processInfo.environment
            environment["XDG_CONFIG_HOME"] = directory
            // Published schemas: the host's own (never the real home's).
            environment["XDG_DATA_HOME"] = (directory as NSString).deletingLastPathComponent + "/data"
            environment["LIVEDEFAULTS_SCHEMA_PATH"] = nil
            return environment
        }

        /// Starts `defaults sync <domains> --etcd <endpoints> <options>` as this host's agent.
        func startAgent(_ domains: [String], etcd endpoints: String, options: [String] = ["--heartbeat", "0.2"]) throws
        {
            agent = try launchAgent(domains, etcd: endpoints, options: options)
        }

        /// Starts a further `defaults sync` on this host (another domain), logging into the same log; it is killed
        /// with the host unless the test stops it.
        func launchAgent(_ domains: [String], etcd endpoints: String, options: [String] = ["--heartbeat", "0.2"]) throws
            -> Process
        {
            let process = Process()
            process.executableURL = Self.tool
            // Each simulated machine registers under its own name unless the test names it.
            let host = options.contains("--host-id") ? [] : ["--host-id", name]
            process.arguments = ["sync"] + domains + ["--etcd", endpoints, "--verbose"] + host + options
            process.environment = environment
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
            handle.seekToEndOfFile()
            process.standardOutput = handle
            process.standardError = handle
            try process.run()
            launched.append(process)
            return process
        }

        var agentIsRunning: Bool { agent?.isRunning == true }

        /// Sends a signal to the agent and waits for it to exit; its exit status (or the signal that ended it).
        @discardableResult
        func stopAgent(signal: Int32 = SIGTERM) -> (status: Int32, reason: Process.TerminationReason)? {
            guard let agent else { return nil }
            kill(agent.processIdentifier, signal)
            agent.waitUntilExit()
            self.agent = nil
            return (agent.terminationStatus, agent.terminationReason)
        }

        /// Sends a signal to the running agent without waiting (SIGSTOP and SIGCONT freeze and thaw it).
        func signalAgent(_ signal: Int32) {
            guard let agent else { return }
            kill(agent.processIdentifier, signal)
        }

        /// Waits until each host's agent has registered its host and written its health — the writes an agent
        /// makes to etcd when it starts — so that a test counting etcd revisions counts its own changes only.
        static func waitUntilRegistered(_ hosts: [FleetHost], cluster: EtcdCluster) throws {
            let registered = eventually(timeout: 30) {
                guard let listed = try? hosts.first?.hosts(etcd: cluster.endpoints) else { return false }
                return hosts.allSatisfy { listed.hosts[$0.name]?["health"] != nil }
            }
            guard registered else {
                let logs = hosts.map { "--- agent \($0.name)\n\($0.log.suffix(2000))" }.joined(separator: "\n")
                throw ClusterError("the hosts did not register in etcd\n\(logs)")
            }
        }

        /// `defaults hosts --etcd <endpoints> --json`: its exit status and the live hosts by ID.
        func hosts(etcd endpoints: String) throws -> (status: Int32, hosts: [String: [String: Any]]) {
            let result = try defaultsOutput(["hosts", "--etcd", endpoints, "--json"])
            let list = (try? JSONSerialization.jsonObject(with: Data(result.output.utf8))) as? [[String: Any]] ?? []
            var byID: [String: [String: Any]] = [:]
            for host in list { if let id = host["id"] as? String { byID[id] = host } }
            return (result.status, byID)
        }

        /// `defaults sync --status <domains> --json` on this host: its exit status and the report of each domain.
        func status(_ domains: String...) throws -> (status: Int32, reports: [[String: Any]]) {
            let result = try defaultsOutput(["sync", "--status"] + domains + ["--json"])
            let reports = (try? JSONSerialization.jsonObject(with: Data(result.output.utf8))) as? [[String: Any]]
            return (result.status, reports ?? [])
        }

        /// `defaults history <arguments> --etcd <cluster> --json` on this host: its changes, newest first (revision,
        /// key, deleted, value, reason, rollout), and the revision etcd compacted to.
        func history(_ arguments: [String], cluster: EtcdCluster) throws -> (
            changes: [[String: Any]], compactRevision: Int?
        ) {
            let result = try defaultsOutput(["history"] + arguments + ["--etcd", cluster.endpoints, "--json"])
            guard result.status == 0,
                let object = try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any]
            else { throw ClusterError("defaults history failed (\(result.status)): \(result.errors)") }
            return (object["changes"] as? [[String: Any]] ?? [], object["compactRevision"] as? Int)
        }

        /// Runs the `defaults` command on this host with its standard output and standard error apart (for
        /// output a program parses).
        func defaultsOutput(_ arguments: [String]) throws -> ProcessOutput {
            let process = Process()
            process.executableURL = Self.tool
            process.arguments = arguments
            process.environment = environment
            return try runToEnd(process, errors: .separate)
        }

        /// The agent's log so far.
        var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

        /// Runs the `defaults` command on this host; its status and output (standard error included).
        @discardableResult
        func defaults(_ arguments: String...) throws -> (status: Int32, output: String) {
            try defaults(arguments)
        }

        /// The same, with the arguments in an array.
        @discardableResult
        func defaults(_ arguments: [String]) throws -> (status: Int32, output: String) {
            let process = Process()
            process.executableURL = Self.tool
            process.arguments = arguments
            process.environment = environment
            let result = try runToEnd(process, errors: .merged)
            return (result.status, result.output)
        }

        /// Runs the test helper with this host's directory as its first argument after the mode.
        func helper(_ mode: String, _ arguments: String...) throws -> Process {
            let process = try helperProcess([mode, directory] + arguments, environment: ["XDG_CONFIG_HOME": directory])
            try process.run()
            return process
        }

        /// The domain's file as it is on disk now (read afresh, not through a store).
        func contents(_ domain: String) -> [String: PropertyList] {
            guard let data = FileManager.default.contents(atPath: directory + "/" + domain + ".plist"),
                case .dictionary(let contents)? = try? PropertyList.decode(data).value
            else { return [:] }
            return contents
        }

        func value(_ domain: String, _ key: String) -> PropertyList? {
            contents(domain)[key]
        }

        /// A store on this host's files, as a program on that machine would have.
        func store(_ domain: String) throws -> Defaults {
            try Defaults(configuration: .rooted(at: directory, applicationDomain: domain))
        }
    }
#endif
