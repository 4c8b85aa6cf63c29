#if Fleet
    import Foundation
    import LiveDefaults
    import Testing
    import TestProcesses

    #if canImport(Glibc)
        import Glibc
    #endif

    /// What an operator asks of a fleet, against a real three-member cluster: `defaults sync --status` (is every
    /// machine in step now?), `defaults history` (what changed, at which revision?) and `defaults rollback` (undo
    /// it, as a change every host applies).
    @Suite(
        "Fleet operations: status, history, rollback", .blockingWork, .serialized, .timeLimit(.minutes(3)),
        .enabled(if: EtcdCluster.isInstalled, EtcdCluster.notInstalled)
    )
    struct FleetOperationsTests {
        let domain = "com.example.api"
        var etcdKey: String { "/livedefaults/\(domain)/" }

        /// The status fields of a domain's report (`status` in the JSON).
        func fields(_ report: [String: Any]?) -> [String: Any] { report?["status"] as? [String: Any] ?? [:] }

        func problems(_ report: [String: Any]?) -> [String] { report?["problems"] as? [String] ?? [] }

        @Test("status: in step once a change settled; a frozen, a disconnected and a stopped agent are not")
        func status() async throws {
            let cluster = try EtcdCluster.started()
            let a = try FleetHost("a")
            let b = try FleetHost("b")
            // Never synced here: not in step, and said so.
            let never = try a.status(domain)
            #expect(never.status == 1)
            #expect(never.reports.first?["agent"] as? String == "none")

            try a.startAgent([domain], etcd: cluster.endpoints)
            try b.startAgent([domain], etcd: cluster.endpoints)
            try FleetHost.waitUntilRegistered([a, b], cluster: cluster)
            try a.defaults("write", domain, "RateLimit", "-int", "50")
            await expectEventually("RateLimit on host B", hosts: [a, b], cluster: cluster) {
                b.value(domain, "RateLimit") == .integer(50)
            }
            let revision = try cluster.revision()
            for host in [a, b] {
                await expectEventually(
                    "host \(host.name) in step at revision \(revision)", hosts: [a, b], cluster: cluster
                ) {
                    guard let result = try? host.status(domain), result.status == 0 else { return false }
                    let status = fields(result.reports.first)
                    return status["appliedRevision"] as? Int == Int(revision) && status["caughtUp"] as? Bool == true
                        && (status["pendingKeys"] as? [String])?.isEmpty == true
                        && status["connectedEndpoint"] as? String != nil
                }
            }
            // The text form says the same.
            let text = try a.defaults("sync", "--status", domain)
            #expect(text.status == 0)
            #expect(text.output.contains("\(domain): in step"), "\(text.output)")
            #expect(text.output.contains("applied up to \(revision)"), "\(text.output)")

            // A conflict is counted: A's agent is frozen while A and B change the same key.
            a.signalAgent(SIGSTOP)
            try a.defaults("write", domain, "Mode", "local")
            try b.defaults("write", domain, "Mode", "fleet")
            await expectEventually("B's Mode in etcd", hosts: [a, b], cluster: cluster) {
                (try? cluster.value(etcdKey + "Mode"))?.contains("fleet") == true
            }
            // Frozen past five status intervals (and five seconds): not responding.
            await expectEventually("host A's agent reported as not responding", hosts: [a, b], cluster: cluster) {
                guard let result = try? a.status(domain) else { return false }
                return result.status == 1 && result.reports.first?["agent"] as? String == "not responding"
            }
            a.signalAgent(SIGCONT)
            await expectEventually("host A in step again, one conflict counted", hosts: [a, b], cluster: cluster) {
                guard let result = try? a.status(domain), result.status == 0 else { return false }
                return fields(result.reports.first)["conflicts"] as? Int == 1
                    && a.value(domain, "Mode") == .string("fleet")
            }

            // etcd gone: disconnected, and a local write waits to be pushed.
            for member in cluster.members.indices { cluster.kill(member) }
            try a.defaults("write", domain, "Offline", "-int", "1")
            await expectEventually("host A disconnected with Offline pending", hosts: [a, b], cluster: cluster) {
                guard let result = try? a.status(domain), result.status == 1 else { return false }
                let status = fields(result.reports.first)
                return status["connectedEndpoint"] == nil && status["disconnectedSince"] as? String != nil
                    && (status["pendingKeys"] as? [String]) == ["Offline"] && status["lastError"] as? String != nil
            }
            // While etcd is away the agent keeps trying (and keeps its status current: `updated` moves), and no
            // attempt reads as connected.
            var stamps = Set<String>()
            try await RealTime.sample(times: 10, every: .milliseconds(300)) {
                let status = fields(try a.status(domain).reports.first)
                #expect(status["connectedEndpoint"] == nil, "connected to \(status["connectedEndpoint"] ?? "")")
                if let updated = status["updated"] as? String { stamps.insert(updated) }
            }
            #expect(stamps.count >= 2, "the agent's status did not move while etcd was away")
            try cluster.start()
            await expectEventually("host A in step after etcd returned", hosts: [a, b], cluster: cluster) {
                (try? a.status(domain))?.status == 0 && b.value(domain, "Offline") == .integer(1)
            }

            // Several domains at once: exit 0 only when all are in step.
            let both = try a.status(domain, "com.example.other")
            #expect(both.status == 1)
            #expect(both.reports.count == 2)
            #expect(both.reports.first?["inStep"] as? Bool == true)

            // A killed agent leaves its file, but no lock: stopped.
            #expect(a.stopAgent(signal: SIGKILL)?.reason == .uncaughtSignal)
            let stopped = try a.status(domain)
            #expect(stopped.status == 1)
            #expect(stopped.reports.first?["agent"] as? String == "stopped")
            #expect(problems(stopped.reports.first).first?.contains("no agent is running") == true)
            #expect(b.stopAgent()?.status == 0)
        }

        @Test("history lists every change etcd holds, newest first; rollback writes an old value back everywhere")
        func historyAndRollback() async throws {
            let cluster = try EtcdCluster.started()
            let a = try FleetHost("a")
            let b = try FleetHost("b")
            try a.startAgent([domain], etcd: cluster.endpoints)
            try b.startAgent([domain], etcd: cluster.endpoints)
            try FleetHost.waitUntilRegistered([a, b], cluster: cluster)

            // Four changes through the fleet, each waited for, so each is one revision.
            var revisions: [Int] = []
            for (index, step) in [
                ["write", "RateLimit", "-int", "10"], ["write", "RateLimit", "-int", "20"],
                ["write", "Temporary", "yes"], ["delete", "Temporary"],
            ].enumerated() {
                let before = try cluster.revision()
                #expect(try a.defaults([step[0], domain] + Array(step.dropFirst())).status == 0)
                await expectEventually("change \(index) in etcd", hosts: [a, b], cluster: cluster) {
                    (try? cluster.revision()) == before + 1
                }
                revisions.append(Int(before + 1))
            }
            await expectEventually("RateLimit 20 on host B", hosts: [a, b], cluster: cluster) {
                b.value(domain, "RateLimit") == .integer(20) && b.value(domain, "Temporary") == nil
            }

            let all = try b.history([domain], cluster: cluster)
            #expect(all.changes.map { $0["revision"] as? Int } == revisions.reversed().map { $0 })
            #expect(all.changes.map { $0["key"] as? String } == ["Temporary", "Temporary", "RateLimit", "RateLimit"])
            #expect(all.changes.map { $0["deleted"] as? Bool } == [true, false, false, false])
            #expect(all.changes.last?["value"] as? Int == 10)
            #expect(all.compactRevision == nil)
            // For people: a line per change, newest first, and what --limit left out.
            let text = try b.defaults("history", domain, "--limit", "2", "--etcd", cluster.endpoints)
            #expect(text.status == 0)
            let lines: [[String]] = text.output.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
            let expected: [[String]] = [
                ["\(revisions[3])", "Temporary", "(deleted)"], ["\(revisions[2])", "Temporary", "yes"],
                ["(2", "older", "changes", "not", "shown:", "--limit)"],
            ]
            #expect(lines == expected, "\(text.output)")
            let one = try b.history([domain, "RateLimit"], cluster: cluster)
            #expect(one.changes.map { $0["value"] as? Int } == [20, 10])

            // A key created and deleted again leaves no trace in the current keys: still listed.
            let quiet = "com.example.quiet"
            try cluster.etcdctl(["put", "/livedefaults/\(quiet)/Flash", "on"])
            try cluster.etcdctl(["del", "/livedefaults/\(quiet)/Flash"])
            let flash = try b.history([quiet], cluster: cluster)
            #expect(flash.changes.map { $0["deleted"] as? Bool } == [true, false])
            #expect(flash.changes.last?["value"] as? String == "on")

            // Roll RateLimit back to the first value: a new revision, applied on every host, listed first.
            let rollback = try b.defaults(
                "rollback", domain, "RateLimit", "--to-revision", "\(revisions[0])", "--etcd", cluster.endpoints)
            #expect(rollback.status == 0, "\(rollback.output)")
            #expect(rollback.output.contains("written back as revision"), "\(rollback.output)")
            await expectEventually("RateLimit 10 on both hosts", hosts: [a, b], cluster: cluster) {
                a.value(domain, "RateLimit") == .integer(10) && b.value(domain, "RateLimit") == .integer(10)
            }
            let after = try a.history([domain, "RateLimit"], cluster: cluster)
            #expect(after.changes.map { $0["value"] as? Int } == [10, 20, 10])
            // Again: nothing to do, nothing written.
            let again = try b.defaults(
                "rollback", domain, "RateLimit", "--to-revision", "\(revisions[0])", "--etcd", cluster.endpoints)
            #expect(again.status == 0)
            #expect(again.output.contains("nothing written"), "\(again.output)")
            // Back to a revision before the key existed: deleted on every host.
            let before = try a.defaults(
                "rollback", domain, "Temporary", "--to-revision", "\(revisions[2])", "--etcd", cluster.endpoints)
            #expect(before.status == 0, "\(before.output)")
            await expectEventually("Temporary back on both hosts", hosts: [a, b], cluster: cluster) {
                a.value(domain, "Temporary") == .string("yes") && b.value(domain, "Temporary") == .string("yes")
            }

            // Compaction: revisions before it are gone; history says from where it starts, rollback says why not.
            let compactAt = try cluster.revision()
            try cluster.etcdctl(["compact", "\(compactAt)"])
            let compacted = try a.history([domain], cluster: cluster)
            #expect(compacted.compactRevision == Int(compactAt))
            let lost = try a.defaults(
                "rollback", domain, "RateLimit", "--to-revision", "\(revisions[0])", "--etcd", cluster.endpoints)
            #expect(lost.status == 1)
            #expect(lost.output.contains("is gone: etcd holds revisions from \(compactAt) on"), "\(lost.output)")
            let future = try a.defaults(
                "rollback", domain, "RateLimit", "--to-revision", "\(compactAt + 1000)", "--etcd", cluster.endpoints)
            #expect(future.status == 1)
            #expect(future.output.contains("is not one etcd has made"), "\(future.output)")
            for host in [a, b] { #expect(host.stopAgent()?.status == 0) }
        }

        @Test("rollback honours the schema published on this machine (--no-validate overrides it)")
        func rollbackHonoursSchema() async throws {
            let cluster = try EtcdCluster.started()
            let a = try FleetHost("a")
            // A value the schema (RateLimit: an integer in 1…100000) refuses, put in etcd before it was published.
            try cluster.etcdctl(["put", etcdKey + "RateLimit", "<plist version=\"1.0\"><string>fifty</string></plist>"])
            let refused = try cluster.revision()
            try cluster.etcdctl(["put", etcdKey + "RateLimit", "<plist version=\"1.0\"><integer>50</integer></plist>"])
            #expect(try runHelper(["publish-schema", domain], environment: a.environment).status == 0)
            let result = try a.defaults(
                "rollback", domain, "RateLimit", "--to-revision", "\(refused)", "--etcd", cluster.endpoints)
            #expect(result.status == 1)
            #expect(result.output.contains("refuses revision \(refused)'s value"), "\(result.output)")
            #expect(try cluster.value(etcdKey + "RateLimit")?.contains("<integer>50</integer>") == true)
            let forced = try a.defaults(
                "rollback", domain, "RateLimit", "--to-revision", "\(refused)", "--no-validate", "--etcd",
                cluster.endpoints)
            #expect(forced.status == 0, "\(forced.output)")
            #expect(try cluster.value(etcdKey + "RateLimit")?.contains("<string>fifty</string>") == true)
        }
    }
#endif
