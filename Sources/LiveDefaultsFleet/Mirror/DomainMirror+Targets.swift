#if Fleet
    import Foundation
    import LiveDefaults
    import Logging

    // Host-targeted values: a value at `<prefix>.targets/<domain>/<host>/<key>` is what this host's file holds for
    // the key instead of the domain's value in etcd, until it is deleted; then the host takes the domain's value
    // again. What a rollout gives the hosts of a stage, while every other host keeps the domain's value.
    //
    // A targeted key is never pushed (its local value is the target's), and etcd's changes of the domain's key
    // only move the agreement while the target holds. The targets are kept in the sync state before their value
    // reaches the file, so that a restarted agent knows which local values are targets' and not local changes.
    extension DomainMirror {
        /// Whether the key holds this host's own value now.
        func isTargeted(_ key: String) -> Bool {
            state.targets[key] != nil
        }

        /// Applies the targets' watched events: a new or changed target is written into the file, a deleted
        /// one gives the key back to the domain's value in etcd — read now, so at least as new as the deletion
        /// (a rollout that completes writes the domain's value and deletes the targets in one revision, and the
        /// host must not see the old value in between).
        func applyTargets(_ events: [EtcdEvent], progress: Int64?) async throws(FleetError) {
            guard let targetPrefix else { return }
            var changed: [String: PropertyList?] = [:]  // nil: released
            for event in events {
                guard let kv = event.kv, let etcdKey = kv.key, let revision = kv.mod_revision?.value else { continue }
                targetsRevision = max(targetsRevision, revision)
                guard etcdKey.count > targetPrefix.count, etcdKey.starts(with: targetPrefix),
                    let key = String(bytes: etcdKey.dropFirst(targetPrefix.count), encoding: .utf8)
                else { continue }
                if event.type == "DELETE" {
                    changed[key] = .some(nil)
                } else if let value = targetValue(kv.value, key: key, revision: revision) {
                    changed[key] = value
                }
            }
            if let progress { targetsRevision = max(targetsRevision, progress) }
            guard !changed.isEmpty else { return }
            defer { ownValuesApplied?(targetsRevision) }
            var domainValues: [String: (value: PropertyList?, revision: Int64)] = [:]
            for (key, value) in changed where value == nil && isTargeted(key) {
                domainValues[key] = try await domainValue(key)
            }
            var writes = LocalWrites()
            // Targets are recorded before their values are written; released ones after.
            for case (let key, let value?) in changed {
                state.targets[key] = value
                if localValue(key) != value { writes.set(value, forKey: key) }
            }
            saveState()
            for (key, current) in domainValues {
                release(key, domainValue: current.value, revision: current.revision, into: &writes)
            }
            writeLocal(writes)
            saveState()
        }

        /// The domain's value of `key` in etcd now (nil: absent) and the revision that wrote it (0: absent).
        func domainValue(_ key: String) async throws(FleetError) -> (value: PropertyList?, revision: Int64) {
            let etcdKey = Data(layout.etcdKey(domain: domain, key: key).utf8)
            let answer = try await client.range(key: etcdKey, rangeEnd: nil)
            guard let kv = answer.kvs?.first, let revision = kv.mod_revision?.value else { return (nil, 0) }
            return (decodeValue(kv.value, key: key, revision: revision), revision)
        }

        /// Gives a targeted key back to the domain's value: the agreement and the file take it.
        func release(_ key: String, domainValue: PropertyList?, revision: Int64, into writes: inout LocalWrites) {
            state.targets[key] = nil
            if revision > 0 || state.keys[key] != nil {
                state.keys[key] = MirrorState.Entry(
                    revision: max(revision, state.keys[key]?.revision ?? 0), value: domainValue)
            }
            if (writes.value(of: key) ?? localValue(key)) != domainValue { writes.set(domainValue, forKey: key) }
            logger.info("\(domain) \(key) follows the domain's value again on this host (its own value was withdrawn)")
        }

        /// A target's value, or nil (logged) when it is no property list or the local schema refuses it.
        private func targetValue(_ bytes: Data?, key: String, revision: Int64) -> PropertyList? {
            guard let value = decodeValue(bytes, key: key, revision: revision) else { return nil }
            if let violation = schemaRefusal(key: key, value: value) {
                logError(
                    "this host's own value of \(domain) \(key) (revision \(revision)) is refused by the local schema, so the key keeps its value: \(violation)"
                )
                return nil
            }
            return value
        }

        /// This host's targets as etcd holds them at `revision` (the reconciliation's), by key.
        func readTargets(at revision: Int64) async throws(FleetError) -> [String: PropertyList] {
            guard let targetPrefix, let targetRangeEnd else { return [:] }
            let answer = try await client.range(key: targetPrefix, rangeEnd: targetRangeEnd, revision: revision)
            var targets: [String: PropertyList] = [:]
            for kv in answer.kvs ?? [] {
                guard let etcdKey = kv.key, etcdKey.count > targetPrefix.count,
                    let key = String(bytes: etcdKey.dropFirst(targetPrefix.count), encoding: .utf8),
                    let value = targetValue(kv.value, key: key, revision: kv.mod_revision?.value ?? revision)
                else { continue }
                targets[key] = value
            }
            targetsRevision = revision
            return targets
        }
    }
#endif

#if Fleet
    import DefaultsToolSupport

    // Keys under rollout: the mirror never pushes a local change of one, and lists them for `defaults write`.
    extension DomainMirror {
        /// `<prefix>.rollouts/<domain>/`: the domain's rollout records.
        var rolloutsPrefix: Data { Data(FleetRollout.recordsPrefix(layout, domain).utf8) }

        /// The end of the records' key range (for their read and their watch).
        static func rolloutsRangeEnd(_ prefix: Data) -> Data { FleetLayout.rangeEnd(ofPrefix: prefix) }

        /// The keys under rollout now, read from the records under `prefix`; nil when etcd did not answer.
        static func readKeysUnderRollout(_ client: EtcdClient, prefix: Data) async -> [String: String]? {
            guard let answer = try? await client.range(key: prefix, rangeEnd: rolloutsRangeEnd(prefix)) else {
                return nil
            }
            return keysUnderRollout(answer.kvs ?? [])
        }

        /// The keys of running rollouts among `records`, each with what to tell a person.
        static func keysUnderRollout(_ records: [EtcdKeyValue]) -> [String: String] {
            var keys: [String: String] = [:]
            for kv in records {
                guard let bytes = kv.value, let record = RolloutRecord.decode(bytes), !record.isFinished else {
                    continue
                }
                keys[record.key] =
                    "rollout \(record.id) (stage \(min(record.stage + 1, record.stages.count)) of \(record.stages.count))"
            }
            return keys
        }

        /// Whether watched events change a key of the domain that is under rollout.
        func touchesKeyUnderRollout(_ events: [EtcdEvent]) -> Bool {
            guard !underRollout.isEmpty else { return false }
            return events.contains { event in
                guard let etcdKey = event.kv?.key, let key = layout.defaultsKey(domain: domain, etcdKey: etcdKey) else {
                    return false
                }
                return underRollout[key] != nil
            }
        }

        /// Takes a new list of keys under rollout: kept for the pushes, and in the file `defaults write` reads.
        func noteRollouts(_ keys: [String: String]) {
            underRollout = keys
            refusedUnderRollout.formIntersection(keys.keys)
            do { try KeysUnderRollout(keys: keys).save(stateDirectory: stateDirectory, domain: domain) } catch {
                logError("cannot write the keys under rollout of \(domain) in \(stateDirectory): \(error)")
            }
        }
    }
#endif
