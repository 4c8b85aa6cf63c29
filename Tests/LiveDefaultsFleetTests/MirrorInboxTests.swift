#if Fleet
    import Foundation
    import LiveDefaults
    @testable import LiveDefaultsFleet
    import Logging
    import Testing
    import TestProcesses

    /// The mirror's inbox holds one entry per key whatever the rate of changes, and the mirror's tasks end
    /// before its client shuts down.
    @Suite("Mirror inbox: bounded, newest per key; mirror tasks awaited")
    struct MirrorInboxTests {
        static func event(_ key: String, revision: Int64, delete: Bool = false) -> EtcdEvent {
            EtcdEvent(
                type: delete ? "DELETE" : nil,
                kv: EtcdKeyValue(
                    key: Data(key.utf8), value: Data("\(revision)".utf8), mod_revision: EtcdInt64(revision)))
        }

        static func response(_ events: [EtcdEvent], header revision: Int64? = nil) -> EtcdWatchResponse {
            EtcdWatchResponse(header: EtcdResponseHeader(revision: revision.map(EtcdInt64.init)), events: events)
        }

        @Test("a storm of 100,000 local and 100,000 etcd changes waits as one entry per key, the newest")
        func stormIsBounded() async {
            let inbox = MirrorInbox()
            let keys = 500
            var largest = 0
            var revision: Int64 = 0
            for round in 0..<10_000 {
                for step in 0..<10 {
                    inbox.postLocalChange(key: "Local\((round * 10 + step) % keys)")
                }
                let events = (0..<10).map { step -> EtcdEvent in
                    revision += 1
                    return Self.event("/p/Remote\((round * 10 + step) % keys)", revision: revision)
                }
                inbox.postWatched(generation: 1, Self.response(events))
                if round % 100 == 0 {
                    inbox.postWatched(generation: 1, Self.response([], header: revision))
                    largest = max(largest, inbox.pendingCount)
                }
            }
            // 500 local keys, 500 etcd keys and one progress notification; never more.
            #expect(largest <= 2 * keys + 1)
            #expect(inbox.pendingCount == 2 * keys + 1)
            let batch = await inbox.takeAll()
            #expect(batch.localKeys.count == keys)
            #expect(batch.watchedEvents.count == keys)
            // Each etcd key holds its last event: the 100,000 events were numbered in order.
            for key in 0..<keys {
                let newest = batch.watchedEvents[Data("/p/Remote\(key)".utf8)]?.kv?.mod_revision?.value
                #expect(newest == Int64(100_000 - keys + key + 1))
            }
            let ordered = batch.eventsInOrder.compactMap { $0.kv?.mod_revision?.value }
            #expect(ordered == ordered.sorted())
            // The last progress notification came after round 9,900: revision 9,901 × 10.
            #expect(batch.progressRevision == 99_010)
            #expect(inbox.pendingCount == 0)
        }

        @Test("a later event of a key replaces an earlier one, an earlier one arriving late does not")
        func newestWins() async {
            let inbox = MirrorInbox()
            inbox.postWatched(generation: 1, Self.response([Self.event("/p/A", revision: 5)]))
            inbox.postWatched(generation: 1, Self.response([Self.event("/p/A", revision: 7, delete: true)]))
            inbox.postWatched(generation: 1, Self.response([Self.event("/p/A", revision: 6)]))
            let batch = await inbox.takeAll()
            #expect(batch.watchedEvents.count == 1)
            #expect(batch.watchedEvents[Data("/p/A".utf8)]?.kv?.mod_revision?.value == 7)
            #expect(batch.watchedEvents[Data("/p/A".utf8)]?.type == "DELETE")
        }

        @Test("a newer connection's events and failure drop an older one's, also after a take")
        func generations() async {
            let inbox = MirrorInbox()
            inbox.postWatched(generation: 1, Self.response([Self.event("/p/Old", revision: 3)]))
            inbox.postWatchFailed(generation: 1, FleetError(.unreachable, "first"))
            inbox.postWatched(generation: 2, Self.response([Self.event("/p/New", revision: 4)]))
            var batch = await inbox.takeAll()
            #expect(batch.watchGeneration == 2)
            #expect(Set(batch.watchedEvents.keys) == [Data("/p/New".utf8)])
            #expect(batch.watchFailure?.generation == 1, "the loop, not the inbox, decides a failure is stale")

            inbox.postWatchFailed(generation: 2, FleetError(.unreachable, "second"))
            inbox.postWatchFailed(generation: 1, FleetError(.unreachable, "late"))
            inbox.postWatched(generation: 1, Self.response([Self.event("/p/Late", revision: 2)]))
            batch = await inbox.takeAll()
            #expect(batch.watchFailure?.error.message == "second")
            #expect(!batch.watched, "the old connection's late events are not taken")
        }

        @Test("a cancelled wait returns, a closed inbox returns what is left")
        func endings() async {
            let inbox = MirrorInbox()
            let waiting = Task { await inbox.takeAll() }
            waiting.cancel()
            #expect(await waiting.value.isEmpty)
            inbox.postLocalFileBroken()
            inbox.close()
            #expect(await inbox.takeAll().localFileBroken)
            #expect(await inbox.takeAll().isEmpty)
        }
    }

    /// A mirror against a real cluster: a local write storm stays bounded and converges; when the mirror ends,
    /// nothing of it still talks to etcd.
    @Suite(
        "Mirror against etcd: a local storm, tasks awaited", .serialized, .timeLimit(.minutes(3)),
        .enabled(if: EtcdCluster.isInstalled, EtcdCluster.notInstalled)
    )
    struct MirrorStormTests {
        @Test(
            "100,000 local sets over 200 keys: the inbox holds one entry per key and side, etcd ends on the last values"
        )
        func localStorm() async throws {
            let domain = "com.example.storm"
            let cluster = try EtcdCluster.started(members: 1)
            let host = try FleetHost("storm")
            let defaults = try host.store(domain)
            let client = try EtcdClient(connection: try EtcdConnection(endpoints: cluster.endpoints))
            let inbox = MirrorInbox()
            let directory = host.directory + "/.sync"
            let running = Task {
                let mirror = try DomainMirror(
                    domain: domain, store: defaults, client: client, layout: FleetLayout(),
                    stateDirectory: directory, logger: Logger(label: "test"),
                    timing: FleetSync.Timing(heartbeat: .milliseconds(200)), inbox: inbox)
                try await mirror.run()
            }
            // The mirror is live: a first value reaches etcd.
            defaults.set("start", forKey: "Marker")
            #expect(
                await eventually { (try? cluster.value("/livedefaults/\(domain)/Marker"))?.contains("start") == true })

            let keys = 200
            let largest = LockedCounter()
            let sampler = Task {
                await RealTime.sample(every: .milliseconds(1)) { largest.raise(to: inbox.pendingCount) }
            }
            for change in 0..<100_000 {
                defaults.set(change, forKey: "Key\(change % keys)")
            }
            defaults.set("end", forKey: "Marker")
            #expect(
                await eventually(timeout: 60) {
                    (try? cluster.value("/livedefaults/\(domain)/Marker"))?.contains("end") == true
                })
            sampler.cancel()
            _ = await sampler.value
            // One entry per key on each side: the local keys, and etcd's events of the same keys (the mirror's
            // own pushes, seen by its watch), with the marker, and a progress notification, a failure and a health
            // check's answer at most.
            #expect(largest.value <= 2 * (keys + 1) + 3, "the inbox held \(largest.value) entries for \(keys) keys")
            // Each key ends on its last value: 100,000 - 200 + index.
            for key in [0, 77, keys - 1] {
                let stored = try cluster.value("/livedefaults/\(domain)/Key\(key)")
                #expect(
                    stored?.contains("<integer>\(100_000 - keys + key)</integer>") == true,
                    "Key\(key): \(stored ?? "nil")")
            }

            running.cancel()
            try await running.value
            // run() returned: its watch and health check ended with it, before anyone shuts the client down.
            #expect(client.requestsInProgress == 0)
            await client.shutdown()
        }
    }

    /// The largest value seen; NSLock (a pthread mutex), which ThreadSanitizer sees.
    final class LockedCounter: @unchecked Sendable {
        // @unchecked: `largest` is only touched under `lock`.
        private let lock = NSLock()
        private var largest = 0
        func raise(to value: Int) { lock.withLock { largest = max(largest, value) } }
        var value: Int { lock.withLock { largest } }
    }
#endif
