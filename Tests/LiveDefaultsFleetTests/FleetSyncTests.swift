#if Fleet
    import Foundation
    import LiveDefaults
    import Testing
    import TestProcesses

    @testable import LiveDefaultsFleet

    #if canImport(Glibc)
        import Glibc
    #endif

    /// `defaults sync` agents, one per simulated host, against a real three-member etcd cluster on loopback.
    /// Serialized: each test runs its own cluster and agents, and three etcd members per test are enough for
    /// two cores.
    @Suite(
        "Fleet sync through a real etcd cluster", .blockingWork, .serialized, .timeLimit(.minutes(3)),
        .enabled(if: EtcdCluster.isInstalled, EtcdCluster.notInstalled)
    )
    struct FleetSyncTests {
        let domain = "com.example.api"
        var etcdKey: String { "/livedefaults/\(domain)/" }

        /// A started cluster and two hosts (A and B unless named), each with an agent mirroring ``domain``; the
        /// first host's agent takes `firstOptions`.
        func twoHostsInStep(
            _ first: String = "a", _ second: String = "b", firstOptions: [String] = ["--heartbeat", "0.2"]
        ) throws -> (EtcdCluster, FleetHost, FleetHost) {
            let cluster = try EtcdCluster.started()
            let a = try FleetHost(first)
            let b = try FleetHost(second)
            try a.startAgent([domain], etcd: cluster.endpoints, options: firstOptions)
            try b.startAgent([domain], etcd: cluster.endpoints)
            try FleetHost.waitUntilRegistered([a, b], cluster: cluster)
            return (cluster, a, b)
        }

        @Test("a write on host A reaches an observer on host C, and nothing echoes back")
        func writeReachesObserver() async throws {
            let cluster = try EtcdCluster.started()
            let a = try FleetHost("a")
            let c = try FleetHost("c")
            try a.startAgent([domain], etcd: cluster.endpoints)
            try c.startAgent([domain], etcd: cluster.endpoints)
            try FleetHost.waitUntilRegistered([a, c], cluster: cluster)
            let observer = try c.store(domain)
            #expect(observer.value(forKey: "RateLimit") == nil)

            #expect(try a.defaults("write", domain, "RateLimit", "-int", "50").status == 0)
            await expectEventually("RateLimit = 50 on host C", hosts: [a, c], cluster: cluster) {
                observer.value(forKey: "RateLimit") == .integer(50)
            }
            // The value in etcd is an XML property list other tools can read.
            let stored = try #require(try cluster.value(etcdKey + "RateLimit"))
            #expect(try PropertyList.decode(Data(stored.utf8)).value == .integer(50))
            #expect(stored.contains("<integer>50</integer>"))

            // No echo: once both agents agree, each write costs etcd one revision. Proved by a round trip
            // rather than a wait: a marker from A reaches C, then one from C reaches A; an echo of anything
            // C applied before would have been pushed before C's own marker.
            let revision = try cluster.revision()
            #expect(try a.defaults("write", domain, "MarkerA", "-int", "1").status == 0)
            await expectEventually("host A's marker on host C", hosts: [a, c], cluster: cluster) {
                observer.value(forKey: "MarkerA") == .integer(1)
            }
            #expect(try c.defaults("write", domain, "MarkerC", "-int", "1").status == 0)
            await expectEventually("host C's marker on host A", hosts: [a, c], cluster: cluster) {
                a.value(domain, "MarkerC") == .integer(1)
            }
            #expect(try cluster.revision() == revision + 2, "two writes, two revisions: no echo")

            // Each host's change log says who: on A, the command's own write; on C, the agent's, at the etcd
            // revision it applied.
            let logged = { (host: FleetHost) throws -> [String: Any]? in
                let output = try host.defaultsOutput(["log", domain, "MarkerA", "--json"]).output
                let object = try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any]
                return (object?["changes"] as? [[String: Any]])?.first
            }
            let onA = try #require(try logged(a))
            #expect(onA["origin"] as? String == "local" && onA["executable"] as? String == "defaults", "\(onA)")
            let onC = try #require(try logged(c))
            #expect(onC["origin"] as? String == "fleet" && onC["executable"] as? String == "defaults-sync", "\(onC)")
            #expect(onC["revision"] as? Int == Int(revision + 1) && onC["new"] as? Int == 1, "\(onC)")

            #expect(a.stopAgent()?.status == 0)
            #expect(c.stopAgent()?.status == 0)
        }

        @Test("host A commits 300 transactions of A = B: host C's snapshot stream never sees A ≠ B")
        func transactionsArriveWhole() async throws {
            let (cluster, a, c) = try twoHostsInStep("a", "c")
            let observer = try c.store(domain)
            let first = DefaultsKey<Int>("PairA", default: 0)
            let second = DefaultsKey<Int>("PairB", default: 0)
            let count = 300
            // Subscribed before the writer starts: a task scheduled late on a busy machine would otherwise subscribe
            // after the versions arrived and see none.
            let snapshots = observer.updates(of: first, second, emitCurrentValue: false).makeAsyncIterator()
            let watcher = Task {
                var seen = 0
                var mixed = 0
                var snapshots = snapshots
                while let snapshot = await snapshots.next() {
                    seen += 1
                    if snapshot[first] != snapshot[second] { mixed += 1 }
                    if snapshot[first] == count && snapshot[second] == count { break }
                }
                return (seen, mixed)
            }
            let writer = try helperProcess(
                ["tx-pairs", a.directory, domain, "\(count)"], environment: ["XDG_CONFIG_HOME": a.directory])
            let input = Pipe()
            writer.standardInput = input
            writer.standardOutput = Pipe()
            try writer.run()
            try input.fileHandleForWriting.write(contentsOf: Data("go\n".utf8))
            writer.waitUntilExit()
            #expect(writer.terminationStatus == 0)
            await expectEventually("PairA = PairB = \(count) on host C", hosts: [a, c], cluster: cluster) {
                observer.snapshot(of: first, second).values == ["PairA": .integer(count), "PairB": .integer(count)]
            }
            watcher.cancel()
            let (seen, mixed) = await watcher.value
            #expect(seen > 1, "host C saw \(seen) versions")
            #expect(mixed == 0, "\(mixed) of \(seen) snapshots on host C mixed two transactions")
            #expect(a.stopAgent()?.status == 0)
            #expect(c.stopAgent()?.status == 0)
        }

        @Test("a merge is one etcd revision up to --max-txn-ops keys; a larger one is pushed in parts")
        func transactionSizeLimit() async throws {
            let (cluster, a, c) = try twoHostsInStep(
                "a", "c", firstOptions: ["--heartbeat", "0.2", "--max-txn-ops", "4"])
            var revision = try cluster.revision()
            #expect(try a.defaults("merge", domain, "{ K1 = a; K2 = a; K3 = a; K4 = a; }").status == 0)
            await expectEventually("four keys on host C", hosts: [a, c], cluster: cluster) {
                c.value(domain, "K4") == "a" && c.value(domain, "K1") == "a"
            }
            #expect(try cluster.revision() == revision + 1, "four keys, one transaction")
            revision = try cluster.revision()
            let ten = (1...10).map { "K\($0) = b;" }.joined(separator: " ")
            #expect(try a.defaults("merge", domain, "{ \(ten) }").status == 0)
            await expectEventually("ten keys on host C", hosts: [a, c], cluster: cluster) {
                (1...10).allSatisfy { c.value(domain, "K\($0)") == "b" }
            }
            #expect(try cluster.revision() == revision + 3, "ten keys at most four a transaction: three")
            let bad = try a.defaultsOutput(["sync", domain, "--etcd", cluster.endpoints, "--max-txn-ops", "0"])
            #expect(bad.status == 1 && bad.errors.contains("--max-txn-ops takes a positive count"))
            #expect(a.stopAgent()?.status == 0)
            #expect(c.stopAgent()?.status == 0)
        }

        @Test("concurrent writers on three hosts: every host ends with every key")
        func concurrentWritersLoseNothing() async throws {
            let cluster = try EtcdCluster.started()
            let hosts = try ["a", "b", "c"].map { try FleetHost($0) }
            for host in hosts { try host.startAgent([domain], etcd: cluster.endpoints) }
            // Each host writes 100 keys of its own in a burst while its agent applies the others' keys to the
            // same file: the locked merge must keep every one.
            let writers = try hosts.map { host in try host.helper("write-keys", domain, "\(host.name)-", "100") }
            for writer in writers {
                writer.waitUntilExit()
                #expect(writer.terminationStatus == 0)
            }
            var expected: [String: PropertyList] = [:]
            for host in hosts { for index in 0..<100 { expected["\(host.name)-\(index)"] = .integer(index) } }
            for host in hosts {
                await expectEventually("all 300 keys on host \(host.name)", hosts: hosts, cluster: cluster) {
                    host.contents(domain) == expected
                }
            }
            #expect(try cluster.keys(prefix: etcdKey).count == 300)
            for host in hosts { #expect(host.stopAgent()?.status == 0) }
        }

        @Test("a host's published schema: etcd's values it refuses are not applied there, and none is pushed from it")
        func schemaIsHonoured() async throws {
            let (cluster, a, b) = try twoHostsInStep()
            // Host A runs the program that published the schema (RateLimit: an integer in 1…100000).
            #expect(try runHelper(["publish-schema", domain], environment: a.environment).status == 0)
            try a.defaults("write", domain, "RateLimit", "-int", "250")
            await expectEventually("RateLimit 250 on host B", hosts: [a, b], cluster: cluster) {
                b.value(domain, "RateLimit") == .integer(250)
            }
            // Another writer puts a value against the schema into etcd, then a marker: A handles events in order,
            // so once it has the marker it has decided on RateLimit.
            try cluster.etcdctl(["put", etcdKey + "RateLimit", "<plist version=\"1.0\"><string>fifty</string></plist>"])
            try cluster.etcdctl(["put", etcdKey + "Marker", "<plist version=\"1.0\"><integer>1</integer></plist>"])
            await expectEventually("the marker on both hosts, fifty on host B", hosts: [a, b], cluster: cluster) {
                a.value(domain, "Marker") == .integer(1) && b.value(domain, "Marker") == .integer(1)
                    && b.value(domain, "RateLimit") == .string("fifty")
            }
            #expect(a.value(domain, "RateLimit") == .integer(250), "host A kept its valid value")
            #expect(a.log.contains("refused by the local schema"))
            // A valid value from etcd is taken again.
            try cluster.etcdctl(["put", etcdKey + "RateLimit", "<plist version=\"1.0\"><integer>300</integer></plist>"])
            await expectEventually("300 on host A", hosts: [a, b], cluster: cluster) {
                a.value(domain, "RateLimit") == .integer(300)
            }
            // A refused value written on host A anyway (--no-validate) is not pushed; a valid key after it is.
            #expect(try a.defaults("write", "--no-validate", domain, "RateLimit", "-int", "0").status == 0)
            #expect(try a.defaults("write", domain, "Theme", "-string", "dark").status == 0)
            await expectEventually("Theme in etcd", hosts: [a, b], cluster: cluster) {
                (try? cluster.value(etcdKey + "Theme"))?.contains("dark") == true
            }
            #expect(try cluster.value(etcdKey + "RateLimit")?.contains("300") == true, "etcd keeps the valid value")
            #expect(b.value(domain, "RateLimit") == .integer(300))
            #expect(a.log.contains("is not pushed to etcd: the local schema refuses it"))
        }

        @Test(
            "a temporary change made on host A is undone once for the fleet: one revert, pushed by host A; history says why"
        )
        func temporaryChangeUndoneOnce() async throws {
            let (cluster, a, b) = try twoHostsInStep()
            try a.defaults("write", domain, "RateLimit", "-int", "100")
            await expectEventually("RateLimit = 100 on host B", hosts: [a, b], cluster: cluster) {
                b.value(domain, "RateLimit") == .integer(100)
            }
            #expect(
                try a.defaults("write", domain, "RateLimit", "-int", "50", "--for", "3s", "--reason", "incident 4211")
                    .status == 0)
            await expectEventually("RateLimit = 50 on host B", hosts: [a, b], cluster: cluster) {
                b.value(domain, "RateLimit") == .integer(50)
            }
            let revision = try cluster.revision()
            // Only host A holds the revert: host B applied the fleet's value, as any other.
            let pending = { (host: FleetHost) in
                FileManager.default.fileExists(atPath: "\(host.directory)/.\(self.domain).plist.reverts")
            }
            #expect(pending(a) && !pending(b))
            // Host A's agent has the domain open: it undoes the change at its end and pushes it like any change.
            await expectEventually("RateLimit back to 100 on host B", hosts: [a, b], cluster: cluster) {
                b.value(domain, "RateLimit") == .integer(100)
            }
            #expect(!pending(a))
            // One revision for the revert: a marker from B reaching A comes right after it (no second revert).
            #expect(try b.defaults("write", domain, "MarkerB", "-int", "1").status == 0)
            await expectEventually("host B's marker on host A", hosts: [a, b], cluster: cluster) {
                a.value(domain, "MarkerB") == .integer(1)
            }
            #expect(try cluster.revision() == revision + 2, "the revert and the marker")
            #expect(
                try PropertyList.decode(Data(try #require(try cluster.value(etcdKey + "RateLimit")).utf8)).value == 100)
            // The fleet's history says why, from any host: each reason shares its change's revision.
            let history = try b.defaultsOutput(["history", domain, "--etcd", cluster.endpoints])
            let lines = history.output.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            #expect(lines.count == 4, "\(history.output)\(history.errors)")
            #expect(lines.first?.hasPrefix("\(revision + 2)  MarkerB    1") == true, "\(lines)")
            #expect(
                lines.dropFirst().first?.hasSuffix("RateLimit  100  — temporary change expired: incident 4211") == true,
                "\(lines)")
            #expect(lines.dropFirst(2).first?.hasSuffix("RateLimit  50  — incident 4211") == true, "\(lines)")
            #expect(lines.last?.hasSuffix("RateLimit  100") == true, "\(lines)")
            let reasons = try b.history([domain, "RateLimit"], cluster: cluster).changes.map { $0["reason"] as? String }
            #expect(reasons == ["temporary change expired: incident 4211", "incident 4211", nil])
        }

        @Test("a temporary change whose host is down at its end: undone when its agent starts again, once, with why")
        func temporaryChangeOfHostDown() async throws {
            let (cluster, a, b) = try twoHostsInStep()
            try a.defaults("write", domain, "RateLimit", "-int", "100")
            await expectEventually("RateLimit = 100 on host B", hosts: [a, b], cluster: cluster) {
                b.value(domain, "RateLimit") == .integer(100)
            }
            let made = try a.defaults("write", domain, "RateLimit", "-int", "50", "--for", "3s", "--reason", "canary")
            // "temporary for 3s, until <ISO 8601 time>: then …"
            let until = made.output.split(separator: " ").dropFirst(4).first.map { String($0.dropLast()) } ?? ""
            let end = try #require(try? Date(until, strategy: .iso8601), "\(made.output)")
            await expectEventually("RateLimit = 50 on host B", hosts: [a, b], cluster: cluster) {
                b.value(domain, "RateLimit") == .integer(50)
            }
            // Host A goes down before the end: nobody there has the domain open when it passes.
            #expect(a.stopAgent()?.status == 0)
            let pending = "\(a.directory)/.\(domain).plist.reverts"
            #expect(FileManager.default.fileExists(atPath: pending), "stopped before the change's end")
            await expectEventually("the change's end passed", hosts: [a, b], cluster: cluster) { Date() > end + 1 }
            #expect(b.value(domain, "RateLimit") == .integer(50), "host B keeps no revert of its own")
            // Back up: the agent's first look at the domain undoes the change, and pushes it as any local change.
            try a.startAgent([domain], etcd: cluster.endpoints)
            await expectEventually("RateLimit back to 100 on host B", hosts: [a, b], cluster: cluster) {
                b.value(domain, "RateLimit") == .integer(100)
            }
            #expect(!FileManager.default.fileExists(atPath: pending))
            let reasons = try b.history([domain, "RateLimit"], cluster: cluster).changes.map { $0["reason"] as? String }
            // One revert for the fleet (the agent's restart registers the host too, so revisions are not counted).
            #expect(reasons == ["temporary change expired: canary", "canary", nil])
            #expect(a.stopAgent()?.status == 0)
        }

        @Test("deletes propagate both ways: defaults delete on one host, etcdctl del in etcd")
        func deletesPropagate() async throws {
            let (cluster, a, b) = try twoHostsInStep()
            try a.defaults("write", domain, "Keep", "yes")
            try a.defaults("write", domain, "Gone", "soon")
            try a.defaults("write", domain, "Removed", "in etcd")
            await expectEventually("three keys on host B", hosts: [a, b], cluster: cluster) {
                b.contents(domain).count == 3
            }

            #expect(try b.defaults("delete", domain, "Gone").status == 0)
            await expectEventually("Gone deleted on host A", hosts: [a, b], cluster: cluster) {
                a.value(domain, "Gone") == nil
            }
            #expect(try cluster.value(etcdKey + "Gone") == nil)

            try cluster.etcdctl(["del", etcdKey + "Removed"])
            await expectEventually("Removed deleted on both hosts", hosts: [a, b], cluster: cluster) {
                a.value(domain, "Removed") == nil && b.value(domain, "Removed") == nil
            }
            #expect(a.contents(domain) == ["Keep": .string("yes")])
            #expect(b.contents(domain) == ["Keep": .string("yes")])
        }

        @Test(
            "an agent killed with SIGKILL catches up when restarted; its offline edits are pushed unless etcd changed the key"
        )
        func killedAgentCatchesUp() async throws {
            let (cluster, a, b) = try twoHostsInStep()
            for key in ["Stays", "Deleted", "Contested", "Changed"] { try b.defaults("write", domain, key, "v1") }
            await expectEventually("four keys on host A", hosts: [a, b], cluster: cluster) {
                a.contents(domain).count == 4
            }

            #expect(a.stopAgent(signal: SIGKILL)?.reason == .uncaughtSignal)
            // While A's agent is away: the fleet changes and deletes keys, and A edits its file.
            try b.defaults("write", domain, "Changed", "v2")
            try b.defaults("write", domain, "Contested", "fleet")
            try b.defaults("delete", domain, "Deleted")
            try b.defaults("write", domain, "New", "from b")
            await expectEventually("B's changes in etcd", hosts: [a, b], cluster: cluster) {
                (try? cluster.keys(prefix: etcdKey).count) == 4 && (try? cluster.value(etcdKey + "New")) != nil
            }
            try a.defaults("write", domain, "Offline", "from a")
            try a.defaults("write", domain, "Contested", "local")

            try a.startAgent([domain], etcd: cluster.endpoints)
            let expected: [String: PropertyList] = [
                "Stays": .string("v1"), "Changed": .string("v2"), "Contested": .string("fleet"),
                "New": .string("from b"),
                "Offline": .string("from a"),
            ]
            await expectEventually("both hosts reconciled", hosts: [a, b], cluster: cluster) {
                a.contents(domain) == expected && b.contents(domain) == expected
            }
            #expect(a.log.contains("conflict on \(domain) Contested"))
        }

        @Test(
            "an agent killed before its push's answer: its value back from etcd is no conflict, the local change since is pushed"
        )
        func killedBeforeTheAnswer() async throws {
            let (cluster, a, b) = try twoHostsInStep()
            for key in ["Mine", "Theirs"] { try b.defaults("write", domain, key, "v1") }
            await expectEventually("both keys on host A", hosts: [a, b], cluster: cluster) {
                a.contents(domain).count == 2
            }
            #expect(a.stopAgent(signal: SIGKILL)?.reason == .uncaughtSignal)
            // What A's agent left when it was killed waiting for the answer to its push of Mine = a-2: the value
            // in etcd, in its state as in doubt. Beside it, B's change of Theirs, which A never pushed.
            for (key, value) in ["Mine": "a-2", "Theirs": "b-2"] {
                let bytes = try FleetLayout.encode(.string(value))
                try cluster.etcdctl(["put", etcdKey + key, String(decoding: bytes, as: UTF8.self)])
            }
            do {
                let file = try MirrorStateFile(directory: a.directory + "/.livedefaults-sync", domain: domain)
                var state = try #require(file.load(prefix: "/livedefaults/"))
                state.pushing(.string("a-2"), forKey: "Mine")
                try file.save(state)
            }
            // A's programs went on writing while the agent was away.
            try a.defaults("write", domain, "Mine", "a-3")
            try a.defaults("write", domain, "Theirs", "a-3")

            try a.startAgent([domain], etcd: cluster.endpoints)
            let expected: [String: PropertyList] = ["Mine": .string("a-3"), "Theirs": .string("b-2")]
            await expectEventually("A's later change pushed, B's change taken", hosts: [a, b], cluster: cluster) {
                a.contents(domain) == expected && b.contents(domain) == expected
            }
            #expect(a.log.contains("\(domain) Mine: etcd's value is this host's own push"))
            #expect(!a.log.contains("conflict on \(domain) Mine"))
            #expect(a.log.contains("conflict on \(domain) Theirs"))
        }

        @Test("a corrupt local file is not taken for deletions: the fleet keeps its keys and the file is restored")
        func corruptLocalFile() async throws {
            let (cluster, a, b) = try twoHostsInStep()
            for key in ["One", "Two", "Three"] { try a.defaults("write", domain, key, key.lowercased()) }
            await expectEventually("three keys on host B", hosts: [a, b], cluster: cluster) {
                b.contents(domain).count == 3
            }

            // Garbage where B's file was (renamed into place, as an editor saves).
            let path = b.directory + "/\(domain).plist"
            try Data("<plist><dict><key>One".utf8).write(to: URL(fileURLWithPath: path + ".tmp"))
            #expect(rename(path + ".tmp", path) == 0)
            let expected: [String: PropertyList] = [
                "One": .string("one"), "Two": .string("two"), "Three": .string("three"),
            ]
            await expectEventually("B's file restored from etcd", hosts: [a, b], cluster: cluster) {
                b.contents(domain) == expected
            }
            #expect(try cluster.keys(prefix: etcdKey).count == 3)
            #expect(a.contents(domain) == expected)
            #expect(b.log.contains("cannot be read"))
            let kept = try FileManager.default.contentsOfDirectory(atPath: b.directory).filter {
                $0.contains(".corrupt-")
            }
            #expect(kept.count == 1, "the corrupt file is kept aside for a person to look at")
        }

        @Test("a value etcd refuses (over its request limit) stays local; the keys beside it go on")
        func refusedValue() async throws {
            let (cluster, a, b) = try twoHostsInStep()
            // Written together, in one burst: one transaction first, then key by key.
            let store = try a.store(domain)
            store.set(Data(repeating: 7, count: 2 << 20), forKey: "Huge")  // 2 MiB; etcd's default limit is 1.5 MiB
            store.set("small", forKey: "Small")
            #expect(store.synchronize())
            await expectEventually("Small on host B", hosts: [a, b], cluster: cluster) {
                b.value(domain, "Small") != nil
            }
            await expectEventually("the refusal logged", hosts: [a], cluster: cluster) {
                a.log.contains("etcd refused")
            }
            #expect(b.value(domain, "Huge") == nil)
            #expect(a.agentIsRunning)
            try a.defaults("write", domain, "After", "1")
            await expectEventually("a later write on host B", hosts: [a, b], cluster: cluster) {
                b.value(domain, "After") != nil
            }
        }

        @Test("one etcd member killed: the agents fail over to the others")
        func memberKilled() async throws {
            let cluster = try EtcdCluster.started()
            let a = try FleetHost("a")
            let b = try FleetHost("b")
            // Both agents start on member 0.
            try a.startAgent([domain], etcd: cluster.endpoints)
            try b.startAgent([domain], etcd: cluster.endpoints)
            try a.defaults("write", domain, "Before", "1")
            await expectEventually("Before on host B", hosts: [a, b], cluster: cluster) {
                b.value(domain, "Before") != nil
            }

            cluster.kill(0)
            try a.defaults("write", domain, "After", "2")
            await expectEventually("After on host B with member 0 dead", hosts: [a, b], cluster: cluster) {
                b.value(domain, "After") == .string("2")
            }
            try b.defaults("write", domain, "Back", "3")
            await expectEventually("Back on host A", hosts: [a, b], cluster: cluster) {
                a.value(domain, "Back") == .string("3")
            }
            #expect(a.agentIsRunning && b.agentIsRunning)
        }

        @Test(
            "etcd unreachable at start: the agent retries, local reads and writes work, and the write reaches etcd later"
        )
        func unreachableAtStart() async throws {
            let cluster = try EtcdCluster()  // ports chosen, nothing listening yet
            let a = try FleetHost("a")
            try a.startAgent([domain], etcd: cluster.endpoints)
            #expect(try a.defaults("write", domain, "Offline", "-int", "7").status == 0)
            #expect(try a.defaults("read", domain, "Offline").output == "7\n")
            // The agent tried, failed, and keeps running.
            #expect(await eventually(timeout: 30) { a.log.contains("cannot reach etcd for \(domain), retrying") })
            #expect(a.agentIsRunning)

            try cluster.start()
            await expectEventually("the offline write in etcd", hosts: [a], cluster: cluster) {
                (try? cluster.value(etcdKey + "Offline"))?.contains("<integer>7</integer>") == true
            }
            let b = try FleetHost("b")
            try b.startAgent([domain], etcd: cluster.endpoints)
            await expectEventually("Offline on host B", hosts: [a, b], cluster: cluster) {
                b.value(domain, "Offline") == .integer(7)
            }
            #expect(a.stopAgent()?.status == 0)
        }

        @Test("a partition that heals: two members stopped and restarted, the writes made meanwhile arrive")
        func partitionHeals() async throws {
            let (cluster, a, b) = try twoHostsInStep()
            try a.defaults("write", domain, "Round", "-int", "1")
            await expectEventually("Round 1 on host B", hosts: [a, b], cluster: cluster) {
                b.value(domain, "Round") == .integer(1)
            }

            // Members 1 and 2 go away: member 0 alone has no quorum, so etcd takes no writes.
            cluster.stopMember(1)
            cluster.stopMember(2)
            #expect(try a.defaults("write", domain, "Round", "-int", "2").status == 0)
            #expect(try b.defaults("write", domain, "During", "partition").status == 0)
            // (No "nothing crossed" check here: no event would prove that the agents had had their chance.
            // What the partition must not do is lose the writes: they arrive once the quorum is back.)
            #expect(a.agentIsRunning && b.agentIsRunning)

            try cluster.restart(1)
            try cluster.restart(2)
            await expectEventually(
                "the partition's writes on both hosts", hosts: [a, b], cluster: cluster, timeout: 60
            ) {
                b.value(domain, "Round") == .integer(2) && a.value(domain, "During") == .string("partition")
            }
        }

        @Test("a watch whose revision was compacted away resynchronizes in full")
        func compactedWatchResyncs() async throws {
            let cluster = try EtcdCluster.started()
            let b = try FleetHost("b")
            // B talks to member 0 only, so that it is cut off while member 0 is down.
            try b.startAgent([domain], etcd: cluster.members[0].clientURL)
            try cluster.etcdctl(["put", etcdKey + "Version", "<plist version=\"1.0\"><integer>1</integer></plist>"])
            await expectEventually("Version 1 on host B", hosts: [b], cluster: cluster) {
                b.value(domain, "Version") == .integer(1)
            }

            cluster.kill(0)
            #expect(cluster.waitUntilHealthy(members: [1, 2]), "members 1 and 2 elect a leader")
            for version in 2...5 {
                try cluster.etcdctl(
                    ["put", etcdKey + "Version", "<plist version=\"1.0\"><integer>\(version)</integer></plist>"],
                    members: [1, 2])
            }
            try cluster.etcdctl(["put", etcdKey + "Text", "\"plain words\""], members: [1, 2])
            let current = try cluster.revision(members: [1, 2])
            try cluster.etcdctl(["compact", String(current)], members: [1, 2])
            try cluster.restart(0)

            await expectEventually("Version 5 on host B after compaction", hosts: [b], cluster: cluster, timeout: 60) {
                b.value(domain, "Version") == .integer(5) && b.value(domain, "Text") == .string("plain words")
            }
            #expect(b.log.contains("compacted"))
        }

        @Test("several agents on one machine for different domains; a second agent for the same domain is refused")
        func agentsPerDomain() async throws {
            let cluster = try EtcdCluster.started()
            let a = try FleetHost("a")
            let b = try FleetHost("b")
            try a.startAgent([domain], etcd: cluster.endpoints)
            let other = try a.launchAgent(["com.example.worker"], etcd: cluster.endpoints)
            try b.startAgent([domain, "com.example.worker"], etcd: cluster.endpoints)

            try b.defaults("write", domain, "Api", "1")
            try b.defaults("write", "com.example.worker", "Worker", "2")
            await expectEventually("both domains on host A", hosts: [a, b], cluster: cluster) {
                a.value(domain, "Api") == .string("1") && a.value("com.example.worker", "Worker") == .string("2")
            }
            let duplicate = try a.defaults("sync", domain, "--etcd", cluster.endpoints)
            #expect(duplicate.status == 1)
            #expect(duplicate.output.contains("another agent is mirroring \(domain)"))
            other.terminate()
            other.waitUntilExit()
            #expect(other.terminationStatus == 0)
        }

        @Test("etcd's authentication: --user passes credentials; without them the agent cannot sync")
        func authentication() async throws {
            let cluster = try EtcdCluster.started()
            try cluster.etcdctl(["user", "add", "root:rootpw"])
            try cluster.etcdctl(["user", "grant-role", "root", "root"])
            try cluster.etcdctl(["user", "add", "fleet:s3cret:with:colons"])
            try cluster.etcdctl(["role", "add", "fleet"])
            try cluster.etcdctl(["role", "grant-permission", "fleet", "--prefix=true", "readwrite", "/livedefaults/"])
            try cluster.etcdctl(["user", "grant-role", "fleet", "fleet"])
            try cluster.etcdctl(["auth", "enable"])

            let a = try FleetHost("a")
            let b = try FleetHost("b")
            try a.startAgent([domain], etcd: cluster.endpoints, options: ["--user", "fleet:s3cret:with:colons"])
            try b.startAgent([domain], etcd: cluster.endpoints)  // no credentials
            try a.defaults("write", domain, "Secret", "-int", "1")
            await expectEventually("the write in etcd", hosts: [a], cluster: cluster) {
                (try? cluster.etcdctl(["--user", "root:rootpw", "get", etcdKey + "Secret", "--print-value-only"]))?
                    .contains("<integer>1</integer>") == true
            }
            // B's agent was refused (the event that proves it tried), and so has not the value.
            let refused = await eventually(timeout: 30) {
                b.log.contains("user name is empty") || b.log.lowercased().contains("permission denied")
                    || b.log.lowercased().contains("token") || b.log.lowercased().contains("authentication")
            }
            #expect(refused, "\(b.log)")
            #expect(b.value(domain, "Secret") == nil)
        }

        @Test("TLS: --cacert, --cert and --key reach a cluster that serves HTTPS only and asks for client certificates")
        func tls() async throws {
            let cluster = try EtcdCluster.started(tls: true)
            let files = try #require(cluster.tls)
            let a = try FleetHost("a")
            let b = try FleetHost("b")
            let options = ["--cacert", files.authority, "--cert", files.clientCertificate, "--key", files.clientKey]
            try a.startAgent([domain], etcd: cluster.endpoints, options: options)
            try b.startAgent([domain], etcd: cluster.endpoints, options: options)
            try a.defaults("write", domain, "Secure", "-bool", "true")
            await expectEventually("Secure on host B over TLS", hosts: [a, b], cluster: cluster) {
                b.value(domain, "Secure") == .bool(true)
            }
            // Without the client certificate, the members refuse the agent: nothing arrives, and it says why.
            let c = try FleetHost("c")
            try c.startAgent([domain], etcd: cluster.endpoints, options: ["--cacert", files.authority])
            // (Each member takes a moment to close a handshake without a certificate: ~2 s per endpoint.)
            await expectEventually("the refused agent's warning", hosts: [c], cluster: cluster) {
                c.log.contains("cannot reach etcd")
            }
            #expect(c.value(domain, "Secure") == nil)
            #expect(c.agentIsRunning)
            // A TLS file that does not exist is an error at start, exit status 1.
            let missing = try a.defaults(
                "sync", "com.example.other", "--etcd", cluster.endpoints, "--cacert", "/nonexistent.pem")
            #expect(missing.status == 1)
            #expect(missing.output.contains("cannot read the TLS file /nonexistent.pem"))
        }
    }
#endif
