#if Fleet
    import Foundation
    public import LiveDefaults
    import NIOConcurrencyHelpers

    /// The changes etcd still holds of a domain (or of one key of it), newest first: what `defaults history`
    /// prints.
    ///
    /// etcd keeps every revision of every key until it is compacted (see Docs/Fleet.md, "History and rollback":
    /// `--auto-compaction-retention`, `etcdctl compact`); a change is one revision, a put or a deletion. The
    /// history is etcd's own replay of those revisions (a watch from the oldest revision etcd holds), read up to
    /// the cluster's revision when the history was asked for.
    public struct FleetHistory: Sendable {
        /// One change of one key.
        public struct Change: Sendable, Equatable {
            /// The etcd revision that made it.
            public var revision: Int64
            /// The defaults key.
            public var key: String
            /// The value it set; nil for a deletion, or when etcd's bytes are no property list.
            public var value: PropertyList?
            /// Whether the change deleted the key.
            public var isDeletion: Bool
            /// For a put whose bytes are no property list (written by another tool): how many bytes it put.
            public var unreadableBytes: Int?
            /// The rollout step this change was, if it was one: a stage's hosts given the value (``value``), the
            /// reached hosts given the old value back, or the value made the domain's.
            public var rollout: RolloutStep?
            /// Why the change was made, when its writer said (`defaults write --reason`, a transaction's `reason`,
            /// the end of a temporary change): pushed by the agent with it (``FleetLayout/reasonsKey(domain:)``).
            public var reason: String? = nil
        }

        /// One step of a rollout (``FleetRollout``), as history shows it.
        public struct RolloutStep: Sendable, Equatable {
            /// What the step did.
            public enum Kind: String, Sendable {
                /// A stage's hosts got the new value as their own.
                case stage
                /// A failure took the value back from every reached host.
                case rolledBack
                /// `--abort` took the value back from every reached host.
                case aborted
                /// Every stage passed: the value became the domain's.
                case completed
            }

            /// The rollout's identifier.
            public var id: String
            /// What the step did.
            public var kind: Kind
            /// The hosts that got the value (a stage) or had it taken back (a rollback).
            public var hosts: [String]
            /// The stage (`stage 2/3 (50%)`) or why the rollout stopped.
            public var detail: String
        }

        /// The changes, newest first (in one revision, by key).
        public var changes: [Change]
        /// The cluster's revision when the history was read: every change up to it is listed.
        public var revision: Int64
        /// When etcd compacted its history: the revision before which changes are gone. Nil when etcd still holds
        /// every revision since the cluster began.
        public var compactRevision: Int64?

        /// How long history waits, once etcd shows no trace of a change that it would replay, for changes that
        /// left none (a key created and deleted again since the oldest revision): etcd replays the past to a new
        /// watch in rounds of 100 ms, and says nothing when there is nothing to replay.
        static let quietWait: Duration = .seconds(1)
        /// The most a replay may take before history gives up.
        static let replayLimit: Duration = .seconds(60)
        /// etcd sends a watch's replay in batches of at most this many revisions (`watchBatchMaxRevs`); a batch
        /// with fewer was the last one.
        static let batchRevisions = 1000

        /// Reads the history of a domain, or of one key of it, from etcd.
        ///
        /// - Parameters:
        ///   - domain: The domain.
        ///   - key: One key of the domain, or nil for every key.
        ///   - etcd: The cluster.
        ///   - layout: Where the domain lives in etcd.
        /// - Throws: ``FleetError`` when etcd cannot be reached or does not answer as expected.
        public static func read(
            domain: String, key: String? = nil, etcd: EtcdConnection, layout: FleetLayout = FleetLayout()
        ) async throws(FleetError) -> FleetHistory {
            try await EtcdClient.using(etcd) { client throws(FleetError) in
                try await read(domain: domain, key: key, client: client, layout: layout)
            }
        }

        static func read(domain: String, key: String?, client: EtcdClient, layout: FleetLayout)
            async throws(FleetError) -> FleetHistory
        {
            let range = FleetHistory.range(domain: domain, key: key, layout: layout)
            let now = try await client.range(key: range.key, rangeEnd: range.end)
            guard let revision = now.header?.revision?.value else {
                throw FleetError(.malformedResponse, "etcd's answer to a range has no revision")
            }
            var start: Int64 = 1
            var compacted: Int64?
            var attempts = 0
            while true {
                attempts += 1
                do throws(FleetError) {
                    let traced = try await hasTrace(of: range, since: start, now: now, client: client)
                    let events = try await replay(range, from: start, through: revision, traced: traced, client: client)
                    var changes = events.compactMap { change(of: $0, domain: domain, layout: layout) }
                    changes = try await withRolloutSteps(
                        changes, domain: domain, key: key, from: start, through: revision, client: client,
                        layout: layout)
                    changes = try await withReasons(
                        changes, domain: domain, from: start, through: revision, client: client, layout: layout)
                    changes.sort { ($0.revision, $1.key) > ($1.revision, $0.key) }
                    return FleetHistory(changes: changes, revision: revision, compactRevision: compacted)
                } catch  where error.code == .compacted && attempts < 5 {
                    // etcd compacted the start away: replay from the oldest revision it holds.
                    guard let oldest = error.compactRevision, oldest > start else { throw error }
                    start = oldest
                    compacted = oldest
                } catch  where error.code == .unreachable && attempts < 5 {
                    client.endpointFailed(client.currentEndpoint)
                }
            }
        }

        struct KeyRange: Sendable {
            var key: Data
            var end: Data?
        }

        static func range(domain: String, key: String?, layout: FleetLayout) -> KeyRange {
            if let key { return KeyRange(key: Data(layout.etcdKey(domain: domain, key: key).utf8), end: nil) }
            let prefix = Data(layout.domainPrefix(domain).utf8)
            return KeyRange(key: prefix, end: FleetLayout.rangeEnd(ofPrefix: prefix))
        }

        /// Whether etcd shows a trace of a change in the range since `start`: a key written since (its
        /// modification revision), or a key present at `start` that is gone or was made anew since. Without one,
        /// the only changes there can be are keys created and deleted again in between.
        static func hasTrace(of range: KeyRange, since start: Int64, now: EtcdRangeResponse, client: EtcdClient)
            async throws(FleetError) -> Bool
        {
            let present = now.kvs ?? []
            if present.contains(where: { ($0.mod_revision?.value ?? 0) >= start }) { return true }
            guard start > 1 else { return false }  // before revision 1 there was nothing
            let then = try await client.range(key: range.key, rangeEnd: range.end, revision: start)
            var created: [Data: Int64] = [:]
            for kv in present { if let key = kv.key { created[key] = kv.create_revision?.value ?? 0 } }
            return (then.kvs ?? []).contains { kv in
                guard let key = kv.key else { return false }
                return created[key] != (kv.create_revision?.value ?? 0)
            }
        }

        /// etcd's replay of the range's events from `start` up to `revision`, in order.
        ///
        /// Complete when a batch of the replay arrives stamped at or after `revision` with fewer revisions than a
        /// batch can hold (etcd sends the rest of a longer replay in further batches). When there is nothing
        /// etcd shows a trace of (`traced` false) or the last batch was full, a quiet second ends it instead.
        static func replay(
            _ range: KeyRange, from start: Int64, through revision: Int64, traced: Bool, client: EtcdClient
        ) async throws(FleetError) -> [EtcdEvent] {
            let progress = NIOLockedValueBox(ReplayProgress(quietSince: traced ? nil : .now))
            let endpoint = client.currentEndpoint
            let outcome: Result<Void, FleetError> = await withTaskGroup(of: Result<Void, FleetError>?.self) { group in
                group.addTask {
                    do {
                        try await client.watch(key: range.key, rangeEnd: range.end, from: start, endpoint: endpoint) {
                            response in
                            if progress.withLockedValue({ $0.add(response, through: revision) }) {
                                throw EtcdClient.WatchStop()
                            }
                        }
                        return .success(())
                    } catch is EtcdClient.WatchStop {
                        return .success(())
                    } catch let error as FleetError {
                        return .failure(error)
                    } catch {
                        return Task.isCancelled ? nil : .failure(FleetError(.unreachable, "\(error)"))
                    }
                }
                group.addTask {
                    let began = ContinuousClock.now
                    while !Task.isCancelled {
                        do { try await Task.sleep(for: .milliseconds(50)) } catch { return nil }
                        if let since = progress.withLockedValue({ $0.quietSince }), .now - since >= quietWait {
                            return .success(())
                        }
                        if .now - began > replayLimit {
                            return .failure(FleetError(.unreachable, "etcd did not replay its history within 60 s"))
                        }
                    }
                    return nil
                }
                var outcome: Result<Void, FleetError> = .success(())
                if let first = await group.next(), let result = first { outcome = result }
                group.cancelAll()
                return outcome
            }
            try outcome.get()
            return progress.withLockedValue { $0.events }
        }

        struct ReplayProgress: Sendable {
            var events: [EtcdEvent] = []
            /// Set while only a quiet spell can end the replay: since when nothing arrived.
            var quietSince: ContinuousClock.Instant?

            /// Takes a response of the replay; true when the replay is complete.
            mutating func add(_ response: EtcdWatchResponse, through revision: Int64) -> Bool {
                let arrived = response.events ?? []
                guard !arrived.isEmpty else {
                    if quietSince != nil { quietSince = .now }
                    return false
                }
                events += arrived.filter { ($0.kv?.mod_revision?.value ?? 0) <= revision }
                let revisions = Set(arrived.compactMap { $0.kv?.mod_revision?.value })
                let stamped = response.header?.revision?.value ?? 0
                if revisions.contains(where: { $0 > revision }) { return true }  // past the history's end
                if stamped >= revision && revisions.count < FleetHistory.batchRevisions { return true }
                quietSince = .now
                return false
            }
        }

        /// The changes with the steps of the domain's (or key's) rollouts: each record version that gave a stage
        /// the value or took it back is a change of its own; the change that made the value the domain's is
        /// marked as the rollout's.
        static func withRolloutSteps(
            _ changes: [Change], domain: String, key: String?, from start: Int64, through revision: Int64,
            client: EtcdClient, layout: FleetLayout
        ) async throws(FleetError) -> [Change] {
            let prefix = FleetRollout.recordsPrefix(layout, domain)
            let range =
                key.map { KeyRange(key: Data((prefix + $0).utf8), end: nil) }
                ?? KeyRange(key: Data(prefix.utf8), end: FleetLayout.rangeEnd(ofPrefix: Data(prefix.utf8)))
            let now = try await client.range(key: range.key, rangeEnd: range.end)
            let traced = try await hasTrace(of: range, since: start, now: now, client: client)
            guard traced else { return changes }
            let events = try await replay(range, from: start, through: revision, traced: true, client: client)
            var result = changes
            var previous: [String: RolloutRecord] = [:]  // by key
            for event in events.sorted(by: { ($0.kv?.mod_revision?.value ?? 0) < ($1.kv?.mod_revision?.value ?? 0) }) {
                guard event.type != "DELETE", let kv = event.kv, let at = kv.mod_revision?.value, let bytes = kv.value,
                    let record = RolloutRecord.decode(bytes)
                else { continue }
                let before = previous[record.key].flatMap { $0.id == record.id ? $0 : nil }
                previous[record.key] = record
                let step: (RolloutStep, PropertyList?)?
                if record.phase == .completed, before?.phase != .completed {
                    let marked = RolloutStep(id: record.id, kind: .completed, hosts: [], detail: "every stage passed")
                    if let index = result.firstIndex(where: { $0.revision == at && $0.key == record.key }) {
                        result[index].rollout = marked
                        continue
                    }
                    step = (marked, record.newPropertyList)
                } else if record.phase == .rolledBack || record.phase == .aborted, before?.phase == .running {
                    let kind: RolloutStep.Kind = record.phase == .aborted ? .aborted : .rolledBack
                    step = (
                        RolloutStep(
                            id: record.id, kind: kind, hosts: record.reached.keys.sorted(),
                            detail: record.reason ?? ""),
                        record.oldPropertyList
                    )
                } else if record.phase == .running {
                    let added = record.reached.keys.filter { before?.reached[$0] == nil }.sorted()
                    guard !added.isEmpty else { continue }
                    let stage = record.stages.indices.contains(record.stage) ? record.stages[record.stage] : "?"
                    step = (
                        RolloutStep(
                            id: record.id, kind: .stage, hosts: added,
                            detail: "stage \(record.stage + 1)/\(record.stages.count) (\(stage))"),
                        record.newPropertyList
                    )
                } else {
                    continue
                }
                if let (rollout, value) = step {
                    result.append(
                        Change(
                            revision: at, key: record.key, value: value, isDeletion: value == nil, rollout: rollout))
                }
            }
            return result
        }

        /// The changes with their reasons: each revision of the domain's reasons key names the reason of keys
        /// changed at that very revision (the agent puts it in the change's transaction).
        static func withReasons(
            _ changes: [Change], domain: String, from start: Int64, through revision: Int64, client: EtcdClient,
            layout: FleetLayout
        ) async throws(FleetError) -> [Change] {
            let range = KeyRange(key: Data(layout.reasonsKey(domain: domain).utf8), end: nil)
            let now = try await client.range(key: range.key, rangeEnd: range.end)
            guard try await hasTrace(of: range, since: start, now: now, client: client) else { return changes }
            var reasons: [Int64: [String: PropertyList]] = [:]
            for event in try await replay(range, from: start, through: revision, traced: true, client: client) {
                guard event.type != "DELETE", let kv = event.kv, let at = kv.mod_revision?.value,
                    let bytes = kv.value, case .dictionary(let byKey)? = try? FleetLayout.decode(bytes)
                else { continue }
                reasons[at] = byKey
            }
            return changes.map { change in
                var change = change
                if case .string(let reason)? = reasons[change.revision]?[change.key] { change.reason = reason }
                return change
            }
        }

        static func change(of event: EtcdEvent, domain: String, layout: FleetLayout) -> Change? {
            guard let kv = event.kv, let etcdKey = kv.key, let revision = kv.mod_revision?.value,
                let key = layout.defaultsKey(domain: domain, etcdKey: etcdKey)
            else { return nil }
            if event.type == "DELETE" {
                return Change(revision: revision, key: key, value: nil, isDeletion: true)
            }
            let bytes = kv.value ?? Data()
            guard let value = try? FleetLayout.decode(bytes) else {
                return Change(revision: revision, key: key, value: nil, isDeletion: false, unreadableBytes: bytes.count)
            }
            return Change(revision: revision, key: key, value: value, isDeletion: false)
        }
    }
#endif
