#if Fleet
    import Foundation
    import LiveDefaults
    import Testing
    import TestProcesses

    #if canImport(Glibc)
        import Glibc
    #endif

    /// Guarded rollouts with real processes: six hosts, each an agent whose health command reads the host's own
    /// value (unhealthy when it is 666), and `defaults rollout` as the driver, against a real cluster.
    @Suite(
        "Fleet rollouts: a canary, stages gated by health, rollback", .blockingWork, .serialized,
        .timeLimit(.minutes(3)), .enabled(if: EtcdCluster.isInstalled, EtcdCluster.notInstalled)
    )
    struct FleetRolloutTests {
        let domain = "com.example.api"

        /// `count` hosts syncing the domain, each with the health check, all with PoolSize 10.
        /// (Leases of 5 s by default: long enough that a host slowed by a sanitizer never drops out of a stage.)
        func fleet(_ count: Int, cluster: EtcdCluster, leaseTime: String = "5") async throws -> [FleetHost] {
            var hosts: [FleetHost] = []
            for index in 1...count { hosts.append(try startHost("h\(index)", cluster: cluster, leaseTime: leaseTime)) }
            try hosts[0].defaults("write", domain, "PoolSize", "-int", "10")
            await expectEventually("PoolSize 10 on every host", hosts: hosts, cluster: cluster) {
                hosts.allSatisfy { $0.value(domain, "PoolSize") == .integer(10) }
            }
            try FleetHost.waitUntilRegistered(hosts, cluster: cluster)
            return hosts
        }

        func startHost(_ name: String, cluster: EtcdCluster, leaseTime: String = "5") throws -> FleetHost {
            let host = try FleetHost(name)
            let check = "test \"$('\(FleetHost.tool.path)' read \(domain) PoolSize 2>/dev/null)\" != 666"
            try host.startAgent(
                [domain], etcd: cluster.endpoints,
                options: [
                    "--heartbeat", "0.2", "--health-command", check, "--health-interval", "0.2", "--lease-time",
                    leaseTime,
                ])
            return host
        }

        /// `defaults rollout …` started in the background; its output goes to a file.
        final class Driver {
            let process = Process()
            let outputPath: String

            init(_ host: FleetHost, _ arguments: [String]) throws {
                outputPath = host.directory + "/../rollout-\(UUID().uuidString).log"
                _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
                let output = try FileHandle(forWritingTo: URL(fileURLWithPath: outputPath))
                process.executableURL = FleetHost.tool
                process.arguments = ["rollout"] + arguments
                process.environment = host.environment
                process.standardOutput = output
                process.standardError = output
                try process.run()
            }

            var output: String { (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "" }

            deinit {
                if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            }
        }

        /// Samples the hosts' values of PoolSize until the driver exits: every set of hosts seen holding `value`.
        func sample(_ hosts: [FleetHost], while driver: Driver, holding value: PropertyList) async -> [Set<String>] {
            var seen: [Set<String>] = []
            await RealTime.sample(every: .milliseconds(10), while: { driver.process.isRunning }) {
                let holding = Set(hosts.filter { $0.value(domain, "PoolSize") == value }.map(\.name))
                if seen.last != holding { seen.append(holding) }
            }
            seen.append(Set(hosts.filter { $0.value(domain, "PoolSize") == value }.map(\.name)))
            return seen
        }

        func status(_ host: FleetHost, cluster: EtcdCluster) throws -> [String: Any] {
            let result = try host.defaultsOutput([
                "rollout", "--status", domain, "PoolSize", "--etcd", cluster.endpoints, "--json",
            ])
            let list = (try? JSONSerialization.jsonObject(with: Data(result.output.utf8))) as? [[String: Any]]
            return list?.first ?? [:]
        }

        /// `defaults history DOMAIN PoolSize --json`: the rollout steps among its changes, oldest first, as
        /// (step, hosts, value).
        func rolloutSteps(_ host: FleetHost, cluster: EtcdCluster, id: String) throws -> [(String, [String], Int?)] {
            try host.history([domain, "PoolSize"], cluster: cluster).changes.reversed().compactMap { change in
                guard let step = change["rollout"] as? [String: Any], step["id"] as? String == id else { return nil }
                return (step["step"] as? String ?? "", step["hosts"] as? [String] ?? [], change["value"] as? Int)
            }
        }

        func sharedValue(_ cluster: EtcdCluster, key: String = "PoolSize") throws -> PropertyList? {
            guard let text = try cluster.value("/livedefaults/\(domain)/\(key)") else { return nil }
            return try PropertyList.decode(Data(text.utf8)).value
        }

        @Test("a value that makes the canary unhealthy is held by the canary only, then by no host")
        func unhealthyCanary() async throws {
            let cluster = try EtcdCluster.started(members: 1)
            let hosts = try await fleet(6, cluster: cluster)
            let driver = try Driver(
                hosts[0],
                [
                    domain, "PoolSize", "-int", "666", "--etcd", cluster.endpoints, "--stages", "1,50%,100%",
                    "--bake", "2",
                ])
            let seen = await sample(hosts, while: driver, holding: .integer(666))
            #expect(driver.process.terminationStatus == 1, "\(driver.output)")
            #expect(driver.output.contains("rolled back (host h1): host h1 is unhealthy"), "\(driver.output)")
            #expect(seen.allSatisfy { $0.isSubset(of: ["h1"]) }, "hosts seen with the value: \(seen)")
            #expect(seen.contains(["h1"]), "the canary never had the value: \(seen)")
            #expect(hosts.allSatisfy { $0.value(domain, "PoolSize") == .integer(10) })
            #expect(try sharedValue(cluster) == .integer(10))
            let record = try status(hosts[1], cluster: cluster)
            #expect(record["phase"] as? String == "rolledBack")
            #expect(record["failedHost"] as? String == "h1")
            // History shows the stage's write and the rollback, with the rollout's identifier.
            let id = try #require(record["id"] as? String)
            let steps = try rolloutSteps(hosts[1], cluster: cluster, id: id)
            #expect(steps.map(\.0) == ["stage", "rolledBack"], "\(steps)")
            #expect(steps.map(\.1) == [["h1"], ["h1"]], "\(steps)")
            #expect(steps.map(\.2) == [666, 10], "\(steps)")
            let text = try hosts[1].defaults("history", domain, "PoolSize", "--etcd", cluster.endpoints).output
            #expect(text.contains("rollout \(id) rolled back"), "\(text)")
        }

        @Test("a healthy value goes to 1, then half, then every host; etcd losing a member on the way changes nothing")
        func healthyInStages() async throws {
            let cluster = try EtcdCluster.started(members: 3)
            let hosts = try await fleet(6, cluster: cluster)
            let driver = try Driver(
                hosts[0],
                [
                    domain, "PoolSize", "-int", "20", "--etcd", cluster.endpoints, "--stages", "1,50%,100%",
                    "--bake", "1.5",
                ])
            // One member lost while the first stage bakes: once the canary holds the value.
            let canary = hosts[0]
            let killer = Task { [domain] in
                _ = await eventually { canary.value(domain, "PoolSize") == .integer(20) }
                cluster.kill(2)
            }
            let seen = await sample(hosts, while: driver, holding: .integer(20))
            _ = await killer.value
            #expect(driver.process.terminationStatus == 0, "\(driver.output)")
            let counts = seen.map(\.count)
            #expect(
                counts.contains(1) && counts.contains(3) && counts.last == 6, "hosts with the value, in turn: \(counts)"
            )
            // The hosts of a stage take the value within moments of each other, so a sample may catch 2 of 3; but
            // the count only grows, and no host outside a stage has it before the stage starts.
            #expect(counts == counts.sorted(), "\(counts)")
            #expect(seen.allSatisfy { $0.count > 3 || $0.isSubset(of: ["h1", "h2", "h3"]) }, "\(seen)")
            #expect(seen.first(where: { $0.count == 1 }) == ["h1"])
            #expect(try sharedValue(cluster) == .integer(20))
            let record = try status(hosts[1], cluster: cluster)
            #expect(record["phase"] as? String == "completed")
            #expect((record["log"] as? [String])?.contains { $0.contains("completed") } == true)
            let id = try #require(record["id"] as? String)
            let steps = try rolloutSteps(hosts[1], cluster: cluster, id: id)
            #expect(steps.map(\.0) == ["stage", "stage", "stage", "completed"], "\(steps)")
            #expect(steps.map(\.1) == [["h1"], ["h2", "h3"], ["h4", "h5", "h6"], []], "\(steps)")
            #expect(steps.allSatisfy { $0.2 == 20 }, "\(steps)")
        }

        @Test("on a terminal, the stage that bakes is a bar redrawn in place; elsewhere, a line per step")
        func progressBar() async throws {
            let cluster = try EtcdCluster.started(members: 1)
            let hosts = try await fleet(2, cluster: cluster)
            let command = [
                FleetHost.tool.path, "rollout", domain, "PoolSize", "-int", "11", "--etcd", cluster.endpoints,
                "--stages", "100%", "--bake", "1",
            ].map { "'\($0)'" }.joined(separator: " ")
            // util-linux's script(1) gives the driver a pseudo-terminal.
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/script")
            process.arguments = ["-qfec", command, "/dev/null"]
            process.environment = hosts[0].environment
            let terminal = try runToEnd(process, errors: .merged)
            #expect(terminal.status == 0, "\(terminal.output)")
            #expect(terminal.output.contains("stage 1/1 [###"), "\(terminal.output)")
            #expect(terminal.output.contains("2/2 hosts ready"), "\(terminal.output)")
            #expect(terminal.output.contains("\u{1B}[K"), "\(terminal.output)")
            let plain = try hosts[0].defaults([
                "rollout", domain, "PoolSize", "-int", "12", "--etcd", cluster.endpoints, "--stages", "100%", "--bake",
                "0",
            ])
            #expect(plain.status == 0 && !plain.output.contains("hosts ready") && !plain.output.contains("\u{1B}"))
            #expect(plain.output.contains("completed"), "\(plain.output)")
            // --status shows the key's last rollout and the one before it, from etcd's history of the record.
            let result = try hosts[0].defaultsOutput([
                "rollout", "--status", domain, "PoolSize", "--etcd", cluster.endpoints, "--json",
            ])
            let listed = (try? JSONSerialization.jsonObject(with: Data(result.output.utf8))) as? [[String: Any]] ?? []
            #expect(listed.map { $0["phase"] as? String } == ["completed", "completed"], "\(result.output)")
            #expect(listed.map { $0["newValue"] as? Int } == [12, 11], "\(result.output)")
            #expect(Set(listed.compactMap { $0["id"] as? String }).count == 2, "\(result.output)")
        }

        @Test(
            "a driver killed mid-stage leaves the hosts where they were; a write of the key is refused; a joining host gets the old value; --abort restores them"
        )
        func driverKilled() async throws {
            let cluster = try EtcdCluster.started(members: 1)
            let hosts = try await fleet(6, cluster: cluster)
            let driver = try Driver(
                hosts[0],
                [
                    domain, "PoolSize", "-int", "30", "--etcd", cluster.endpoints, "--stages", "1,100%",
                    "--bake", "60",
                ])
            await expectEventually("the canary has the value", hosts: hosts, cluster: cluster) {
                hosts[0].value(domain, "PoolSize") == .integer(30)
            }
            kill(driver.process.processIdentifier, SIGKILL)
            driver.process.waitUntilExit()
            // A window in which nothing may move: no event says "nothing happened".
            await RealTime.pause(.seconds(1))
            #expect(hosts[0].value(domain, "PoolSize") == .integer(30))
            #expect(hosts.dropFirst().allSatisfy { $0.value(domain, "PoolSize") == .integer(10) })
            await expectEventually("the rollout shown stopped", hosts: hosts, cluster: cluster) {
                let record = (try? status(hosts[1], cluster: cluster)) ?? [:]
                return record["phase"] as? String == "running" && record["driverRunning"] as? Bool == false
            }
            // Another rollout of the key is refused while this one is in progress.
            let second = try hosts[1].defaults([
                "rollout", domain, "PoolSize", "-int", "40", "--etcd", cluster.endpoints,
            ])
            #expect(second.status == 1 && second.output.contains("has a rollout in progress"), "\(second.output)")
            // A plain write of the key is refused on any host while the rollout is in progress, --no-validate too.
            let listed = hosts[2].directory + "/.livedefaults-sync/\(domain).rollouts.json"
            await expectEventually("the agent lists the key under rollout", hosts: hosts, cluster: cluster) {
                FileManager.default.fileExists(atPath: listed)
            }
            for options in [[], ["--no-validate"]] {
                let write = try hosts[2].defaults(["write", domain, "PoolSize", "-int", "50"] + options)
                #expect(write.status == 1, "\(write.output)")
                #expect(write.output.contains("PoolSize of \(domain) is under rollout r"), "\(write.output)")
            }
            #expect(hosts[2].value(domain, "PoolSize") == .integer(10))
            // A program on an unreached host is not stopped, but its change waits: not pushed while the rollout runs.
            let program = try hosts[3].store(domain)
            program.set(45, forKey: "PoolSize")
            try await program.flush()
            await RealTime.pause(.seconds(1))
            #expect(try sharedValue(cluster) == .integer(10))
            #expect(hosts[4].value(domain, "PoolSize") == .integer(10))
            // A host that joins now takes the domain's (old) value.
            let joining = try startHost("h7", cluster: cluster)
            await expectEventually("the joining host has the old value", hosts: [joining], cluster: cluster) {
                joining.value(domain, "PoolSize") == .integer(10)
            }
            let abort = try hosts[1].defaults(["rollout", "--abort", domain, "PoolSize", "--etcd", cluster.endpoints])
            #expect(abort.status == 0, "\(abort.output)")
            #expect(abort.output.contains("every reached host is back to the old value"), "\(abort.output)")
            #expect(try status(hosts[1], cluster: cluster)["phase"] as? String == "aborted")
            // The abort left the domain's value as it was, so the change that waited is pushed now: every host.
            await expectEventually("the program's waiting change on every host", hosts: hosts, cluster: cluster) {
                (hosts + [joining]).allSatisfy { $0.value(domain, "PoolSize") == .integer(45) }
            }
            #expect(try sharedValue(cluster) == .integer(45))
            // Ended: the key is an ordinary one again.
            await expectEventually("the key no longer listed", hosts: hosts, cluster: cluster) {
                !FileManager.default.fileExists(atPath: listed)
            }
            #expect(try hosts[2].defaults("write", domain, "PoolSize", "-int", "50").status == 0)
            await expectEventually("the write on every host", hosts: hosts, cluster: cluster) {
                hosts.allSatisfy { $0.value(domain, "PoolSize") == .integer(50) }
            }
        }

        @Test(
            "an agent sees a rollout's completion at once, not at its next look at the rollouts: a write right after it is pushed"
        )
        func completionSeenAtOnce() async throws {
            let cluster = try EtcdCluster.started(members: 1)
            let hosts = try await fleet(1, cluster: cluster)
            let driver = try Driver(
                hosts[0],
                [domain, "PoolSize", "-int", "20", "--etcd", cluster.endpoints, "--stages", "100%", "--bake", "3"])
            await expectEventually("the rollout's stage baking", hosts: hosts, cluster: cluster) {
                driver.output.contains("baking")
            }
            // A host that joins mid-rollout and looks at the rollouts once an hour: it sees this one when it starts.
            let late = try FleetHost("h9")
            try late.startAgent([domain], etcd: cluster.endpoints, options: ["--heartbeat", "3600"])
            let listed = late.directory + "/.livedefaults-sync/\(domain).rollouts.json"
            await expectEventually("the late host lists the key under rollout", hosts: [late], cluster: cluster) {
                (try? String(contentsOfFile: listed, encoding: .utf8))?.contains("PoolSize") == true
            }
            driver.process.waitUntilExit()
            #expect(driver.process.terminationStatus == 0, "\(driver.output)")
            // The completion's value, and with it the end of the rollout, well before the next hour.
            await expectEventually("the late host's list empty after the completion", hosts: [late], cluster: cluster) {
                late.value(domain, "PoolSize") == .integer(20)
                    && (try? String(contentsOfFile: listed, encoding: .utf8))?.contains("PoolSize") != true
            }
            #expect(try late.defaults("write", domain, "PoolSize", "-int", "21").status == 0)
            await expectEventually("the write after the completion on the other host", hosts: hosts, cluster: cluster) {
                hosts[0].value(domain, "PoolSize") == .integer(21)
            }
            #expect(!late.log.contains("is not pushed"), "\(late.log)")
        }

        @Test("a host killed mid-stage fails the stage: every other reached host goes back")
        func hostKilled() async throws {
            let cluster = try EtcdCluster.started(members: 1)
            let hosts = try await fleet(6, cluster: cluster, leaseTime: "3")
            let driver = try Driver(
                hosts[0],
                [
                    domain, "PoolSize", "-int", "40", "--etcd", cluster.endpoints, "--stages", "50%,100%",
                    "--bake", "30",
                ])
            await expectEventually("half the hosts have the value", hosts: hosts, cluster: cluster) {
                hosts.filter { $0.value(domain, "PoolSize") == .integer(40) }.count == 3
            }
            hosts[1].stopAgent(signal: SIGKILL)
            await expectEventually("the driver ends", hosts: hosts, cluster: cluster) { !driver.process.isRunning }
            #expect(driver.process.terminationStatus == 1)
            #expect(driver.output.contains("host h2 is gone"), "\(driver.output)")
            let live = hosts.enumerated().filter { $0.offset != 1 }.map(\.element)
            #expect(live.allSatisfy { $0.value(domain, "PoolSize") == .integer(10) })
            #expect(try sharedValue(cluster) == .integer(10))
        }

        /// A program on a host with a validator (the test helper's `validate` mode: MinPool ≤ MaxPool ≤ `limit`),
        /// running until the test ends; returned once its validator is in place.
        final class ValidatingProgram {
            let process: Process
            let input = Pipe()
            let output = Pipe()

            init(on host: FleetHost, domain: String, limit: Int) throws {
                process = try helperProcess(
                    ["validate", host.directory, domain, String(limit)], environment: host.environment)
                process.standardInput = input
                process.standardOutput = output
                process.standardError = FileHandle.nullDevice
                try process.run()
                // Its first line says the validator is registered.
                var line: [UInt8] = []
                while let byte = try output.fileHandleForReading.read(upToCount: 1)?.first, byte != UInt8(ascii: "\n") {
                    line.append(byte)
                }
                guard String(decoding: line, as: UTF8.self) == "ready" else {
                    throw CocoaError(.executableLoad)
                }
            }

            deinit {
                try? input.fileHandleForWriting.close()
                if process.isRunning { process.terminate() }
                process.waitUntilExit()
            }
        }

        @Test(
            "a value a program on the canary refuses is rolled back at once, before the bake; sync --status and hosts name the refusing host"
        )
        func refusedOnCanary() async throws {
            let cluster = try EtcdCluster.started(members: 1)
            // No health check: every host is healthy while its agent runs, so only the refusal can fail the stage.
            var hosts: [FleetHost] = []
            for index in 1...3 {
                let host = try FleetHost("h\(index)")
                try host.startAgent(
                    [domain], etcd: cluster.endpoints, options: ["--heartbeat", "0.2", "--lease-time", "5"])
                hosts.append(host)
            }
            try hosts[0].defaults("write", domain, "MaxPool", "-int", "10")
            await expectEventually("MaxPool 10 on every host", hosts: hosts, cluster: cluster) {
                hosts.allSatisfy { $0.value(domain, "MaxPool") == .integer(10) }
            }
            try FleetHost.waitUntilRegistered(hosts, cluster: cluster)
            let program = try ValidatingProgram(on: hosts[0], domain: domain, limit: 50)

            // The canary (h1, the first by name) gets 90, which its program refuses: the stage fails on the
            // refusal, long before the bake of 60 s would end.
            let started = ContinuousClock.now
            let driver = try Driver(
                hosts[1],
                [domain, "MaxPool", "-int", "90", "--etcd", cluster.endpoints, "--stages", "1,100%", "--bake", "60"])
            await expectEventually("the driver ends", hosts: hosts, cluster: cluster) { !driver.process.isRunning }
            #expect(ContinuousClock.now - started < .seconds(30), "the rollout waited for the bake")
            #expect(driver.process.terminationStatus == 1, "\(driver.output)")
            #expect(driver.output.contains("rolled back (host h1)"), "\(driver.output)")
            #expect(
                driver.output.contains(
                    "a program on host h1 refuses the value: process \(program.process.processIdentifier) (LiveDefaultsTestHelper)"
                ),
                "\(driver.output)")
            #expect(driver.output.contains("MaxPool 90 is above this program's limit of 50"), "\(driver.output)")
            #expect(hosts.allSatisfy { $0.value(domain, "MaxPool") == .integer(10) })
            #expect(try sharedValue(cluster, key: "MaxPool") == .integer(10))

            // A plain write of a value the program refuses: the file has it on every host, and the status says
            // which host's program refuses it — here without etcd, and from another host with it.
            try hosts[1].defaults("write", domain, "MaxPool", "-int", "80")
            await expectEventually("h1's agent reports the refusal", hosts: hosts, cluster: cluster) {
                let listed = try? hosts[2].hosts(etcd: cluster.endpoints).hosts["h1"]
                let health = listed?["health"] as? [String: Any]
                return (health?["refusals"] as? [String: Any])?[domain] != nil
            }
            let local = try hosts[0].defaults("sync", "--status", domain)
            #expect(local.status == 1, "\(local.output)")
            #expect(
                local.output.contains("on this host, process \(program.process.processIdentifier)"), "\(local.output)")
            #expect(local.output.contains("MaxPool 80 is above this program's limit of 50"), "\(local.output)")
            let fleet = try hosts[2].defaults("sync", "--status", domain, "--etcd", cluster.endpoints)
            #expect(fleet.status == 1, "\(fleet.output)")
            #expect(
                fleet.output.contains("on host h1, process \(program.process.processIdentifier)"), "\(fleet.output)")
            #expect(!fleet.output.contains("on this host"), "h3's programs refuse nothing: \(fleet.output)")
            let hostsText = try hosts[2].defaults("hosts", "--etcd", cluster.endpoints).output
            #expect(
                hostsText.contains("REFUSED \(domain): process \(program.process.processIdentifier)"), "\(hostsText)")
            withExtendedLifetime(program) {}
        }
    }
#endif
