#if Fleet
    import Foundation
    import LiveDefaults
    import Logging

    // Pushing the local changes to etcd: one transaction per chunk, each key guarded by its agreed revision, the
    // values pushed kept in doubt until their answer comes.
    extension DomainMirror {
        /// Pushes the keys whose local value differs from the agreement: one transaction per chunk that holds only
        /// if etcd still has every key at its agreed revision; when one fails, key by key.
        func push(_ keys: Set<String>) async throws(FleetError) {
            if let problem = localFileProblem() { return restoreFromAgreement(problem) }
            // The version the store holds says whether the newest version is only announced (its entry not written
            // yet: its intent's reason); reasons are matched to the values themselves, so contents read after it, of
            // a newer version, are never given a reason of a version that did not set them.
            let version = store.heldVersion(inDomain: domain)
            let contents = store.persistentDomainValues(forName: domain) ?? [:]
            // Every key whose value in this version of the file differs from the agreement, not only those the
            // change stream has named so far: a transaction's keys arrive one by one in the stream, and are
            // pushed together, as one etcd transaction.
            var candidates = keys
            for (key, value) in contents where state.keys[key]?.value != value { candidates.insert(key) }
            for (key, entry) in state.keys where entry.value != nil && contents[key] == nil { candidates.insert(key) }
            var changed: [(key: String, value: PropertyList?)] = []
            for key in candidates.sorted() where contents[key] != state.keys[key]?.value && !isTargeted(key) {
                if let rollout = underRollout[key] {
                    // The rollout decides the key's value; a local change of it waits (and loses to the
                    // rollout's end, as a conflict).
                    if refusedUnderRollout.insert(key).inserted {
                        logError(
                            "\(domain) \(key) changed here is not pushed: it is under \(rollout) (`defaults rollout --abort` ends it)"
                        )
                    }
                    continue
                }
                if let violation = schemaRefusal(key: key, value: contents[key]) {
                    // Written with `defaults write --no-validate`, or by a program that ignores the schema. Said
                    // when the key changes, not at every push of another key.
                    if keys.contains(key) {
                        logError("\(domain) \(key) is not pushed to etcd: the local schema refuses it: \(violation)")
                    }
                    continue
                }
                changed.append((key, contents[key]))
            }
            guard !changed.isEmpty else { return }
            let reasons = store.reasons(
                forValues: Dictionary(changed.map { ($0.key, $0.value) }, uniquingKeysWith: { $1 }), ofVersion: version,
                inDomain: domain)
            var start = 0
            while start < changed.count {
                let chunk = Array(changed[start..<min(start + timing.keysPerTransaction, changed.count)])
                start += chunk.count
                if chunk.count > 1 {
                    do throws(FleetError) {
                        if try await pushTogether(chunk, reasons: reasons) { continue }
                    } catch  where error.code == .etcdError {
                        // Refused as a whole (too large a request, say): key by key below.
                    }
                }
                for item in chunk {
                    do throws(FleetError) {
                        _ = try await pushTogether([item], reasons: reasons)
                    } catch  where error.code == .etcdError {
                        // etcd refuses this key (a value over its request limit, no permission): the others go on;
                        // the key stays local and is tried again at the next reconciliation.
                        logError("etcd refused \(domain) \(item.key), which stays local: \(error.message)")
                    }
                }
            }
        }

        /// One transaction for some keys; false (and, for a single key, a logged conflict) when etcd changed one of
        /// them since the agreement. The reasons of its keys (`reasons`, by key) go in the same transaction
        /// (``FleetLayout/reasonsKey(domain:)``), so that they share its revision.
        private func pushTogether(
            _ items: [(key: String, value: PropertyList?)], reasons: [String: String]
        ) async throws(FleetError) -> Bool {
            var compares: [EtcdCompare] = []
            var operations: [EtcdRequestOp] = []
            var encoded: [(key: String, value: PropertyList?)] = []
            for (key, value) in items {
                let etcdKey = Data(layout.etcdKey(domain: domain, key: key).utf8)
                compares.append(EtcdCompare(key: etcdKey, modRevision: state.agreedRevision(key)))
                if let value {
                    let bytes: Data
                    do { bytes = try FleetLayout.encode(value) } catch {
                        logError("\(domain) \(key) cannot be written as XML for etcd, so it stays local: \(error)")
                        continue
                    }
                    operations.append(EtcdRequestOp(request_put: EtcdPutRequest(key: etcdKey, value: bytes)))
                } else {
                    operations.append(EtcdRequestOp(request_delete_range: EtcdDeleteRangeRequest(key: etcdKey)))
                }
                encoded.append((key, value))
            }
            guard !operations.isEmpty else { return true }
            var itemReasons: [String: PropertyList] = [:]
            for (key, _) in encoded { if let reason = reasons[key] { itemReasons[key] = .string(reason) } }
            if !itemReasons.isEmpty, let bytes = try? FleetLayout.encode(.dictionary(itemReasons)) {
                operations.append(
                    EtcdRequestOp(
                        request_put: EtcdPutRequest(key: Data(layout.reasonsKey(domain: domain).utf8), value: bytes)))
            }
            // In the file before the request goes out: an agent killed while it waits knows, once restarted, the
            // values etcd may have taken from it.
            let newlyInDoubt = encoded.map { state.pushing($0.value, forKey: $0.key) }
            saveState()
            let answer = try await client.txn(EtcdTxnRequest(compare: compares, success: operations, failure: []))
            let applied = answer.succeeded == true
            for ((key, value), new) in zip(encoded, newlyInDoubt) where applied || new {
                state.answered(value, forKey: key, applied: applied)
            }
            guard applied else {
                if items.count == 1 {
                    let key = items[0].key
                    if state.inDoubt[key] != nil {
                        // The change may be an earlier push of this host whose answer was lost: the watch brings
                        // it, and tells.
                        logger.info(
                            "\(domain) \(key): etcd changed it since the last agreement, perhaps with this host's earlier push; waiting for etcd's value"
                        )
                    } else {
                        logConflict(
                            "conflict on \(domain) \(key): etcd changed it since the last agreement; etcd's value wins",
                            key: key, seenByPush: true)
                    }
                }
                return false
            }
            guard let revision = answer.header?.revision?.value else {
                throw FleetError(.malformedResponse, "etcd's answer to a transaction has no revision")
            }
            for (key, value) in encoded {
                state.keys[key] = MirrorState.Entry(revision: revision, value: value)
                conflictsAwaitingValue.remove(key)
            }
            return true
        }
    }
#endif
