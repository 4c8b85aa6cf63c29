#if Fleet
    import Testing

    /// The soak's checker calls a write lost exactly when none of its three accounts hold.
    @Suite("Soak checker")
    struct SoakCheckerTests {
        typealias Operation = SoakChecker.Operation
        typealias Revision = SoakChecker.Revision

        func check(_ operations: [Operation], _ history: [Revision]) -> SoakChecker.Verdict {
            var etcd: [String: String] = [:]
            for revision in history { etcd[revision.key] = revision.value }
            return SoakChecker.check(operations: operations, history: history, etcd: etcd, files: ["a": etcd])
        }

        @Test("a write in etcd's history reached the fleet, whether it is the value now or not")
        func reached() {
            let verdict = check(
                [Operation(host: "a", sequence: 1, key: "K", value: "a-1", previous: nil)],
                [Revision(revision: 5, key: "K", value: "a-1"), Revision(revision: 6, key: "K", value: "b-1")])
            #expect(verdict.reachedEtcd == 1 && verdict.lost.isEmpty)
        }

        @Test("a write neither in etcd, nor replaced on its host, nor beaten by another host's change is lost")
        func lost() {
            let verdict = check(
                [Operation(host: "a", sequence: 1, key: "K", value: "a-1", previous: "b-1")],
                [Revision(revision: 5, key: "K", value: "b-1")])
            #expect(verdict.lost.count == 1)
            #expect(verdict.lost.first?.contains("set K = a-1") == true)
        }

        @Test("replaced on its host by a later operation before its agent pushed it")
        func replacedOnHost() {
            let verdict = check(
                [
                    Operation(host: "a", sequence: 1, key: "K", value: "a-1", previous: nil),
                    Operation(host: "a", sequence: 2, key: "K", value: "a-2", previous: "a-1"),
                ],
                [Revision(revision: 5, key: "K", value: "a-2")])
            #expect(verdict.replacedOnHost == 1 && verdict.reachedEtcd == 1 && verdict.lost.isEmpty)
        }

        @Test("lost a conflict: another host changed the key after the value the writer replaced")
        func conflict() {
            let history = [
                Revision(revision: 5, key: "K", value: "b-1"), Revision(revision: 7, key: "K", value: "c-1"),
            ]
            let beaten = check([Operation(host: "a", sequence: 1, key: "K", value: "a-1", previous: "b-1")], history)
            #expect(beaten.lostConflicts == 1 && beaten.lost.isEmpty)
            // The writer had already replaced c-1: no change it had not seen came after, so it is lost.
            let late = check([Operation(host: "a", sequence: 1, key: "K", value: "a-1", previous: "c-1")], history)
            #expect(late.lost.count == 1)
        }

        @Test("a deletion reached etcd when the revision after the value it deleted is a deletion")
        func deletions() {
            let applied = check(
                [Operation(host: "a", sequence: 1, key: "K", value: nil, previous: "b-1")],
                [Revision(revision: 5, key: "K", value: "b-1"), Revision(revision: 6, key: "K", value: nil)])
            #expect(applied.reachedEtcd == 1 && applied.lost.isEmpty)
            let dropped = check(
                [Operation(host: "a", sequence: 1, key: "K", value: nil, previous: "b-1")],
                [Revision(revision: 5, key: "K", value: "b-1")])
            #expect(dropped.lost.first?.contains("delete K") == true)
        }

        @Test("a host's file that differs from etcd is reported key by key")
        func divergence() {
            let verdict = SoakChecker.check(
                operations: [], history: [], etcd: ["K": "a-1", "L": "b-2"],
                files: ["a": ["K": "a-1", "L": "b-2"], "b": ["K": "a-0"]])
            #expect(verdict.divergent == ["b K: file a-0, etcd a-1", "b L: file absent, etcd b-2"])
        }

        @Test("a writer's log parses: value, deletion, previous value or none")
        func parsesLog() {
            let operations = SoakChecker.operations(host: "a", log: "1\tK3\ta-1\t-\n2\tK3\t-\ta-1\nnot a line\n")
            #expect(
                operations == [
                    Operation(host: "a", sequence: 1, key: "K3", value: "a-1", previous: nil),
                    Operation(host: "a", sequence: 2, key: "K3", value: nil, previous: "a-1"),
                ])
        }
    }
#endif
