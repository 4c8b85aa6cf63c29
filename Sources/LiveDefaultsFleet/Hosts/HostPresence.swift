#if Fleet
    import Foundation
    import LiveDefaults
    import Logging
    import NIOConcurrencyHelpers

    /// Keeps a host registered in etcd while its agent runs, and its health reported: what
    /// ``FleetSync`` runs beside its mirrors when it has a ``FleetHostIdentity``.
    ///
    /// Two loops share one lease:
    /// - the lease loop grants it, registers the host (`<prefix>.hosts/<id>`) unless another live agent holds the
    ///   name, renews it a third of the way through its time, and starts again when etcd says it expired (after a
    ///   partition longer than the lease: the host was gone meanwhile, and registers anew);
    /// - the health loop runs the check every interval and writes the result (`<prefix>.health/<id>`, on the same
    ///   lease) when it differs from the last one written, or when the lease is new. The report carries the
    ///   programs on the host that refuse a domain's version (``VersionRefusal``), looked for as often as the
    ///   loop wakes: a refusal is written within a wake of the program's announcement, not a health interval later.
    ///
    /// Neither ever ends the agent: etcd being unreachable is retried, a failed check is a report. When the agent
    /// stops, the lease is revoked, so the host is gone at once rather than after the lease's time.
    final class HostPresence: Sendable {
        let identity: FleetHostIdentity
        let domains: [String]
        /// The store the agent syncs through: who reads its domains, and what they refuse.
        let store: Defaults
        let client: EtcdClient
        let layout: FleetLayout
        let logger: Logger
        let timing: FleetSync.Timing
        private let state = NIOLockedValueBox(State())

        private struct State {
            /// The lease the host is registered under, when it is.
            var lease: Int64?
            /// The last report written under that lease.
            var written: HealthReport?
            /// The latest result of the check, written or not.
            var latest: HealthReport?
            /// Per domain, the newest revision of this host's own values applied to its file.
            var appliedRevisions: [String: Int64] = [:]
        }

        /// How often the health loop looks, between two checks, whether an own value was applied.
        static let wakeInterval = Duration.milliseconds(50)

        /// A domain's mirror applied this host's own values up to `revision`: the health check runs at once, and
        /// its report carries the revision (what a rollout waits for before it counts the host's health).
        func ownValuesApplied(domain: String, revision: Int64) {
            state.withLockedValue { state in
                if revision > (state.appliedRevisions[domain] ?? 0) { state.appliedRevisions[domain] = revision }
            }
        }

        init(
            identity: FleetHostIdentity, domains: [String], store: Defaults, client: EtcdClient, layout: FleetLayout,
            logger: Logger, timing: FleetSync.Timing
        ) {
            self.identity = identity
            self.domains = domains
            self.store = store
            self.client = client
            self.layout = layout
            self.logger = logger
            self.timing = timing
        }

        var hostKey: Data { Data((layout.hostsPrefix + identity.id).utf8) }
        var healthKey: Data { Data((layout.healthPrefix + identity.id).utf8) }

        /// Registers and reports until the task is cancelled, then revokes the lease.
        func run() async {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await self.keepRegistered() }
                group.addTask { await self.checkHealth() }
                await group.waitForAll()
            }
            let lease = state.withLockedValue { state in
                defer { state.lease = nil }
                return state.lease
            }
            guard let lease else { return }
            // The task is cancelled: the revocation runs in a task of its own, which is not.
            let client = self.client
            await Task { try? await client.revoke(lease: lease) }.value
        }

        // MARK: The lease

        private func keepRegistered() async {
            var failures = 0
            var heldBy: String?
            while !Task.isCancelled {
                let lease = state.withLockedValue { $0.lease }
                do throws(FleetError) {
                    if let lease {
                        if try await client.keepAlive(lease: lease) == nil {
                            logger.warning("the lease of host \(identity.id) expired in etcd; registering again")
                            state.withLockedValue { $0.lease = nil }
                            continue
                        }
                    } else {
                        let registered = try await register()
                        if let holder = registered {
                            if heldBy != holder {
                                logger.warning(
                                    "host ID \(identity.id) is registered by another live agent (\(holder)); waiting for its lease to end (--host-id names this host)"
                                )
                            }
                            heldBy = holder
                        } else {
                            if heldBy != nil || failures > 0 { logger.info("host \(identity.id) registered") }
                            heldBy = nil
                            await writeHealth(force: true)
                        }
                    }
                    failures = 0
                } catch {
                    failures += 1
                    if failures == 1 { logger.warning("cannot register host \(identity.id) in etcd: \(error)") }
                    try? await Task.sleep(for: timing.retryDelay(afterFailures: failures))
                    continue
                }
                let registered = state.withLockedValue { $0.lease != nil }
                // Renewed a third of the way through the lease; a name held by another agent is tried again as
                // often, so it is taken soon after that agent's lease ends.
                try? await Task.sleep(for: registered ? identity.leaseTime / 3 : identity.leaseTime / 4)
            }
        }

        /// Grants a lease and registers the host under it; nil when registered, otherwise who holds the name
        /// (the lease is then revoked).
        private func register() async throws(FleetError) -> String? {
            let lease = try await client.grantLease(seconds: identity.leaseSeconds)
            let record = FleetHostRecord(
                id: identity.id, domains: domains, pid: getpid(), uid: getuid(), registered: Date(),
                healthCheck: identity.healthCheck?.description, leaseSeconds: identity.leaseSeconds)
            let bytes: Data
            do { bytes = try JSONEncoder.fleetRecords.encode(record) } catch {
                throw FleetError(.invalidOption, "cannot encode the host's record: \(error)")
            }
            if try await client.putOwned(key: hostKey, value: bytes, lease: lease) {
                state.withLockedValue {
                    $0.lease = lease
                    $0.written = nil
                }
                return nil
            }
            try? await client.revoke(lease: lease)
            let holder = try? await client.range(key: hostKey, rangeEnd: nil).kvs?.first?.value
            let other = holder.flatMap(FleetHostRecord.decode)
            return other.map { "pid \($0.pid), registered \($0.registered.formatted(.iso8601))" } ?? "another agent"
        }

        // MARK: Health

        private func checkHealth() async {
            while !Task.isCancelled {
                let applied = state.withLockedValue { $0.appliedRevisions }
                let result: (isHealthy: Bool, detail: String)
                if let check = identity.healthCheck {
                    result = await check.run(hostID: identity.id, timeout: identity.healthTimeout)
                } else {
                    result = (true, "no health check: healthy while the agent runs")
                }
                if Task.isCancelled { return }
                var refusals = self.refusals()
                let now = Date()
                state.withLockedValue { state in
                    var report = HealthReport(
                        isHealthy: result.isHealthy, detail: result.detail, checked: now, since: now,
                        appliedRevisions: applied, refusals: refusals)
                    if state.latest?.isHealthy == report.isHealthy, let since = state.latest?.since {
                        report.since = since
                    }
                    state.latest = report
                }
                await writeHealth(force: false)
                // The next check after the interval, or at once when an own value is applied (looked for every
                // `wakeInterval`). A host without a check has one result, written with each new lease and after
                // each own value. A change of refusals is written at once, with the last result of the check.
                let interval = identity.healthCheck == nil ? identity.leaseTime : identity.healthInterval
                let deadline = ContinuousClock.now + interval
                while ContinuousClock.now < deadline, !Task.isCancelled {
                    if state.withLockedValue({ $0.appliedRevisions }) != applied { break }
                    let now = self.refusals()
                    if now != refusals {
                        refusals = now
                        refusalsChanged(now)
                        await writeHealth(force: false)
                    }
                    try? await Task.sleep(for: min(Self.wakeInterval, deadline - ContinuousClock.now))
                }
            }
        }

        /// Per domain, the programs on this host that refuse the version its file holds.
        private func refusals() -> [String: [VersionRefusal]] {
            var refusals: [String: [VersionRefusal]] = [:]
            for domain in domains {
                let refusing = store.refusals(inDomain: domain)
                if !refusing.isEmpty { refusals[domain] = refusing }
            }
            return refusals
        }

        /// The latest report, with the refusals seen since its check.
        private func refusalsChanged(_ refusals: [String: [VersionRefusal]]) {
            state.withLockedValue { state in
                guard var report = state.latest else { return }
                report.refusals = refusals.isEmpty ? nil : refusals
                state.latest = report
            }
            for (domain, refusing) in refusals.sorted(by: { $0.key < $1.key }) {
                for refusal in refusing { logger.warning("host \(identity.id), \(domain): \(refusal)") }
            }
        }

        /// Writes the latest report under the current lease, when it says something new (or `force`: a new lease).
        private func writeHealth(force: Bool) async {
            let pending: (lease: Int64, report: HealthReport)? = state.withLockedValue { state in
                guard let lease = state.lease, let latest = state.latest else { return nil }
                if !force && latest.saysTheSame(as: state.written) { return nil }
                return (lease, latest)
            }
            guard let pending else { return }
            do {
                let bytes = try JSONEncoder.fleetRecords.encode(pending.report)
                let put = EtcdRequestOp(
                    request_put: EtcdPutRequest(key: healthKey, value: bytes, lease: EtcdInt64(pending.lease)))
                // Only while the host's record is this lease's: a name taken over by another agent is not reported on.
                let answer = try await client.txn(
                    EtcdTxnRequest(
                        compare: [EtcdCompare(key: hostKey, lease: pending.lease)], success: [put], failure: []))
                guard answer.succeeded == true else { return }
                state.withLockedValue { state in
                    if state.lease == pending.lease { state.written = pending.report }
                }
                if !pending.report.isHealthy || force {
                    logger.info(
                        "host \(identity.id) is \(pending.report.isHealthy ? "healthy" : "unhealthy"): \(pending.report.detail)"
                    )
                }
            } catch {
                // Written with the next result or lease; the lease loop reports etcd being unreachable.
                logger.debug("the health of host \(identity.id) could not be written: \(error)")
            }
        }
    }
#endif
