#if Fleet
    import Foundation
    import LiveDefaults
    import LiveDefaultsFleet
    import LiveDefaultsTesting
    import Testing
    import TestProcesses

    #if canImport(Glibc)
        import Glibc
    #endif

    /// Three hosts (agents with their own config directories), a three-member cluster, a writer per host making
    /// random sets and deletes on a shared key space, while faults run: agents paused (SIGSTOP/SIGCONT), agents
    /// killed and restarted, a member killed and restarted, quorum lost (two members stopped, then restarted).
    /// Afterwards every host's file and etcd must hold the same values within a bounded time, and every
    /// acknowledged write must be accounted for (``SoakChecker``).
    ///
    /// `LIVEDEFAULTS_SOAK_SECONDS` sets how long writers and faults run (45 s by default, what CI runs);
    /// `LIVEDEFAULTS_SOAK_SEED` the seed of writers and faults. The figures go to standard output.
    @Suite(
        "Fleet soak under faults", .blockingWork, .serialized, .timeLimit(.minutes(60)),
        .enabled(if: EtcdCluster.isInstalled, EtcdCluster.notInstalled)
    )
    struct FleetSoakTests {
        let domain = "com.example.soak"
        let keys = 24

        struct Faults {
            var paused = 0
            var killedAgents = 0
            var killedMembers = 0
            var quorumLosses = 0
        }

        /// One fault of a schedule: started, held a while (seconds, drawn from `hold`), ended, and counted.
        struct Fault {
            let counted: WritableKeyPath<Faults, Int>
            let hold: ClosedRange<Double>
            let start: () -> Void
            let end: () -> Void
        }

        /// Until a second before the deadline: a pause (seconds, drawn from `gap`), then the fault `choose` draws,
        /// and `after`. Real time: the faults are held against real etcd and real agents. The draws are made in
        /// the same order for a seed (gap, fault, hold), so a seed replays its schedule.
        static func schedule(
            until deadline: Date, seed: UInt64, gap: ClosedRange<Double>, after: () -> Void = {},
            choose: (inout SeededGenerator) -> Fault
        ) async -> Faults {
            func pause(_ range: ClosedRange<Double>, _ generator: inout SeededGenerator) async {
                await RealTime.pause(.milliseconds(Int64(Double.random(in: range, using: &generator) * 1000)))
            }
            var generator = SeededGenerator(seed: seed)
            var faults = Faults()
            while Date() < deadline.addingTimeInterval(-1) {
                await pause(gap, &generator)
                let fault = choose(&generator)
                fault.start()
                await pause(fault.hold, &generator)
                fault.end()
                faults[keyPath: fault.counted] += 1
                after()
            }
            return faults
        }

        @Test("writes under agent pauses and kills, member kills and quorum loss: convergence, no write lost")
        func soak() async throws {
            let environment = ProcessInfo.processInfo.environment
            let seconds = environment["LIVEDEFAULTS_SOAK_SECONDS"].flatMap(Double.init) ?? 45
            let seed =
                environment["LIVEDEFAULTS_SOAK_SEED"].flatMap(UInt64.init) ?? UInt64(Date().timeIntervalSince1970)
            print("soak: \(Int(seconds)) s, seed \(seed)")
            let cluster = try EtcdCluster.started()
            let hosts = try ["a", "b", "c"].map { try FleetHost($0) }
            let agentOptions = ["--heartbeat", "0.2"]
            for host in hosts { try host.startAgent([domain], etcd: cluster.endpoints, options: agentOptions) }

            let logs = hosts.map { $0.directory + "/../writer.log" }
            let writers = try hosts.enumerated().map { index, host in
                try host.helper(
                    "soak-writer", domain, host.name, "\(keys)", "\(seconds)", "\(seed &+ UInt64(index))", logs[index])
            }
            let began = Date()
            let deadline = began.addingTimeInterval(seconds)

            // Two fault schedules at once: one for the agents, one for the cluster.
            async let agentFaults = Self.schedule(until: deadline, seed: seed ^ 0xA6E7, gap: 0.5...2.5) { generator in
                let host = hosts[Int.random(in: 0..<hosts.count, using: &generator)]
                if Bool.random(using: &generator) {
                    return Fault(
                        counted: \.paused, hold: 0.3...3, start: { host.signalAgent(SIGSTOP) },
                        end: { host.signalAgent(SIGCONT) })
                }
                return Fault(
                    counted: \.killedAgents, hold: 0.2...2, start: { host.stopAgent(signal: SIGKILL) },
                    end: { try? host.startAgent([domain], etcd: cluster.endpoints, options: agentOptions) })
            }
            async let clusterFaults = Self.schedule(
                until: deadline, seed: seed ^ 0xE7CD, gap: 1...4, after: { _ = cluster.waitUntilHealthy(timeout: 30) }
            ) { generator in
                if Int.random(in: 0..<3, using: &generator) < 2 {
                    let member = Int.random(in: 0..<cluster.members.count, using: &generator)
                    return Fault(
                        counted: \.killedMembers, hold: 0.5...3, start: { cluster.kill(member) },
                        end: { try? cluster.restart(member) })
                }
                let first = Int.random(in: 0..<cluster.members.count, using: &generator)
                let second = (first + 1) % cluster.members.count
                return Fault(
                    counted: \.quorumLosses, hold: 1...3,
                    start: {
                        cluster.stopMember(first)
                        cluster.stopMember(second)
                    },
                    end: {
                        try? cluster.restart(first)
                        try? cluster.restart(second)
                    })
            }
            let (agents, members) = await (agentFaults, clusterFaults)
            for writer in writers {
                writer.waitUntilExit()
                #expect(writer.terminationStatus == 0)
            }
            // Everything runs again; from here, convergence is timed.
            try cluster.start()
            for host in hosts where !host.agentIsRunning {
                try host.startAgent([domain], etcd: cluster.endpoints, options: agentOptions)
            }
            let quiet = Date()
            var etcdValues: [String: String] = [:]
            let converged = await eventually(timeout: 120) {
                guard let values = try? Self.etcdValues(cluster, domain: domain) else { return false }
                etcdValues = values
                return hosts.allSatisfy { Self.strings($0.contents(domain)) == values }
            }
            let convergence = Date().timeIntervalSince(quiet)

            let history = try await FleetHistory.read(
                domain: domain, etcd: try EtcdConnection(endpoints: cluster.endpoints))
            let revisions = history.changes.reversed().map { change in
                SoakChecker.Revision(
                    revision: change.revision, key: change.key,
                    value: change.value.flatMap { if case .string(let text) = $0 { text } else { nil } })
            }
            var operations: [SoakChecker.Operation] = []
            for (index, host) in hosts.enumerated() {
                let text = (try? String(contentsOfFile: logs[index], encoding: .utf8)) ?? ""
                operations += SoakChecker.operations(host: host.name, log: text)
            }
            let files = Dictionary(uniqueKeysWithValues: hosts.map { ($0.name, Self.strings($0.contents(domain))) })
            let verdict = SoakChecker.check(operations: operations, history: revisions, etcd: etcdValues, files: files)
            // Pushes whose answer was lost and which etcd applied all the same, known as the host's own when they
            // came back (Docs/Fleet.md, "A lost answer is no conflict").
            let ownPushes = hosts.reduce(0) { $0 + $1.log.components(separatedBy: "is this host's own push").count - 1 }

            print(
                """
                soak: \(operations.count) acknowledged operations by 3 writers on \(keys) keys in \(Int(seconds)) s \
                (\(history.changes.count) etcd revisions, \(ownPushes) pushes that lost their answer came back); faults: \(agents.paused) agent pauses, \
                \(agents.killedAgents) agent kills, \(members.killedMembers) member kills, \
                \(members.quorumLosses) quorum losses; converged: \(converged) in \
                \(String(format: "%.2f", convergence)) s; writes: \(verdict.reachedEtcd) reached etcd, \
                \(verdict.replacedOnHost) replaced on their host first, \(verdict.lostConflicts) lost a conflict \
                (etcd won); lost: \(verdict.lost.count); divergent keys: \(verdict.divergent.count)
                """)
            #expect(converged, "hosts and etcd differ after 120 s:\n\(verdict.divergent.joined(separator: "\n"))")
            #expect(verdict.lost.isEmpty, "\(verdict.lost.prefix(20).joined(separator: "\n"))")
            #expect(operations.count > Int(seconds) * 3, "the writers barely wrote")
            #expect(agents.paused + agents.killedAgents > 0 && members.killedMembers + members.quorumLosses > 0)
            if !converged || !verdict.lost.isEmpty {
                for host in hosts { print("--- agent \(host.name)\n\(host.log.suffix(4000))") }
            }
            for host in hosts { host.stopAgent() }
        }

        /// The domain's values in etcd as strings (the writers set strings only).
        static func etcdValues(_ cluster: EtcdCluster, domain: String) throws -> [String: String] {
            let json = try cluster.etcdctl(["get", "--prefix", "/livedefaults/\(domain)/", "-w", "json"])
            guard let object = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any] else {
                throw ClusterError("not JSON: \(json.prefix(200))")
            }
            var values: [String: String] = [:]
            for kv in object["kvs"] as? [[String: Any]] ?? [] {
                guard let key = (kv["key"] as? String).flatMap({ Data(base64Encoded: $0) }),
                    let name = String(data: key, encoding: .utf8)?.split(separator: "/").last,
                    let value = (kv["value"] as? String).flatMap({ Data(base64Encoded: $0) }),
                    case .string(let text) = try PropertyList.decode(value).value
                else { continue }
                values[String(name)] = text
            }
            return values
        }

        static func strings(_ contents: [String: PropertyList]) -> [String: String] {
            contents.compactMapValues { if case .string(let text) = $0 { text } else { nil } }
        }
    }
#endif
