#if Fleet
    import DefaultsToolSupport
    import Foundation
    import LiveDefaults
    import Logging

    /// Keeps one domain's file and its keys in etcd in step, both ways, until its task is cancelled.
    ///
    /// One loop owns all of the mirror's state and handles, in turn, what its inbox collected: local changes (the
    /// store's change stream of the domain, which sees every process's writes) and the responses of an etcd
    /// watch on the domain's prefix. Every decision compares three things per key — the local value, etcd's
    /// value and revision, and the last agreement of the two kept in ``MirrorState`` — so the mirror's own writes
    /// come back as "nothing to do" on either side (no echo), and a restart can tell which side changed a key:
    ///
    /// | etcd since agreement | local since agreement | action |
    /// |---|---|---|
    /// | changed | unchanged | take etcd's value (or deletion) locally |
    /// | unchanged | changed | push the local value (or deletion) with a transaction that holds only if etcd still has the agreed revision |
    /// | changed | changed | equal values: agree; otherwise etcd wins, the local edit is logged as a conflict |
    ///
    /// Local changes are written through the store (`trySet(_:forKey:inDomain:layer:)`): the library's locked
    /// merge, which re-reads the file under its lock and changes only the mirrored key, so other writers of the
    /// same file lose nothing.
    final class DomainMirror {
        let domain: String
        let store: Defaults
        let client: EtcdClient
        let layout: FleetLayout
        let stateFile: MirrorStateFile
        let logger: Logger
        let timing: FleetSync.Timing

        /// Where the mirror's tasks report; given by tests that watch what waits in it.
        let inbox: MirrorInbox
        var state: MirrorState
        let keyPrefix: Data
        let keyRangeEnd: Data
        /// This host's targets of the domain (`<prefix>.targets/<domain>/<host>/`), when the agent has a host ID.
        let targetPrefix: Data?
        let targetRangeEnd: Data?
        /// The domain's keys under rollout (key: what to tell a person): never pushed from here, and listed for
        /// `defaults write` in ``KeysUnderRollout``'s file.
        var underRollout: [String: String] = [:]
        /// Keys under rollout whose local change was reported as not pushed (once each).
        var refusedUnderRollout = Set<String>()
        /// Wakes the task that reads the domain's rollout records (while ``run()`` runs): each connection's watch
        /// of the records yields when one changes.
        var rolloutsChanged: AsyncStream<Void>.Continuation?
        let stateDirectory: String
        /// The targets' watch has reported everything up to this revision (it resumes after it).
        var targetsRevision: Int64 = 0
        /// Told the revision up to which this host's own values are in the file, after each change of them (the
        /// host's presence checks its health then).
        let ownValuesApplied: (@Sendable (Int64) -> Void)?
        /// Which watch the inbox's etcd events belong to; events of an older one are dropped.
        private var generation = 0
        private var connected = false
        /// Whether etcd's values were written into the store since the last flush.
        var wroteLocally = false
        /// The domain's etcd keys present as of ``MirrorState/revision`` (from the last reconciliation and every
        /// event since), to compare with a health check's count.
        var etcdKeys = Set<Data>()
        /// What the status file says; the loop keeps it current.
        let status: SyncStatusPublisher
        /// Keys whose refused push was counted as a conflict, until etcd's value of the key arrives.
        var conflictsAwaitingValue = Set<String>()
        /// When the status's pending keys were last computed (a comparison of the whole domain).
        private var pendingComputed = ContinuousClock.now - .seconds(3600)

        init(
            domain: String, store: Defaults, client: EtcdClient, layout: FleetLayout, stateDirectory: String,
            logger: Logger, timing: FleetSync.Timing, hostID: String? = nil,
            ownValuesApplied: (@Sendable (Int64) -> Void)? = nil, inbox: MirrorInbox = MirrorInbox()
        ) throws(FleetError) {
            self.ownValuesApplied = ownValuesApplied
            self.stateDirectory = stateDirectory
            self.domain = domain
            self.inbox = inbox
            self.store = store
            self.client = client
            self.layout = layout
            self.logger = logger
            self.timing = timing
            stateFile = try MirrorStateFile(directory: stateDirectory, domain: domain)
            state = stateFile.load(prefix: layout.prefix) ?? MirrorState(prefix: layout.prefix)
            let started = Date()
            var initial = SyncStatus(
                domain: domain, processID: getpid(), started: started,
                statusInterval: Self.statusInterval(heartbeat: timing.heartbeat),
                endpoints: client.connection.endpoints.map(\.absoluteString))
            initial.appliedRevision = state.revision
            initial.disconnectedSince = started
            initial.disconnectReason = "connecting"
            status = SyncStatusPublisher(
                path: SyncStatus.path(stateDirectory: stateDirectory, domain: domain), status: initial)
            keyPrefix = Data(layout.domainPrefix(domain).utf8)
            keyRangeEnd = FleetLayout.rangeEnd(ofPrefix: keyPrefix)
            targetPrefix = hostID.map { Data(layout.targetsPrefix(domain: domain, host: $0).utf8) }
            targetRangeEnd = targetPrefix.map(FleetLayout.rangeEnd(ofPrefix:))
        }

        /// Mirrors until the task is cancelled; returns after the last local write is on disk and the state saved.
        ///
        /// Every task the mirror starts — the local change stream, the file check, each connection's watch and
        /// health check — is a child of one task group, so none outlives `run()`: the etcd client the caller
        /// shuts down afterwards has no request of the mirror's left.
        func run() async throws {
            let changes = try store.changes(inDomain: domain)
            // Subscribed before the first look at the file, so that no change slips between the two.
            let iterator = changes.makeAsyncIterator()
            await withDiscardingTaskGroup { group in
                group.addTask { [inbox] in
                    var iterator = iterator
                    while let change = await iterator.next() {
                        inbox.postLocalChange(key: change.key)
                    }
                }
                // A file that breaks changes no value (the store keeps its last known good version): it is
                // looked at once per heartbeat, and reported when it turns unreadable.
                group.addTask { [inbox, store, domain, heartbeat = timing.heartbeat] in
                    var broken = false
                    while !Task.isCancelled {
                        do { try await Task.sleep(for: heartbeat) } catch { return }
                        let isBroken = store.problem(inDomain: domain) != nil
                        if isBroken && !broken { inbox.postLocalFileBroken() }
                        broken = isBroken
                    }
                }
                // The keys under rollout: read whenever a record changes (the connection's watch of the records
                // says so: a rollout's start, stage, rollback or end is known on every host within moments), and
                // once per heartbeat besides (no watch is open while etcd is unreachable).
                let (rolloutChanges, rolloutsChanged) = AsyncStream.makeStream(
                    of: Void.self, bufferingPolicy: .bufferingNewest(1))
                self.rolloutsChanged = rolloutsChanged
                group.addTask { [inbox, client, prefix = rolloutsPrefix] in
                    for await _ in rolloutChanges {
                        if let keys = await Self.readKeysUnderRollout(client, prefix: prefix) {
                            inbox.postRollouts(keys)
                        }
                    }
                }
                group.addTask { [heartbeat = timing.heartbeat] in
                    while !Task.isCancelled {
                        rolloutsChanged.yield()
                        do { try await Task.sleep(for: heartbeat) } catch { break }
                    }
                    rolloutsChanged.finish()
                }
                group.addTask { [status, logger, interval = Self.statusInterval(heartbeat: timing.heartbeat)] in
                    await status.run(every: .milliseconds(Int64((interval * 1000).rounded())), logger: logger)
                }
                await loop(&group)
                inbox.close()
                group.cancelAll()
            }
            try? await store.flush()
            try? stateFile.save(state)
            // Nobody keeps the list once the agent stops.
            try? KeysUnderRollout().save(stateDirectory: stateDirectory, domain: domain)
            status.update { status in
                status.connectedEndpoint = nil
                status.disconnectedSince = Date()
                status.disconnectReason = "the agent stopped"
                status.caughtUp = false
            }
            status.write()
        }

        /// Seconds between two writes of the status file: the heartbeat, at most one second.
        static func statusInterval(heartbeat: Duration) -> Double {
            let components = heartbeat.components
            let seconds = Double(components.seconds) + Double(components.attoseconds) / 1e18
            return min(max(seconds, 0.01), 1)
        }

        private func loop(_ group: inout DiscardingTaskGroup) async {
            var failures = 0
            var needsReconciliation = true
            var watchEndpoint = 0
            // Ends the current connection's watch and health check (they are children of `group`).
            var stopWatch: AsyncStream<Void>.Continuation?
            defer { stopWatch?.finish() }
            // Keys changed locally and not yet pushed; kept while etcd is away.
            var dirty = Set<String>()
            while !Task.isCancelled {
                if !connected {
                    if failures > 0 {
                        try? await Task.sleep(for: timing.retryDelay(afterFailures: failures))
                        if Task.isCancelled { break }
                    }
                    if needsReconciliation {
                        do throws(FleetError) {
                            try await reconcile()
                            needsReconciliation = false
                            dirty.removeAll()  // the reconciliation compared every key
                        } catch {
                            failures += 1
                            reportFailure("cannot reach etcd for \(domain), retrying: \(error)", failures: failures)
                            markDisconnected("\(error)")
                            continue
                        }
                    }
                    stopWatch?.finish()
                    generation += 1
                    watchEndpoint = client.currentEndpoint
                    stopWatch = startWatch(in: &group, generation: generation, endpoint: watchEndpoint)
                    connected = true
                }
                let batch = await inbox.takeAll()
                dirty.formUnion(batch.localKeys)
                let watchFailure = batch.watchFailure.flatMap { $0.generation == generation ? $0.error : nil }
                let applied = batch.watched && batch.watchGeneration == generation
                if applied {
                    if failures > 0 {
                        logger.info("connected to etcd again at \(client.endpointName(watchEndpoint)) for \(domain)")
                        failures = 0
                    }
                    dirty.formUnion(applyWatched(batch.eventsInOrder, progress: batch.progressRevision))
                }
                if batch.watchGeneration == generation, !batch.targetEvents.isEmpty || batch.targetProgress != nil {
                    do throws(FleetError) {
                        try await applyTargets(batch.targetEventsInOrder, progress: batch.targetProgress)
                    } catch {
                        // The key's domain value could not be read: everything is compared again on reconnecting.
                        connected = false
                        needsReconciliation = true
                        failures += 1
                        reportFailure("cannot apply this host's own values of \(domain): \(error)", failures: failures)
                        markDisconnected("\(error)")
                        continue
                    }
                }
                let health = batch.health.flatMap { $0.generation == generation ? $0.summary : nil }
                // Connected once the member answered this connection: its watch, or its health check.
                if applied || health != nil { markConnected(client.endpointName(watchEndpoint)) }
                var rollouts = batch.rollouts
                if applied, touchesKeyUnderRollout(batch.eventsInOrder) {
                    // etcd changed a key under rollout: the rollout's completion, whose record ended in the same
                    // revision. Looked at now rather than at the next heartbeat, so that a local write made right
                    // after it is pushed at once instead of waiting as if the rollout still ran.
                    if let keys = await Self.readKeysUnderRollout(client, prefix: rolloutsPrefix) { rollouts = keys }
                }
                if let rollouts, rollouts != underRollout {
                    // A local change that waited for its key's rollout is pushed now it has ended (one a completion
                    // replaced, as a conflict, equals the agreement again and is not).
                    dirty.formUnion(underRollout.keys.filter { rollouts[$0] == nil })
                    noteRollouts(rollouts)
                }
                if batch.localFileBroken, let problem = localFileProblem() { restoreFromAgreement(problem) }
                if wroteLocally {
                    // On disk now rather than after the background writer's gathering pause: other processes on
                    // this host see the fleet's change sooner (the file is one write either way).
                    wroteLocally = false
                    try? await store.flush()
                }
                // The agreement is saved once the values it records are on disk.
                if applied { saveState() }
                if let failure = watchFailure {
                    connected = false
                    markDisconnected(failure.message)
                    if failure.code == .compacted {
                        // The events since the last applied revision are gone: compare everything again.
                        logger.info("\(failure.message); resynchronizing \(domain)")
                        needsReconciliation = true
                    } else {
                        failures += 1
                        reportFailure(
                            "lost the etcd watch for \(domain), reconnecting: \(failure.message)", failures: failures)
                        client.endpointFailed(watchEndpoint)
                    }
                    continue
                }
                if !dirty.isEmpty {
                    let keys = dirty
                    dirty.removeAll()
                    do throws(FleetError) {
                        try await push(keys)
                        saveState()
                    } catch {
                        dirty.formUnion(keys)
                        failures += 1
                        reportFailure(
                            "cannot push local changes of \(domain) to etcd, reconnecting: \(error)", failures: failures
                        )
                        connected = false
                        markDisconnected("\(error)")
                    }
                }
                publishStatus(dirty: dirty, health: health)
            }
        }

        /// The first failure in a row is a warning; the retries after it are debug messages. Each is the status's
        /// last error.
        private func reportFailure(_ message: String, failures: Int) {
            logger.log(level: failures == 1 ? .warning : .debug, "\(message)")
            noteError(message)
        }

        /// Logs an error and keeps it as the status's last error.
        func logError(_ message: String) {
            logger.error("\(message)")
            noteError(message)
        }

        /// Logs a conflict (etcd's value won over a local change of `key`) and counts it in the status, once
        /// per conflict: a push refused because etcd changed the key is usually followed by the watch bringing
        /// etcd's value, which is the same conflict seen from the other side (`seenByPush`: the push counted it).
        func logConflict(_ message: String, key: String, seenByPush: Bool = false) {
            logger.warning("\(message)")
            let first =
                seenByPush ? conflictsAwaitingValue.insert(key).inserted : conflictsAwaitingValue.remove(key) == nil
            if first { status.update { $0.conflicts += 1 } }
        }

        private func noteError(_ message: String) {
            status.update { status in
                status.lastError = message
                status.lastErrorTime = Date()
            }
        }

        private func markConnected(_ endpoint: String) {
            status.update { status in
                guard status.connectedEndpoint != endpoint else { return }
                if status.connectedEndpoint == nil { status.connectedSince = Date() }
                status.connectedEndpoint = endpoint
                status.disconnectedSince = nil
                status.disconnectReason = nil
            }
        }

        private func markDisconnected(_ reason: String) {
            status.update { status in
                if status.connectedEndpoint != nil || status.disconnectedSince == nil {
                    status.disconnectedSince = Date()
                }
                status.connectedEndpoint = nil
                status.disconnectReason = reason
                status.caughtUp = false
            }
        }

        /// Brings the status up to date after a pass of the loop: the applied revision, what the last health check
        /// found, and (at most every 100 ms, and at every health check) the keys whose local value etcd lacks.
        private func publishStatus(dirty: Set<String>, health: EtcdClient.RangeSummary?) {
            var pending: [String]?
            let now = ContinuousClock.now
            if health != nil || now - pendingComputed >= .milliseconds(100) {
                pendingComputed = now
                pending = pendingKeys(dirty: dirty)
            }
            let (applied, known, connected) = (state.revision, etcdKeys.count, connected)
            status.update { status in
                status.appliedRevision = applied
                if let pending { status.pendingKeys = pending }
                if let health {
                    status.etcdRevision = health.revision
                    status.domainRevision = health.newestModification
                    status.caughtUp = connected && health.newestModification <= applied && health.count == Int64(known)
                }
            }
        }

        /// Keys whose local value differs from the last agreement with etcd (changed here, not yet pushed or
        /// refused), with the keys changed and not yet compared.
        private func pendingKeys(dirty: Set<String>) -> [String] {
            var pending = dirty
            let contents = store.persistentDomainValues(forName: domain) ?? [:]
            for (key, value) in contents where state.keys[key]?.value != value { pending.insert(key) }
            for (key, entry) in state.keys where entry.value != nil && contents[key] == nil { pending.insert(key) }
            return pending.filter { !isTargeted($0) && underRollout[$0] == nil }.sorted()
        }

        func saveState() {
            state.pruneDeletions()
            do { try stateFile.save(state) } catch { logError("\(error)") }
        }
    }
#endif
