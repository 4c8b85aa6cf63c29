#if Fleet
    import Foundation
    import LiveDefaults
    import Testing
    import TestProcesses

    #if canImport(Glibc)
        import Glibc
    #endif

    /// Host-targeted values (`<prefix>.targets/<domain>/<host>/<key>`), what a rollout gives the hosts of a stage:
    /// the targeted host's file holds its own value, the others keep the domain's, nothing is pushed, and a target
    /// withdrawn gives the domain's value back. Real agents, a real cluster; the targets written with etcdctl as
    /// the layout documents them.
    @Suite(
        "Fleet targets: a host's own value of a key", .blockingWork, .serialized, .timeLimit(.minutes(3)),
        .enabled(if: EtcdCluster.isInstalled, EtcdCluster.notInstalled)
    )
    struct FleetTargetsTests {
        let domain = "com.example.api"
        var shared: String { "/livedefaults/\(domain)/Mode" }
        func target(_ host: String) -> String { "/livedefaults/.targets/\(domain)/\(host)/Mode" }

        /// The domain's value of Mode in etcd, as the agents read it (XML from a push, a bare word from etcdctl).
        func sharedValue(_ cluster: EtcdCluster) throws -> PropertyList? {
            guard let text = try cluster.value(shared) else { return nil }
            return try PropertyList.decode(Data(text.utf8)).value
        }

        /// Every value of `Mode` an observer on a host sees, in order.
        final class Seen: @unchecked Sendable {
            // @unchecked: `values` is only touched under `lock`.
            private let lock = NSLock()
            private var values: [PropertyList?] = []
            func append(_ value: PropertyList?) { lock.withLock { values.append(value) } }
            var all: [PropertyList?] { lock.withLock { values } }
        }

        @Test(
            "a targeted host holds its own value, others keep the domain's, nothing is pushed; withdrawn, the domain's value comes back, with no old value in between"
        )
        func targetedValues() async throws {
            let cluster = try EtcdCluster.started(members: 1)
            let a = try FleetHost("a")
            let b = try FleetHost("b")
            try a.startAgent([domain], etcd: cluster.endpoints)
            try b.startAgent([domain], etcd: cluster.endpoints)
            try a.defaults("write", domain, "Mode", "steady")
            await expectEventually("Mode steady on host B", hosts: [a, b], cluster: cluster) {
                b.value(domain, "Mode") == "steady"
            }
            let observer = try a.store(domain)
            let seen = Seen()
            let watching = Task {
                for await value in observer.updates(forKey: "Mode") { seen.append(value) }
            }
            defer { watching.cancel() }
            // The stream's first value is the value now: had until the task runs, which may be after the next
            // change, so the change waits for it.
            await expectEventually("the observer has the value now", hosts: [a, b], cluster: cluster) {
                seen.all.first == "steady"
            }

            // Host A's own value: on A only; etcd's domain value and host B keep theirs.
            try cluster.etcdctl(["put", target("a"), "canary"])
            await expectEventually("host A holds its own value", hosts: [a, b], cluster: cluster) {
                a.value(domain, "Mode") == "canary"
            }
            // A later local change of another key is pushed as ever; the targeted key goes with it or not at all.
            try a.defaults("write", domain, "Other", "x")
            await expectEventually("host A's other key on host B", hosts: [a, b], cluster: cluster) {
                b.value(domain, "Other") == "x"
            }
            #expect(try sharedValue(cluster) == "steady", "never pushed")
            #expect(b.value(domain, "Mode") == "steady")
            // In step: the targeted key is not a local change waiting to be pushed.
            await expectEventually("host A in step", hosts: [a, b], cluster: cluster) {
                guard let result = try? a.status(domain), result.status == 0 else { return false }
                return (result.reports.first?["status"] as? [String: Any])?["pendingKeys"] as? [String] == []
            }

            // Completed: the domain's value becomes A's own and the target goes, in one revision. A never
            // shows the old value in between; B takes the new one.
            try cluster.etcdctl(["txn"], input: "\nput \(shared) canary\ndel \(target("a"))\n\n\n")
            await expectEventually("host B has the completed value", hosts: [a, b], cluster: cluster) {
                b.value(domain, "Mode") == "canary"
            }
            #expect(try cluster.keys(prefix: "/livedefaults/.targets/").isEmpty)

            // Withdrawn without completing (a rollback): A goes back to the domain's value.
            try cluster.etcdctl(["put", target("a"), "risky"])
            await expectEventually("host A holds the risky value", hosts: [a, b], cluster: cluster) {
                a.value(domain, "Mode") == "risky"
            }
            try cluster.etcdctl(["del", target("a")])
            await expectEventually("host A back to the domain's value", hosts: [a, b], cluster: cluster) {
                a.value(domain, "Mode") == "canary"
            }
            #expect(b.value(domain, "Mode") == "canary")
            await expectEventually("the observer ends on the domain's value", hosts: [a, b], cluster: cluster) {
                seen.all.last == "canary"
            }
            // Newest wins may skip a value, but the old one never comes back once A held its own.
            let values = seen.all
            let first = try #require(values.firstIndex(of: "canary"), "\(values)")
            #expect(values.first == "steady" && !values[first...].contains("steady"), "\(values)")

            // A target withdrawn while the agent was away: on restart, the domain's value, and nothing pushed.
            try cluster.etcdctl(["put", target("a"), "offline"])
            await expectEventually("host A holds the offline value", hosts: [a, b], cluster: cluster) {
                a.value(domain, "Mode") == "offline"
            }
            #expect(a.stopAgent()?.status == 0)
            try cluster.etcdctl(["del", target("a")])
            try a.startAgent([domain], etcd: cluster.endpoints)
            await expectEventually(
                "host A back to the domain's value after a restart", hosts: [a, b], cluster: cluster
            ) {
                a.value(domain, "Mode") == "canary"
            }
            #expect(try sharedValue(cluster) == "canary", "the withdrawn value was not pushed")
            #expect(b.value(domain, "Mode") == "canary")
        }

        @Test("a host that joins while another host holds its own value gets the domain's value")
        func joiningHost() async throws {
            let cluster = try EtcdCluster.started(members: 1)
            let a = try FleetHost("a")
            let c = try FleetHost("c")
            try a.startAgent([domain], etcd: cluster.endpoints)
            try a.defaults("write", domain, "Mode", "steady")
            await expectEventually("Mode in etcd", hosts: [a], cluster: cluster) {
                (try? cluster.value(shared))?.contains("steady") == true
            }
            try cluster.etcdctl(["put", target("a"), "canary"])
            await expectEventually("host A holds its own value", hosts: [a], cluster: cluster) {
                a.value(domain, "Mode") == "canary"
            }
            try c.startAgent([domain], etcd: cluster.endpoints)
            await expectEventually("host C has the domain's value", hosts: [a, c], cluster: cluster) {
                c.value(domain, "Mode") == "steady"
            }
            // C's own target, set before its agent started, is taken when it starts again.
            #expect(c.stopAgent()?.status == 0)
            try cluster.etcdctl(["put", target("c"), "early"])
            try c.startAgent([domain], etcd: cluster.endpoints)
            await expectEventually("host C holds its own value after a restart", hosts: [a, c], cluster: cluster) {
                c.value(domain, "Mode") == "early"
            }
            #expect(a.value(domain, "Mode") == "canary")
            #expect(try sharedValue(cluster) == "steady")
        }
    }
#endif
