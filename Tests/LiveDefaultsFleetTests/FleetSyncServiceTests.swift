#if Fleet
    import Foundation
    import LiveDefaults
    import LiveDefaultsFleet
    import Logging
    import ServiceLifecycle
    import Testing
    import TestProcesses

    /// FleetSync in process, as a server runs it in its own service group instead of a separate agent.
    @Suite(
        "FleetSync as a Service in a server's process", .serialized, .timeLimit(.minutes(3)),
        .enabled(if: EtcdCluster.isInstalled, EtcdCluster.notInstalled)
    )
    struct FleetSyncServiceTests {
        @Test("an in-process FleetSync and another host's agent keep a domain in step; graceful shutdown ends it")
        func inProcessService() async throws {
            let domain = "com.example.server"
            let cluster = try EtcdCluster.started()
            let server = try FleetHost("server")
            let other = try FleetHost("other")
            try other.startAgent([domain], etcd: cluster.endpoints)

            let defaults = try server.store(domain)
            let sync = try FleetSync(
                domains: [domain], etcd: try EtcdConnection(endpoints: cluster.endpoints), defaults: defaults,
                logger: Logger(label: "test"), timing: FleetSync.Timing(heartbeat: .milliseconds(200)))
            // No signals: a group trapping signals inside the test process stalls the other tests.
            let group = ServiceGroup(services: [sync], logger: Logger(label: "test"))
            var updates = defaults.updates(forKey: "Mode", emitCurrentValue: false).makeAsyncIterator()
            let running = Task { try await group.run() }

            try other.defaults("write", domain, "Mode", "fast")
            #expect(await updates.next() == .string("fast"), "the server's own stream sees the fleet's change")
            defaults.set(3, forKey: "Workers")
            #expect(await eventually(timeout: 30) { other.value(domain, "Workers") == .integer(3) })

            await group.triggerGracefulShutdown()
            try await running.value
            // The state of the last agreement was saved for the next start.
            let state = FleetSync.defaultStateDirectory(for: .rooted(at: server.directory)) + "/\(domain).plist"
            #expect(FileManager.default.fileExists(atPath: state))
            #expect(other.stopAgent()?.status == 0)
        }
    }
#endif
