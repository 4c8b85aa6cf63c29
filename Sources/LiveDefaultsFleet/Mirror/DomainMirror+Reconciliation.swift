#if Fleet
    import Foundation
    import LiveDefaults
    import Logging

    // The mirror's look at the whole domain: on start and after a compacted watch, and when the local file cannot
    // be read.
    extension DomainMirror {
        // MARK: Reconciliation

        /// Compares the whole domain with etcd and the last agreement, and acts on every key (see the table above).
        /// Afterwards the watch starts just past the revision that was read.
        func reconcile() async throws(FleetError) {
            let answer = try await client.range(key: keyPrefix, rangeEnd: keyRangeEnd)
            guard let revision = answer.header?.revision?.value else {
                throw FleetError(.malformedResponse, "etcd's answer to a range has no revision")
            }
            let cluster = answer.header?.cluster_id?.value
            if state.clusterID != cluster {
                if state.clusterID != nil {
                    logger.warning("\(domain) was last synced with another etcd cluster; starting afresh (etcd wins)")
                }
                state = MirrorState(prefix: layout.prefix)
                state.clusterID = cluster
            }
            let firstSync = state.revision == 0
            var remote: [String: (value: PropertyList?, revision: Int64)] = [:]
            etcdKeys = Set((answer.kvs ?? []).compactMap(\.key))
            for kv in answer.kvs ?? [] {
                guard let etcdKey = kv.key, let key = layout.defaultsKey(domain: domain, etcdKey: etcdKey),
                    let modRevision = kv.mod_revision?.value
                else { continue }
                remote[key] = (decodeValue(kv.value, key: key, revision: modRevision), modRevision)
            }
            // This host's own values at the same revision: their keys follow the target, not the table below.
            let targets = try await readTargets(at: revision)
            // An unreadable file reads as empty in a process that never read it (and as its last known good
            // version in one that did): taken at its word, it would delete every key of the fleet. It counts as
            // unchanged instead, and is rebuilt from the agreement once etcd's changes are in.
            let problem = localFileProblem()
            let local =
                problem != nil
                ? state.keys.compactMapValues(\.value) : store.persistentDomainValues(forName: domain) ?? [:]
            var toPush = Set<String>()
            // Everything etcd changed since the agreement, written as one version of the file.
            var writes = LocalWrites()
            for key in Set(targets.keys).union(state.targets.keys) {
                let etcd = remote[key]
                if let target = targets[key] {
                    state.keys[key] = etcd.map { MirrorState.Entry(revision: $0.revision, value: $0.value) }
                    state.targets[key] = target
                    if local[key] != target { writes.set(target, forKey: key) }
                } else {
                    // Withdrawn while the agent was away: the domain's value, as the watch would have given it.
                    release(key, domainValue: etcd?.value, revision: etcd?.revision ?? 0, into: &writes)
                }
            }
            if !targets.isEmpty { saveState() }
            if targetPrefix != nil { ownValuesApplied?(revision) }
            for key in Set(remote.keys).union(local.keys).union(state.keys.keys) where state.targets[key] == nil {
                let agreed = state.keys[key]
                let etcd = remote[key]
                let etcdChanged = (etcd?.revision ?? 0) != state.agreedRevision(key)
                let localChanged = firstSync ? local[key] != nil && etcd == nil : local[key] != agreed?.value
                switch (etcdChanged, localChanged) {
                case (false, false):
                    continue
                case (false, true):
                    toPush.insert(key)
                case (true, _):
                    guard let etcd else {
                        // Deleted in etcd (takeFromEtcd logs a conflict when the key changed here too).
                        takeFromEtcd(key: key, value: nil, revision: revision, into: &writes, toPush: &toPush)
                        continue
                    }
                    let ownPush = state.isOwnPush(etcd.value, forKey: key)
                    state.settlePushes(forKey: key)
                    guard let value = etcd.value else { continue }  // unreadable in etcd: logged, left alone
                    if ownPush {
                        // Pushed by this agent before it stopped, the answer never read.
                        adoptOwnPush(
                            key: key, value: value, revision: etcd.revision, local: local[key], toPush: &toPush)
                        continue
                    }
                    if localChanged, !firstSync, local[key] != value {
                        logConflict(
                            "conflict on \(domain) \(key): changed here while offline and in etcd; etcd wins", key: key)
                    }
                    state.keys[key] = MirrorState.Entry(revision: etcd.revision, value: value)
                    if local[key] != value { writes.set(value, forKey: key) }
                }
            }
            writeLocal(writes)
            state.revision = revision
            if let problem { restoreFromAgreement(problem) }
            if !toPush.isEmpty { try await push(toPush) }
            saveState()
        }

        // MARK: An unreadable local file

        /// Why the domain's file is corrupt or unreadable right now (the library then reads it as empty), or nil.
        func localFileProblem() -> DefaultsError? {
            store.problem(inDomain: domain)
        }

        /// Writes every agreed value back into the file; the first write keeps the unreadable file aside (as the
        /// library does with a corrupt file) and starts a new one.
        func restoreFromAgreement(_ problem: DefaultsError) {
            logError(
                "\(domain)'s file cannot be read (\(problem)); its keys are not taken for deletions but restored from etcd"
            )
            var writes = LocalWrites()
            for (key, entry) in state.keys.sorted(by: { $0.key < $1.key }) {
                if let value = entry.value { writes.set(value, forKey: key) }
            }
            // This host's own values over the domain's.
            for (key, value) in state.targets { writes.set(value, forKey: key) }
            writeLocal(writes)
        }
    }
#endif
