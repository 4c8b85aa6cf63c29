#if Fleet
    import Foundation
    import LiveDefaults
    import Logging
    import Testing
    import TestProcesses

    @testable import LiveDefaultsFleet

    /// A push whose answer never came (a member killed or quorum lost mid-request): etcd may apply it all the
    /// same, and when it comes back through the watch it is the host's own change, not another host's.
    @Suite("Pushes in doubt: a lost answer is not a conflict")
    struct PushInDoubtTests {
        @Test("a key's pushes in doubt: recorded once, forgotten on an answer or a change of the key, kept in the file")
        func bookkeeping() throws {
            var state = MirrorState(prefix: "/livedefaults/")
            let recorded = [
                state.pushing(.string("v2"), forKey: "Limit"), state.pushing(.string("v2"), forKey: "Limit"),
                state.pushing(.string("v3"), forKey: "Limit"), state.pushing(nil, forKey: "Gone"),
            ]
            #expect(recorded == [true, false, true, true], "a value already in doubt is not recorded again")
            #expect(state.inDoubt["Limit"] == [.string("v2"), .string("v3")])
            #expect(state.isOwnPush(.string("v2"), forKey: "Limit") && state.isOwnPush(nil, forKey: "Gone"))
            #expect(!state.isOwnPush(.string("v4"), forKey: "Limit") && !state.isOwnPush(nil, forKey: "Limit"))

            // The file keeps values and deletions; a list that is not one is no state.
            let data = try state.encoded()
            #expect(MirrorState.decode(data, prefix: "/livedefaults/") == state)
            guard case .dictionary(var root) = try PropertyList.decode(data).value else {
                Issue.record("the state is a dictionary")
                return
            }
            root["InDoubt"] = .dictionary(["Limit": .string("v2")])
            #expect(
                MirrorState.decode(try PropertyList.dictionary(root).encoded(as: .binary), prefix: "/livedefaults/")
                    == nil)

            // Refused: only that value goes (an earlier push may still be the change that refused it).
            state.answered(.string("v3"), forKey: "Limit", applied: false)
            #expect(state.inDoubt["Limit"] == [.string("v2")])
            state.answered(.string("v2"), forKey: "Limit", applied: false)
            #expect(state.inDoubt["Limit"] == nil)
            // Applied: no earlier push can apply any more.
            state.pushing(.string("v5"), forKey: "Limit")
            state.pushing(.string("v6"), forKey: "Limit")
            state.answered(.string("v6"), forKey: "Limit", applied: true)
            #expect(state.inDoubt["Limit"] == nil)
            state.settlePushes(forKey: "Gone")
            #expect(state.inDoubt.isEmpty)
            #expect(MirrorState.decode(try state.encoded(), prefix: "/livedefaults/")?.inDoubt.isEmpty == true)
        }

        /// A mirror that is never run (its client points at a closed port), fed etcd's events as its watch
        /// would: an own push in doubt comes back after a later local change.
        @Test(
            "etcd's event of the host's own push in doubt: the later local value stays and is pushed; another value wins"
        )
        func ownPushComesBack() async throws {
            let domain = "com.example.doubt"
            let host = try FleetHost("doubt")
            let defaults = try host.store(domain)
            let client = try EtcdClient(connection: try EtcdConnection(endpoints: "http://127.0.0.1:9"))
            let mirror = try DomainMirror(
                domain: domain, store: defaults, client: client, layout: FleetLayout(),
                stateDirectory: host.directory + "/.sync", logger: Logger(label: "test"),
                timing: FleetSync.Timing(heartbeat: .milliseconds(200)))
            // Agreed at revision 5: Mine = v1, Theirs = t1, Gone = g1. Pushed since, answers lost: Mine = v2 and
            // the deletion of Gone. Written here since: Mine = v3, Theirs = t3, Gone = g3.
            for key in ["Mine", "Theirs", "Gone"] {
                let first = String(key.lowercased().first!)
                mirror.state.keys[key] = MirrorState.Entry(
                    revision: 5, value: .string(first == "m" ? "v1" : first + "1"))
            }
            mirror.state.revision = 5
            mirror.state.pushing(.string("v2"), forKey: "Mine")
            mirror.state.pushing(nil, forKey: "Gone")
            try defaults.transaction { tx in
                tx.set("v3", forKey: "Mine")
                tx.set("t3", forKey: "Theirs")
                tx.set("g3", forKey: "Gone")
            }
            try await defaults.flush()

            func event(_ key: String, _ value: String?, revision: Int64) throws -> EtcdEvent {
                let etcdKey = Data(FleetLayout().etcdKey(domain: domain, key: key).utf8)
                return EtcdEvent(
                    type: value == nil ? "DELETE" : nil,
                    kv: EtcdKeyValue(
                        key: etcdKey, value: try value.map { try FleetLayout.encode(.string($0)) },
                        mod_revision: EtcdInt64(revision)))
            }
            let toPush = mirror.applyWatched(
                [
                    try event("Mine", "v2", revision: 6), try event("Gone", nil, revision: 7),
                    try event("Theirs", "b-t2", revision: 8),
                ],
                progress: nil)
            try await defaults.flush()

            #expect(toPush == ["Mine", "Gone"])
            #expect(mirror.state.keys["Mine"] == MirrorState.Entry(revision: 6, value: .string("v2")))
            #expect(mirror.state.keys["Gone"] == MirrorState.Entry(revision: 7, value: nil))
            #expect(mirror.state.inDoubt.isEmpty)
            // The host's later changes of its own keys stay; another host's change wins over a local one.
            #expect(host.contents(domain) == ["Mine": .string("v3"), "Gone": .string("g3"), "Theirs": .string("b-t2")])
            await client.shutdown()
        }

        /// Under a quorum loss a push can time out and then apply late: the agent, seeing etcd still at the agreed
        /// revision, pushes the same value again, and that second request is refused because the first one applied.
        /// The refusal says nothing about the first request: the value stays in doubt, and when it comes back the
        /// writer's later change is pushed on top of it (before, it lost as a conflict; the soak's checker found it).
        @Test("the same value pushed again and refused, because its earlier push applied late, stays in doubt")
        func retryRefusedByItsOwnEarlierPush() async throws {
            let domain = "com.example.doubt"
            let cluster = try EtcdCluster.started(members: 1)
            let host = try FleetHost("retry")
            let defaults = try host.store(domain)
            let client = try EtcdClient(connection: try EtcdConnection(endpoints: cluster.endpoints))
            let mirror = try DomainMirror(
                domain: domain, store: defaults, client: client, layout: FleetLayout(),
                stateDirectory: host.directory + "/.sync", logger: Logger(label: "test"),
                timing: FleetSync.Timing(heartbeat: .milliseconds(200)))
            let etcdKey = FleetLayout().etcdKey(domain: domain, key: "Limit")
            _ = try cluster.etcdctl([
                "put", etcdKey, String(decoding: try FleetLayout.encode(.string("v1")), as: UTF8.self),
            ])
            let agreed = try cluster.revision()
            mirror.state.keys["Limit"] = MirrorState.Entry(revision: agreed, value: .string("v1"))
            mirror.state.revision = agreed
            // The first push of v2, its answer lost, applied by etcd after the agent's retry went out.
            mirror.state.pushing(.string("v2"), forKey: "Limit")
            _ = try cluster.etcdctl([
                "put", etcdKey, String(decoding: try FleetLayout.encode(.string("v2")), as: UTF8.self),
            ])
            let late = try cluster.revision()
            defaults.set("v2", forKey: "Limit")
            try await defaults.flush()

            try await mirror.push(["Limit"])
            #expect(mirror.state.isOwnPush(.string("v2"), forKey: "Limit"), "refused by its own earlier push")
            #expect(mirror.state.keys["Limit"]?.revision == agreed)

            // The writer changes the key; then the watch brings the late push.
            defaults.set("v3", forKey: "Limit")
            try await defaults.flush()
            let event = EtcdEvent(
                kv: EtcdKeyValue(
                    key: Data(etcdKey.utf8), value: try FleetLayout.encode(.string("v2")),
                    mod_revision: EtcdInt64(late)))
            let toPush = mirror.applyWatched([event], progress: nil)
            #expect(toPush == ["Limit"], "the writer's later change is pushed on top of its own push")
            try await mirror.push(toPush)
            try await defaults.flush()
            #expect(host.contents(domain) == ["Limit": .string("v3")])
            #expect(try cluster.value(etcdKey).map { $0.contains("v3") } == true)
            await client.shutdown()
        }
    }
#endif
