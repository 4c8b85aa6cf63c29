#if Fleet
    import Foundation
    public import LiveDefaults

    /// Puts a key back to the value it had at an earlier etcd revision, as a new change: every host's agent
    /// applies it as it applies any change, and the key's history shows it (`defaults rollback`).
    public enum FleetRollback {
        /// What a rollback did.
        public enum Outcome: Sendable, Equatable {
            /// The earlier value was written back (nil: the key did not exist then, so it was deleted) as this
            /// revision.
            case written(value: PropertyList?, revision: Int64)
            /// The key already had that value (or was already absent); nothing was written.
            case unchanged(value: PropertyList?)
        }

        /// Writes the value `key` of `domain` had at `revision` back as a new change.
        ///
        /// The write holds only if the key was not changed by anyone between the read of its current value and the
        /// write (a transaction comparing its modification revision); if it was, nothing is written and the error
        /// says so.
        ///
        /// - Parameters:
        ///   - check: Called with the value to write back (nil for a deletion); a message when it must not be
        ///     written (the domain's published schema refuses it, say), nil to go on.
        /// - Throws: ``FleetError``: ``FleetError/Code-swift.enum/compacted`` when etcd no longer holds that
        ///   revision (the message says which is the oldest it holds), ``FleetError/Code-swift.enum/invalidOption``
        ///   for a revision etcd has not reached or a refused value, ``FleetError/Code-swift.enum/etcdError`` when
        ///   the value then was no property list or the key changed meanwhile.
        public static func rollback(
            domain: String, key: String, toRevision revision: Int64, etcd: EtcdConnection,
            layout: FleetLayout = FleetLayout(), check: (PropertyList?) -> String? = { _ in nil }
        ) async throws(FleetError) -> Outcome {
            try await EtcdClient.using(etcd) { client throws(FleetError) in
                try await rollback(
                    domain: domain, key: key, toRevision: revision, client: client, layout: layout, check: check)
            }
        }

        static func rollback(
            domain: String, key: String, toRevision revision: Int64, client: EtcdClient, layout: FleetLayout,
            check: (PropertyList?) -> String?
        ) async throws(FleetError) -> Outcome {
            let etcdKey = Data(layout.etcdKey(domain: domain, key: key).utf8)
            let now = try await client.range(key: etcdKey, rangeEnd: nil)
            guard let current = now.header?.revision?.value else {
                throw FleetError(.malformedResponse, "etcd's answer to a range has no revision")
            }
            guard revision >= 1, revision <= current else {
                throw FleetError(
                    .invalidOption,
                    "revision \(revision) is not one etcd has made: its revisions run from 1 to \(current)")
            }
            let then: EtcdRangeResponse
            do throws(FleetError) {
                then = try await client.range(key: etcdKey, rangeEnd: nil, revision: revision)
            } catch  where error.code == .compacted {
                var compacted = error
                let oldest = await FleetRollback.oldestRevision(key: etcdKey, client: client)
                compacted.compactRevision = oldest
                let holds = oldest.map { "etcd holds revisions from \($0) on" } ?? "etcd compacted it"
                compacted.message =
                    "revision \(revision) of \(domain) \(key) is gone: \(holds) (`defaults history \(domain) \(key)` lists what is left; Docs/Fleet.md says how to keep more)"
                throw compacted
            }
            let target = then.kvs?.first?.value
            let value: PropertyList?
            if let target {
                do { value = try FleetLayout.decode(target) } catch {
                    throw FleetError(
                        .etcdError,
                        "\(domain) \(key) at revision \(revision) is not a property list, so it is not written back: \(error)"
                    )
                }
            } else {
                value = nil
            }
            let present = now.kvs?.first
            let unchanged: Bool
            if let target, let bytes = present?.value {
                unchanged = target == bytes || (try? FleetLayout.decode(bytes)) == value
            } else {
                unchanged = target == nil && present == nil
            }
            if unchanged { return .unchanged(value: value) }
            if let refusal = check(value) { throw FleetError(.invalidOption, refusal) }
            let operation: EtcdRequestOp
            if let value {
                let bytes: Data
                do { bytes = try FleetLayout.encode(value) } catch {
                    throw FleetError(.invalidOption, "\(domain) \(key)'s value cannot be written as XML: \(error)")
                }
                operation = EtcdRequestOp(request_put: EtcdPutRequest(key: etcdKey, value: bytes))
            } else {
                operation = EtcdRequestOp(request_delete_range: EtcdDeleteRangeRequest(key: etcdKey))
            }
            let expected = present?.mod_revision?.value ?? 0
            let answer = try await client.txn(
                EtcdTxnRequest(
                    compare: [EtcdCompare(key: etcdKey, modRevision: expected)], success: [operation],
                    failure: []))
            guard answer.succeeded == true else {
                throw FleetError(
                    .etcdError,
                    "\(domain) \(key) changed while it was being rolled back; nothing was written (try again)")
            }
            guard let written = answer.header?.revision?.value else {
                throw FleetError(.malformedResponse, "etcd's answer to a transaction has no revision")
            }
            return .written(value: value, revision: written)
        }

        /// The oldest revision etcd holds, as a watch from revision 1 learns it (etcd cancels such a watch at
        /// once, naming its compaction revision); nil when it does not say so within two seconds.
        static func oldestRevision(key: Data, client: EtcdClient) async -> Int64? {
            await withTaskGroup(of: Int64?.self) { group in
                group.addTask {
                    do {
                        try await client.watch(key: key, rangeEnd: nil, from: 1, endpoint: client.currentEndpoint) {
                            response in
                            if !(response.events ?? []).isEmpty { throw EtcdClient.WatchStop() }
                        }
                    } catch let error as FleetError where error.code == .compacted {
                        return error.compactRevision
                    } catch {}
                    return nil
                }
                group.addTask {
                    try? await Task.sleep(for: .seconds(2))
                    return nil
                }
                let first = await group.next() ?? nil
                group.cancelAll()
                return first
            }
        }
    }
#endif
