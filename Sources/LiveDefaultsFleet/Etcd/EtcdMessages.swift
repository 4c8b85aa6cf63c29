#if Fleet
    import Foundation

    // The messages of etcd's v3 API as its JSON gateway speaks them (etcd 3.4: `/v3/kv/range`, `/v3/kv/put`,
    // `/v3/kv/txn`, `/v3/kv/deleterange`, `/v3/watch`, `/v3/auth/authenticate`). The gateway is grpc-gateway's
    // mapping of the protobuf messages: field names in snake_case, `bytes` as base64 strings (JSONEncoder's default
    // for `Data`), 64-bit integers as decimal strings, fields with a zero value left out (so every field decodes as
    // optional), enums by name (`"DELETE"`; the zero value `PUT` is left out).

    /// A 64-bit integer as the gateway writes it: a decimal string ("12"); a plain JSON number is accepted too.
    /// Revisions are signed (`EtcdInt64`); cluster and member IDs use the whole unsigned range (`EtcdUInt64`).
    struct EtcdInteger<Value: FixedWidthInteger & Codable & Sendable>: Codable, Sendable, Hashable {
        var value: Value

        init(_ value: Value) { self.value = value }

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let text = try? container.decode(String.self) {
                guard let value = Value(text) else {
                    throw DecodingError.dataCorruptedError(
                        in: container, debugDescription: "not a \(Value.self): \(text.prefix(40))")
                }
                self.value = value
            } else {
                value = try container.decode(Value.self)
            }
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(String(value))
        }
    }

    typealias EtcdInt64 = EtcdInteger<Int64>
    typealias EtcdUInt64 = EtcdInteger<UInt64>

    /// Every response's header: which cluster answered, at which revision of the store. (Fields the mirror does
    /// not use, such as `member_id` and `raft_term`, are not decoded.)
    struct EtcdResponseHeader: Decodable, Sendable {
        var cluster_id: EtcdUInt64?
        var revision: EtcdInt64?
    }

    /// A key and its value as etcd stores them (`mvccpb.KeyValue`).
    struct EtcdKeyValue: Decodable, Sendable {
        var key: Data?
        var value: Data?
        var create_revision: EtcdInt64?
        var mod_revision: EtcdInt64?
    }

    /// A read of one key or a range: at the current revision, or at `revision` (an earlier one etcd still holds);
    /// sorted (`sort_order` "ASCEND"/"DESCEND", `sort_target` "KEY"/"MOD"/…) and limited.
    struct EtcdRangeRequest: Encodable, Sendable {
        var key: Data
        var range_end: Data?
        var limit: EtcdInt64?
        var revision: EtcdInt64?
        var sort_order: String?
        var sort_target: String?
        var keys_only: Bool?
        var count_only: Bool?
    }

    struct EtcdRangeResponse: Decodable, Sendable {
        var header: EtcdResponseHeader?
        var kvs: [EtcdKeyValue]?
        /// How many keys the range holds, whatever the limit.
        var count: EtcdInt64?
    }

    struct EtcdPutRequest: Encodable, Sendable {
        var key: Data
        var value: Data
        /// The lease the key is attached to: it is deleted when the lease ends.
        var lease: EtcdInt64?
    }

    struct EtcdDeleteRangeRequest: Encodable, Sendable {
        var key: Data
        var range_end: Data?
    }

    /// One comparison of a transaction: a key's `mod_revision` (0 for a key that does not exist), or its `lease`.
    struct EtcdCompare: Encodable, Sendable {
        var key: Data
        var target = "MOD"
        var result = "EQUAL"
        var mod_revision: EtcdInt64?
        var lease: EtcdInt64?

        init(key: Data, modRevision: Int64) {
            self.key = key
            mod_revision = EtcdInt64(modRevision)
        }

        /// The key is attached to `lease` (0: the key has no lease, or does not exist).
        init(key: Data, lease: Int64) {
            self.key = key
            target = "LEASE"
            self.lease = EtcdInt64(lease)
        }
    }

    /// One operation of a transaction.
    struct EtcdRequestOp: Encodable, Sendable {
        var request_put: EtcdPutRequest?
        var request_delete_range: EtcdDeleteRangeRequest?
    }

    struct EtcdTxnRequest: Encodable, Sendable {
        var compare: [EtcdCompare]
        var success: [EtcdRequestOp]
        var failure: [EtcdRequestOp]
    }

    struct EtcdTxnResponse: Decodable, Sendable {
        var header: EtcdResponseHeader?
        var succeeded: Bool?
    }

    /// A lease of `TTL` seconds (`/v3/lease/grant`); etcd chooses the ID.
    struct EtcdLeaseGrantRequest: Encodable, Sendable {
        var TTL: EtcdInt64
    }

    struct EtcdLeaseGrantResponse: Decodable, Sendable {
        var ID: EtcdInt64?
        var TTL: EtcdInt64?
        var error: String?
    }

    /// The ID of a lease to keep alive (`/v3/lease/keepalive`, one message of the stream) or to end
    /// (`/v3/lease/revoke`).
    struct EtcdLeaseRequest: Encodable, Sendable {
        var ID: EtcdInt64
    }

    /// A keep-alive's answer: the lease's new time to live, absent when the lease had already expired.
    struct EtcdLeaseKeepAliveResponse: Decodable, Sendable {
        var ID: EtcdInt64?
        var TTL: EtcdInt64?
    }

    /// The one line of the keep-alive stream the gateway answers a single request with.
    struct EtcdLeaseKeepAliveLine: Decodable, Sendable {
        var result: EtcdLeaseKeepAliveResponse?
        var error: EtcdStreamError?
    }

    struct EtcdEmptyResponse: Decodable, Sendable {
        var header: EtcdResponseHeader?
    }

    struct EtcdAuthenticateRequest: Encodable, Sendable {
        var name: String
        var password: String
    }

    struct EtcdAuthenticateResponse: Decodable, Sendable {
        var token: String?
    }

    struct EtcdWatchCreateRequest: Encodable, Sendable {
        var key: Data
        var range_end: Data?
        var start_revision: EtcdInt64?
    }

    struct EtcdWatchRequest: Encodable, Sendable {
        var create_request: EtcdWatchCreateRequest
    }

    /// One event of a watch (`mvccpb.Event`): `type` is absent for a put, "DELETE" for a deletion.
    struct EtcdEvent: Decodable, Sendable {
        var type: String?
        var kv: EtcdKeyValue?
    }

    struct EtcdWatchResponse: Decodable, Sendable {
        var header: EtcdResponseHeader?
        /// The first response of a watch: its header's revision is the store's when the watch was made, which
        /// says nothing of the events before it (they may still be replayed).
        var created: Bool?
        var canceled: Bool?
        var compact_revision: EtcdInt64?
        var cancel_reason: String?
        var events: [EtcdEvent]?
    }

    /// One line of the gateway's watch stream: a response, or the error that ended the stream.
    struct EtcdWatchStreamLine: Decodable, Sendable {
        var result: EtcdWatchResponse?
        var error: EtcdStreamError?
    }

    /// The body of an error answer: `{"error": "...", "message": "...", "code": 14}` (a gRPC status code).
    struct EtcdErrorBody: Decodable, Sendable {
        var error: String?
        var message: String?
        var code: Int?
    }

    /// The error that ends a watch stream: `{"error": {"grpc_code": 14, "http_code": 503, "message": "etcdserver:
    /// no leader"}}` (its `error` member is an object, not a string).
    struct EtcdStreamError: Decodable, Sendable {
        var message: String?
        var grpc_code: Int?
    }
#endif
