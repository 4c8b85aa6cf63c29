#if Fleet
    import Foundation

    /// Leases: keys that live only as long as their owner keeps renewing them (`/v3/lease/grant`,
    /// `/v3/lease/keepalive`, `/v3/lease/revoke`), which is how a host's registration and health vanish when its
    /// agent dies.
    extension EtcdClient {
        /// A new lease of `seconds` (etcd may give a longer one); its ID.
        func grantLease(seconds: Int64) async throws(FleetError) -> Int64 {
            let answer: EtcdLeaseGrantResponse = try await call(
                "/v3/lease/grant", EtcdLeaseGrantRequest(TTL: EtcdInt64(seconds)))
            if let error = answer.error, !error.isEmpty {
                throw FleetError(.etcdError, "etcd granted no lease: \(error)")
            }
            guard let id = answer.ID?.value, id != 0 else {
                throw FleetError(.malformedResponse, "etcd's answer to a lease grant has no ID")
            }
            return id
        }

        /// Renews a lease; its new time to live in seconds, or nil when the lease had already expired (its keys are
        /// gone, and a new lease is needed).
        func keepAlive(lease: Int64) async throws(FleetError) -> Int64? {
            // The gateway answers one message of the keep-alive stream with one line.
            let line: EtcdLeaseKeepAliveLine = try await call(
                "/v3/lease/keepalive", EtcdLeaseRequest(ID: EtcdInt64(lease)))
            if let error = line.error {
                throw FleetError(
                    error.grpc_code == 14 ? .unreachable : .etcdError,
                    "etcd did not renew lease \(lease): \(error.message ?? "an error")")
            }
            guard let ttl = line.result?.TTL?.value, ttl > 0 else { return nil }
            return ttl
        }

        /// Ends a lease at once, deleting its keys. A lease that is already gone is not an error.
        func revoke(lease: Int64) async throws(FleetError) {
            do {
                let _: EtcdEmptyResponse = try await call("/v3/lease/revoke", EtcdLeaseRequest(ID: EtcdInt64(lease)))
            } catch  where error.message.contains("lease not found") {
                return
            }
        }

        /// Writes `value` at `key` attached to `lease`, unless the key exists attached to another lease (its
        /// owner is alive, or was until its lease ends). True when written.
        func putOwned(key: Data, value: Data, lease: Int64) async throws(FleetError) -> Bool {
            let put = EtcdRequestOp(request_put: EtcdPutRequest(key: key, value: value, lease: EtcdInt64(lease)))
            // Either the key is absent (created revision 0) or it is this lease's already.
            let absent: EtcdTxnResponse = try await txn(
                EtcdTxnRequest(compare: [EtcdCompare(key: key, modRevision: 0)], success: [put], failure: []))
            if absent.succeeded == true { return true }
            let owned: EtcdTxnResponse = try await txn(
                EtcdTxnRequest(compare: [EtcdCompare(key: key, lease: lease)], success: [put], failure: []))
            return owned.succeeded == true
        }
    }
#endif
