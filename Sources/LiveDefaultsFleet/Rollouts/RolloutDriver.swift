#if Fleet
    import Foundation
    import LiveDefaults

    /// The program side of one rollout: its lock, its record, and the stages (see ``FleetRollout``).
    final class RolloutDriver: Sendable {
        let client: EtcdClient
        let layout: FleetLayout
        let domain: String
        let key: String
        let progress: @Sendable (FleetRollout.RolloutProgress) -> Void
        let recordKey: Data
        let lockKey: Data
        let sharedKey: Data

        init(
            client: EtcdClient, layout: FleetLayout, domain: String, key: String,
            progress: @escaping @Sendable (FleetRollout.RolloutProgress) -> Void
        ) async throws(FleetError) {
            do throws(DefaultsError) { try DomainName.validate(domain) } catch {
                throw FleetError(.invalidOption, "\(error)")
            }
            guard !key.isEmpty else { throw FleetError(.invalidOption, "a rollout needs a key") }
            self.client = client
            self.layout = layout
            self.domain = domain
            self.key = key
            self.progress = progress
            recordKey = Data(FleetRollout.recordKey(layout, domain, key).utf8)
            lockKey = Data((layout.prefix + ".locks/" + domain + "/" + key).utf8)
            sharedKey = Data(layout.etcdKey(domain: domain, key: key).utf8)
        }

        func targetKey(_ host: String) -> Data {
            Data((layout.targetsPrefix(domain: domain, host: host) + key).utf8)
        }

        // MARK: The lock

        /// Runs `body` holding the key's lock: a key on this driver's lease, renewed while `body` runs and
        /// revoked after it, so that a driver that dies frees it when its lease ends.
        func locked<Value: Sendable>(_ body: () async throws(FleetError) -> Value) async throws(FleetError) -> Value {
            let lease = try await client.grantLease(seconds: 10)
            let owner = "pid \(getpid()) on \(FleetHostIdentity.machineName)"
            guard try await client.putOwned(key: lockKey, value: Data(owner.utf8), lease: lease) else {
                try? await client.revoke(lease: lease)
                let holder = try? await client.range(key: lockKey, rangeEnd: nil).kvs?.first?.value
                throw FleetError(
                    .invalidOption,
                    "another driver runs the rollout of \(domain) \(key) (\(holder.map { String(decoding: $0, as: UTF8.self) } ?? "?")); stop it first"
                )
            }
            let client = self.client
            let renewal = Task {
                while !Task.isCancelled {
                    try? await Task.sleep(for: .seconds(3))
                    if Task.isCancelled { return }
                    _ = try? await client.keepAlive(lease: lease)
                }
            }
            let result: Result<Value, FleetError>
            do throws(FleetError) { result = .success(try await body()) } catch { result = .failure(error) }
            renewal.cancel()
            try? await client.revoke(lease: lease)
            return try result.get()
        }

        // MARK: The record

        func record() async throws(FleetError) -> RolloutRecord? {
            guard let bytes = try await client.range(key: recordKey, rangeEnd: nil).kvs?.first?.value else {
                return nil
            }
            guard let record = RolloutRecord.decode(bytes) else {
                throw FleetError(
                    .malformedResponse,
                    "the record of the rollout of \(domain) \(key) is not one (written by another tool?); delete it with etcdctl"
                )
            }
            return record
        }

        func recordOperation(_ record: RolloutRecord) throws(FleetError) -> EtcdRequestOp {
            do {
                return EtcdRequestOp(
                    request_put: EtcdPutRequest(key: recordKey, value: try JSONEncoder.fleetRecords.encode(record)))
            } catch {
                throw FleetError(.invalidOption, "cannot encode the rollout's record: \(error)")
            }
        }

        /// Commits operations with the record, as one etcd revision; that revision.
        @discardableResult
        func commit(_ record: RolloutRecord, with operations: [EtcdRequestOp] = []) async throws(FleetError) -> Int64 {
            let answer = try await client.txn(
                EtcdTxnRequest(compare: [], success: operations + [try recordOperation(record)], failure: []))
            guard let revision = answer.header?.revision?.value else {
                throw FleetError(.malformedResponse, "etcd's answer to a transaction has no revision")
            }
            return revision
        }

        func say(_ record: inout RolloutRecord, _ line: String) {
            record.log.append("\(Date().formatted(.iso8601)) \(line)")
            record.updated = Date()
            progress(.step(line))
        }

        // MARK: Start and resume

        func start(value: PropertyList, options: FleetRollout.Options) async throws(FleetError) -> RolloutRecord {
            if let existing = try await record(), !existing.isFinished {
                throw FleetError(
                    .invalidOption,
                    "\(domain) \(key) has a rollout in progress (\(existing.id), stage \(existing.stage + 1) of \(existing.stages.count)): resume it with --resume or roll it back with --abort"
                )
            }
            let newValue: Data
            do { newValue = try FleetLayout.encode(value) } catch {
                throw FleetError(.invalidOption, "the value cannot be written as XML for etcd: \(error)")
            }
            let shared = try await client.range(key: sharedKey, rangeEnd: nil)
            let hosts = try await liveHosts()
            guard !hosts.isEmpty else {
                throw FleetError(.invalidOption, "no live host syncs \(domain) (see `defaults hosts`)")
            }
            let now = Date()
            var record = RolloutRecord(
                id: Self.identifier(at: now), domain: domain, key: key,
                oldValue: shared.kvs?.first?.value, newValue: newValue, stages: options.stages.map(\.description),
                bakeSeconds: Self.seconds(options.bake), stageTimeoutSeconds: Self.seconds(options.stageTimeout),
                phase: .running, stage: 0, reached: [:], started: now, updated: now, health: [:], log: [])
            try await commit(record)
            say(
                &record,
                "rollout \(record.id) of \(domain) \(key): \(hosts.count) live host\(hosts.count == 1 ? "" : "s"), stages \(record.stages.joined(separator: ","))"
            )
            return try await runStages(&record)
        }

        /// Rolls the rollout in progress back, as aborted.
        func abort() async throws(FleetError) -> RolloutRecord {
            guard var record = try await record(), !record.isFinished else {
                throw FleetError(.invalidOption, "no rollout of \(domain) \(key) is in progress")
            }
            try await rollBack(&record, phase: .aborted, host: nil, reason: "aborted (--abort)")
            return record
        }

        func resume() async throws(FleetError) -> RolloutRecord {
            guard var record = try await record(), !record.isFinished else {
                throw FleetError(.invalidOption, "no rollout of \(domain) \(key) is in progress")
            }
            say(&record, "resumed at stage \(record.stage + 1) of \(record.stages.count)")
            return try await runStages(&record)
        }

        /// A rollout's identifier, fixed before its first record is written (so every version of the record and
        /// every line of history names it alike): `r` and the start time to the second, UTC, and four random
        /// hex digits, `r20261127-041503-9f3a`.
        static func identifier(at date: Date) -> String {
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = TimeZone(identifier: "UTC") ?? calendar.timeZone
            let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
            func two(_ value: Int?) -> String { String(format: "%02d", value ?? 0) }
            let random = String(UInt16.random(in: .min ... .max), radix: 16)
            return
                "r\(parts.year ?? 0)\(two(parts.month))\(two(parts.day))-\(two(parts.hour))\(two(parts.minute))\(two(parts.second))-"
                + String(repeating: "0", count: 4 - random.count) + random
        }

        /// The live hosts that sync the domain, by ID.
        func liveHosts() async throws(FleetError) -> [String: FleetHostRecord] {
            var hosts: [String: FleetHostRecord] = [:]
            for host in try await FleetHosts.live(client: client, layout: layout) where host.domains.contains(domain) {
                hosts[host.id] = host
            }
            return hosts
        }

        static func seconds(_ duration: Duration) -> Double {
            let parts = duration.components
            return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
        }

        // MARK: Stages

        func runStages(_ record: inout RolloutRecord) async throws(FleetError) -> RolloutRecord {
            var stages: [RolloutStage] = []
            for text in record.stages { stages.append(try RolloutStage(parsing: text)) }
            while record.stage < stages.count {
                let live = try await liveHosts()
                if let gone = record.reached.keys.sorted().first(where: { live[$0] == nil }) {
                    try await rollBack(
                        &record, phase: .rolledBack, host: gone,
                        reason: "host \(gone) is gone (its agent's lease ended)")
                    return record
                }
                let want = stages[record.stage].hostCount(of: live.count)
                // New hosts for this stage, and any whose value a stopped driver wrote without learning its revision.
                let added = live.keys.sorted().filter { record.reached[$0] == nil }
                    .prefix(max(0, want - record.reached.count))
                let fresh = Array(added) + record.reached.filter { $0.value == 0 }.keys.sorted()
                if !fresh.isEmpty {
                    var operations: [EtcdRequestOp] = []
                    for host in fresh {
                        // Recorded with the value, so that a driver that dies now leaves no host it does not know of.
                        record.reached[host] = 0
                        operations.append(
                            EtcdRequestOp(request_put: EtcdPutRequest(key: targetKey(host), value: record.newValue)))
                    }
                    let revision = try await commit(record, with: operations)
                    for host in fresh { record.reached[host] = revision }
                }
                let label = "stage \(record.stage + 1)/\(stages.count) (\(stages[record.stage]))"
                say(
                    &record,
                    "\(label): \(record.reached.count) of \(live.count) hosts have the value (\(record.reached.keys.sorted().joined(separator: ", "))); baking \(Self.format(record.bakeSeconds)) s"
                )
                try await commit(record)
                if let failure = try await bake(&record) {
                    try await rollBack(&record, phase: .rolledBack, host: failure.host, reason: failure.reason)
                    return record
                }
                say(&record, "\(label) passed")
                record.stage += 1
                try await commit(record)
            }
            try await complete(&record)
            return record
        }

        /// Waits until every reached host has the value and has stayed healthy for the bake time; the host and
        /// reason of the first failure (a host gone, unhealthy, or whose programs refuse the value), or nil when
        /// the stage passed.
        func bake(_ record: inout RolloutRecord) async throws(FleetError) -> (host: String?, reason: String)? {
            let clock = ContinuousClock()
            let started = clock.now
            let (timeout, bake) = (record.stageTimeout, record.bake)
            var allConfirmedAt: ContinuousClock.Instant?
            while true {
                let live = try await liveHosts()
                var waiting: [String] = []
                for (host, revision) in record.reached.sorted(by: { $0.key < $1.key }) {
                    guard let entry = live[host] else {
                        return (host, "host \(host) is gone (its agent's lease ended)")
                    }
                    guard let report = entry.health, (report.appliedRevisions[domain] ?? 0) >= revision else {
                        waiting.append(host)
                        continue
                    }
                    record.health[host] = "\(report.isHealthy ? "healthy" : "unhealthy"): \(report.detail)"
                    // A program that refuses the value keeps the version before it: the host does not run the
                    // value whatever its health says, and the stage fails now rather than after the bake.
                    let refusing = report.refusals(inDomain: domain)
                    if let refusal = refusing.first {
                        record.health[host] = "refused: \(refusal)"
                        let others = refusing.count > 1 ? " (and \(refusing.count - 1) other program(s))" : ""
                        return (host, "a program on host \(host) refuses the value: \(refusal)\(others)")
                    }
                    if !report.isHealthy { return (host, "host \(host) is unhealthy: \(report.detail)") }
                }
                let now = clock.now
                if waiting.isEmpty {
                    let since = allConfirmedAt ?? now
                    allConfirmedAt = since
                    if now - since >= bake { return nil }
                } else {
                    allConfirmedAt = nil
                }
                progress(
                    .baking(
                        stage: record.stage + 1, stages: record.stages.count,
                        ready: record.reached.count - waiting.count, reached: record.reached.count,
                        baked: allConfirmedAt.map { Self.seconds(now - $0) } ?? 0, bake: record.bakeSeconds))
                if now - started >= timeout + bake {
                    let which =
                        waiting.isEmpty ? "" : ": \(waiting.joined(separator: ", ")) did not report the value applied"
                    return (
                        waiting.first,
                        "the stage did not pass within \(Self.format(record.stageTimeoutSeconds + record.bakeSeconds)) s\(which)"
                    )
                }
                try? await Task.sleep(for: FleetRollout.pollInterval)
            }
        }

        static func format(_ seconds: Double) -> String {
            seconds == seconds.rounded() ? String(Int(exactly: seconds) ?? 0) : String(format: "%.1f", seconds)
        }

        // MARK: Ends

        /// Every stage passed: the value becomes the domain's and the own values go, in one revision (a reached
        /// host keeps the value throughout; the others take it as any change).
        func complete(_ record: inout RolloutRecord) async throws(FleetError) {
            var operations = [EtcdRequestOp(request_put: EtcdPutRequest(key: sharedKey, value: record.newValue))]
            for host in record.reached.keys.sorted() {
                operations.append(EtcdRequestOp(request_delete_range: EtcdDeleteRangeRequest(key: targetKey(host))))
            }
            record.phase = .completed
            say(&record, "completed: \(key) is the new value on every host")
            try await commit(record, with: operations)
        }

        /// Takes the value back from every reached host (their own values deleted: each takes the domain's value,
        /// the old one, again) and records why; waits a little for the live ones to report it applied.
        func rollBack(_ record: inout RolloutRecord, phase: RolloutRecord.Phase, host: String?, reason: String)
            async throws(FleetError)
        {
            var operations: [EtcdRequestOp] = []
            for reached in record.reached.keys.sorted() {
                operations.append(EtcdRequestOp(request_delete_range: EtcdDeleteRangeRequest(key: targetKey(reached))))
            }
            record.phase = phase
            record.reason = reason
            record.failedHost = host
            say(&record, "\(phase == .aborted ? "aborting" : "rolling back"): \(reason)")
            let revision = try await commit(record, with: operations)
            let deadline = ContinuousClock.now + FleetRollout.rollbackConfirmation
            var pending = Set(record.reached.keys)
            while !pending.isEmpty, ContinuousClock.now < deadline {
                let live = try await liveHosts()
                pending = pending.filter { host in
                    guard let entry = live[host] else { return false }  // gone: it takes the old value when back
                    return (entry.health?.appliedRevisions[domain] ?? 0) < revision
                }
                if !pending.isEmpty { try? await Task.sleep(for: FleetRollout.pollInterval) }
            }
            let line =
                pending.isEmpty
                ? "every reached host is back to the old value"
                : "not yet confirmed back to the old value: \(pending.sorted().joined(separator: ", "))"
            say(&record, line)
            try await commit(record)
        }
    }
#endif
