#if Fleet
    import Foundation
    import LiveDefaults
    @testable import LiveDefaultsFleet
    import Testing

    #if canImport(Glibc)
        import Glibc
    #endif

    /// How `defaults sync --status` decides from an agent's status file and lock, and when `defaults history`
    /// knows etcd's replay is complete (no etcd needed).
    @Suite("Sync status and history replay (no etcd needed)")
    struct SyncStatusTests {
        let domain = "com.example.api"

        func directory() throws -> String {
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("status-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            return path
        }

        /// A status of an agent connected, caught up, with nothing pending, written `age` seconds before `now`.
        func healthy(now: Date, age: Double = 0) -> SyncStatus {
            var status = SyncStatus(
                domain: domain, processID: 42, started: now.addingTimeInterval(-60), statusInterval: 1,
                endpoints: ["http://127.0.0.1:2379"])
            status.updated = now.addingTimeInterval(-age)
            status.connectedEndpoint = "http://127.0.0.1:2379"
            status.connectedSince = now.addingTimeInterval(-59)
            status.appliedRevision = 12
            status.etcdRevision = 15
            status.domainRevision = 12
            status.caughtUp = true
            return status
        }

        /// Now, to the second: the file keeps dates in whole seconds (ISO 8601).
        func wholeSecond() -> Date {
            Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
        }

        func write(_ status: SyncStatus, in directory: String) throws {
            try status.encoded().write(
                to: URL(fileURLWithPath: SyncStatus.path(stateDirectory: directory, domain: domain)))
        }

        /// Holds the domain's lock as a running agent does; closed (released) at the end of the test.
        func holdLock(in directory: String) throws -> Int32 {
            let descriptor = open(StateLock.path(stateDirectory: directory, domain: domain), O_RDWR | O_CREAT, 0o600)
            try #require(descriptor >= 0)
            try #require(StateLock.tryLock(descriptor))
            return descriptor
        }

        @Test("in step: a running agent, fresh status, connected, nothing pending, caught up")
        func inStep() throws {
            let directory = try directory()
            let now = wholeSecond()
            try write(healthy(now: now, age: 1), in: directory)
            let lock = try holdLock(in: directory)
            defer { close(lock) }
            let report = SyncStatusReport(domain: domain, stateDirectory: directory, now: now)
            #expect(report.agent == .running)
            #expect(report.inStep, "\(report.problems)")
            #expect(report.status?.appliedRevision == 12)
        }

        @Test("not in step, each for its reason")
        func reasons() throws {
            let directory = try directory()
            let now = wholeSecond()
            #expect(SyncStatusReport(domain: domain, stateDirectory: directory, now: now).agent == .neverRan)

            // Status left behind, no lock: the agent stopped.
            try write(healthy(now: now), in: directory)
            let stopped = SyncStatusReport(domain: domain, stateDirectory: directory, now: now)
            #expect(stopped.agent == .stopped)
            #expect(!stopped.inStep)

            let lock = try holdLock(in: directory)
            defer { close(lock) }
            // Lock held, status 6 s old (interval 1 s): frozen.
            try write(healthy(now: now, age: 6), in: directory)
            let frozen = SyncStatusReport(domain: domain, stateDirectory: directory, now: now)
            #expect(frozen.agent == .notResponding(seconds: 6))
            #expect(frozen.problems.first?.contains("has not updated its status for 6 s") == true)

            var disconnected = healthy(now: now)
            disconnected.connectedEndpoint = nil
            disconnected.disconnectedSince = now
            disconnected.disconnectReason = "connection refused"
            try write(disconnected, in: directory)
            let away = SyncStatusReport(domain: domain, stateDirectory: directory, now: now)
            #expect(away.problems.first?.hasPrefix("disconnected from etcd since") == true)
            #expect(away.problems.first?.hasSuffix(": connection refused") == true)

            var pending = healthy(now: now)
            pending.pendingKeys = ["RateLimit"]
            try write(pending, in: directory)
            #expect(
                SyncStatusReport(domain: domain, stateDirectory: directory, now: now).problems == [
                    "1 key(s) not yet in etcd: RateLimit"
                ])

            var behind = healthy(now: now)
            behind.caughtUp = false
            behind.domainRevision = 14
            try write(behind, in: directory)
            #expect(
                SyncStatusReport(domain: domain, stateDirectory: directory, now: now).problems == [
                    "behind etcd: the domain's newest change is revision 14, applied up to 12"
                ])

            try Data("{".utf8).write(
                to: URL(fileURLWithPath: SyncStatus.path(stateDirectory: directory, domain: domain)))
            let broken = SyncStatusReport(domain: domain, stateDirectory: directory, now: now)
            #expect(broken.problems.first?.contains("cannot be read") == true)
        }

        @Test("a reader asks about the lock without taking it: an agent starting meanwhile still gets it")
        func readerTakesNoLock() throws {
            let directory = try directory()
            let path = StateLock.path(stateDirectory: directory, domain: domain)
            let agent = open(path, O_RDWR | O_CREAT, 0o600)
            defer { close(agent) }
            #expect(!StateLock.isHeld(path: path))
            #expect(StateLock.tryLock(agent))
            #expect(StateLock.isHeld(path: path))
            // A second open of the same file (a second agent, even in this process) is refused.
            let second = open(path, O_RDWR)
            defer { close(second) }
            #expect(!StateLock.tryLock(second))
        }

        // MARK: History's replay

        static func events(_ revisions: ClosedRange<Int64>) -> [EtcdEvent] {
            revisions.map { revision in
                EtcdEvent(
                    type: nil,
                    kv: EtcdKeyValue(
                        key: Data("/livedefaults/d/K\(revision)".utf8), value: Data("v".utf8),
                        mod_revision: EtcdInt64(revision)))
            }
        }

        static func response(_ events: [EtcdEvent], stamped revision: Int64, created: Bool = false) -> EtcdWatchResponse
        {
            EtcdWatchResponse(
                header: EtcdResponseHeader(revision: EtcdInt64(revision)), created: created ? true : nil, events: events
            )
        }

        /// Adds a response outside `#expect` (which cannot take a mutating call).
        func complete(
            _ progress: inout FleetHistory.ReplayProgress, _ response: EtcdWatchResponse, through revision: Int64
        )
            -> Bool
        {
            progress.add(response, through: revision)
        }

        @Test("a replay batch stamped at the history's revision, smaller than etcd's batch limit, completes it")
        func replayCompletes() {
            var progress = FleetHistory.ReplayProgress()
            #expect(!complete(&progress, Self.response([], stamped: 50, created: true), through: 50))
            #expect(complete(&progress, Self.response(Self.events(10...12), stamped: 50), through: 50))
            #expect(progress.events.count == 3)
        }

        @Test("a full batch (1,000 revisions) is not the last; the next one ends it")
        func fullBatchWaits() {
            var progress = FleetHistory.ReplayProgress()
            #expect(!complete(&progress, Self.response(Self.events(1...1000), stamped: 2000), through: 2000))
            #expect(progress.quietSince != nil, "a full batch may be the last: only a quiet spell can tell then")
            #expect(complete(&progress, Self.response(Self.events(1001...1004), stamped: 2000), through: 2000))
            #expect(progress.events.count == 1004)
        }

        @Test("events past the history's revision end the replay and are left out")
        func pastTheEnd() {
            var progress = FleetHistory.ReplayProgress()
            #expect(!complete(&progress, Self.response(Self.events(5...6), stamped: 6), through: 9))
            #expect(complete(&progress, Self.response(Self.events(10...11), stamped: 11), through: 9))
            #expect(progress.events.compactMap { $0.kv?.mod_revision?.value } == [5, 6])
        }

        @Test("changes read from events: puts, deletions, bytes that are no property list, keys of no defaults key")
        func changes() {
            let layout = FleetLayout()
            func event(_ key: String, _ value: String?, revision: Int64, delete: Bool = false) -> EtcdEvent {
                EtcdEvent(
                    type: delete ? "DELETE" : nil,
                    kv: EtcdKeyValue(
                        key: Data(key.utf8), value: value.map { Data($0.utf8) },
                        mod_revision: EtcdInt64(revision)))
            }
            let prefix = "/livedefaults/d/"
            #expect(
                FleetHistory.change(of: event(prefix + "Mode", "fast", revision: 3), domain: "d", layout: layout)
                    == .init(revision: 3, key: "Mode", value: .string("fast"), isDeletion: false))
            #expect(
                FleetHistory.change(
                    of: event(prefix + "Mode", nil, revision: 4, delete: true), domain: "d", layout: layout)
                    == .init(revision: 4, key: "Mode", value: nil, isDeletion: true))
            #expect(
                FleetHistory.change(of: event(prefix + "Mode", "two words", revision: 5), domain: "d", layout: layout)
                    == .init(revision: 5, key: "Mode", value: nil, isDeletion: false, unreadableBytes: 9))
            #expect(FleetHistory.change(of: event(prefix, "x", revision: 6), domain: "d", layout: layout) == nil)
        }
    }
#endif
