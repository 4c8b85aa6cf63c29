#if Fleet
    import AsyncHTTPClient
    import Foundation
    import Logging
    import NIOConcurrencyHelpers
    import NIOCore
    import NIOFoundationCompat
    import NIOHTTP1
    import NIOSSL

    /// etcd's v3 API through its JSON gateway, over AsyncHTTPClient: the few calls a mirror needs (range, put,
    /// transactions, a streaming watch, authentication), with failover between the endpoints.
    ///
    /// Failover: a request goes to the endpoint that answered last; when it cannot be reached, times out or
    /// answers "unavailable" (gRPC status 14: the member has no leader, or is stopping), the next endpoint is
    /// tried, each at most once per request. A watch runs against one endpoint; its caller moves on with
    /// ``endpointFailed(_:)`` when the stream breaks.
    ///
    /// Authentication: with credentials, the first request (and any that etcd answers "unauthenticated", an
    /// expired token) authenticates first (`/v3/auth/authenticate`) and sends the token in `Authorization`.
    final class EtcdClient: Sendable {
        /// Thrown by a watch's handler to end the watch because it has what it wanted; ``watch(key:rangeEnd:from:endpoint:handle:)``
        /// passes it on unchanged.
        struct WatchStop: Error {}

        let connection: EtcdConnection
        private let http: HTTPClient
        private let bases: [String]
        private let state = NIOLockedValueBox(State())

        private struct State {
            var current = 0
            var token: String?
            var requestsInProgress = 0
        }

        /// How many requests (watches included) are under way: zero whenever every caller's task has ended, which
        /// is what ``shutdown()`` needs (tests check it).
        var requestsInProgress: Int { state.withLockedValue { $0.requestsInProgress } }

        private func started() { state.withLockedValue { $0.requestsInProgress += 1 } }
        private func ended() { state.withLockedValue { $0.requestsInProgress -= 1 } }

        /// The largest answer or watch line accepted (etcd's own request limit is 1.5 MiB by default; a watch
        /// line may batch many events).
        static let maximumResponseBytes = 64 << 20

        /// A client for the connection's endpoints.
        ///
        /// - Throws: ``FleetError/Code-swift.enum/invalidOption`` when a TLS file cannot be read.
        init(connection: EtcdConnection) throws(FleetError) {
            self.connection = connection
            bases = connection.endpoints.map { url in
                var text = url.absoluteString
                while text.hasSuffix("/") { text.removeLast() }
                return text
            }
            var configuration = HTTPClient.Configuration()
            let usesTLS = connection.endpoints.contains { $0.scheme?.lowercased() == "https" }
            if usesTLS || connection.caCertificate != nil || connection.certificate != nil {
                configuration.tlsConfiguration = try Self.tlsConfiguration(connection)
            }
            // A connection attempt to a member that is down fails fast on loopback (refused); a host that drops
            // packets would hold a request for the whole default 10 s.
            configuration.timeout = HTTPClient.Configuration.Timeout(connect: .seconds(2), read: nil)
            http = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        }

        private static func tlsConfiguration(_ connection: EtcdConnection) throws(FleetError) -> TLSConfiguration {
            var tls = TLSConfiguration.makeClientConfiguration()
            for path in [connection.caCertificate, connection.certificate, connection.privateKey].compactMap({ $0 })
            where !FileManager.default.isReadableFile(atPath: path) {
                throw FleetError(.invalidOption, "cannot read the TLS file \(path)")
            }
            if let ca = connection.caCertificate { tls.trustRoots = .file(ca) }
            if let certificate = connection.certificate, let key = connection.privateKey {
                do {
                    tls.certificateChain = try NIOSSLCertificate.fromPEMFile(certificate).map { .certificate($0) }
                } catch {
                    throw FleetError(.invalidOption, "\(certificate) holds no PEM certificate: \(error)")
                }
                do {
                    tls.privateKey = .privateKey(try NIOSSLPrivateKey(file: key, format: .pem))
                } catch {
                    throw FleetError(.invalidOption, "\(key) holds no PEM private key: \(error)")
                }
            }
            return tls
        }

        /// Runs `body` with a client of its own for `connection`, shut down afterwards whether `body` succeeded or
        /// not (for one-off commands: history, rollback).
        static func using<Value>(
            _ connection: EtcdConnection, _ body: (EtcdClient) async throws(FleetError) -> Value
        ) async throws(FleetError) -> Value {
            let client = try EtcdClient(connection: connection)
            let result: Result<Value, FleetError>
            do throws(FleetError) { result = .success(try await body(client)) } catch { result = .failure(error) }
            await client.shutdown()
            return try result.get()
        }

        /// Closes every connection. The client cannot be used afterwards.
        func shutdown() async {
            try? await http.shutdown()
        }

        /// The endpoint requests go to now (an index into the connection's endpoints).
        var currentEndpoint: Int { state.withLockedValue { $0.current } }

        /// The URL of an endpoint, for messages.
        func endpointName(_ index: Int) -> String { bases[index % bases.count] }

        /// Moves on from an endpoint that failed, unless another caller moved on already.
        func endpointFailed(_ index: Int) {
            state.withLockedValue { state in
                if state.current == index { state.current = (index + 1) % bases.count }
            }
        }

        // MARK: Calls

        /// The keys from `key` up to `rangeEnd` (just `key` when nil) with their values, at the current revision
        /// or at an earlier one etcd still holds.
        ///
        /// - Throws: ``FleetError/Code-swift.enum/compacted`` when `revision` was compacted away.
        func range(key: Data, rangeEnd: Data?, revision: Int64? = nil) async throws(FleetError) -> EtcdRangeResponse {
            try await call(
                "/v3/kv/range", EtcdRangeRequest(key: key, range_end: rangeEnd, revision: revision.map(EtcdInt64.init)))
        }

        /// What a health check learned of a range: the cluster's revision when it was read, how many keys the
        /// range holds, and the revision of the newest write among them (0 when it is empty).
        struct RangeSummary: Sendable, Equatable {
            var revision: Int64
            var count: Int64
            var newestModification: Int64
        }

        /// A linearizable read of the range's newest key (by modification, key only) and its key count: answered
        /// only by a member that has a leader, so a cheap check that the endpoint is part of a working cluster,
        /// and what the mirror compares with what it applied to tell whether it is behind.
        func checkHealth(key: Data, rangeEnd: Data, endpoint: Int) async throws(FleetError) -> RangeSummary {
            let answer: EtcdRangeResponse = try await call(
                "/v3/kv/range",
                EtcdRangeRequest(
                    key: key, range_end: rangeEnd, limit: EtcdInt64(1), sort_order: "DESCEND", sort_target: "MOD",
                    keys_only: true),
                at: endpoint)
            guard let revision = answer.header?.revision?.value else {
                throw FleetError(.malformedResponse, "etcd's answer to a range has no revision")
            }
            return RangeSummary(
                revision: revision, count: answer.count?.value ?? 0,
                newestModification: answer.kvs?.first?.mod_revision?.value ?? 0)
        }

        func txn(_ request: EtcdTxnRequest) async throws(FleetError) -> EtcdTxnResponse {
            try await call("/v3/kv/txn", request)
        }

        /// Sends a request to the current endpoint, then to each other endpoint while they fail to answer.
        func call<Request: Encodable & Sendable, Response: Decodable & Sendable>(
            _ path: String, _ request: Request
        ) async throws(FleetError) -> Response {
            let first = currentEndpoint
            var failure = FleetError(.unreachable, "no etcd endpoint")
            for attempt in 0..<bases.count {
                let index = (first + attempt) % bases.count
                do {
                    return try await call(path, request, at: index)
                } catch  where error.code == .unreachable {
                    endpointFailed(index)
                    failure = error
                }
            }
            throw failure
        }

        /// Sends a request to one endpoint, authenticating first when the connection has credentials and no
        /// token is held, and once more when etcd says the token expired.
        private func call<Request: Encodable & Sendable, Response: Decodable & Sendable>(
            _ path: String, _ request: Request, at index: Int
        ) async throws(FleetError) -> Response {
            let body = try Self.encode(request)
            var token = try await tokenIfNeeded(at: index, renew: false)
            do {
                return try Self.decode(Response.self, from: try await post(path, body: body, token: token, at: index))
            } catch  where error.code == .authenticationFailed && connection.credentials != nil {
                token = try await tokenIfNeeded(at: index, renew: true)
                return try Self.decode(Response.self, from: try await post(path, body: body, token: token, at: index))
            }
        }

        private func tokenIfNeeded(at index: Int, renew: Bool) async throws(FleetError) -> String? {
            guard let credentials = connection.credentials else { return nil }
            if !renew, let token = state.withLockedValue({ $0.token }) { return token }
            let body = try Self.encode(EtcdAuthenticateRequest(name: credentials.name, password: credentials.password))
            let answer = try Self.decode(
                EtcdAuthenticateResponse.self,
                from: try await post("/v3/auth/authenticate", body: body, token: nil, at: index))
            guard let token = answer.token, !token.isEmpty else {
                throw FleetError(
                    .authenticationFailed, "\(endpointName(index)) gave no token for user \(credentials.name)")
            }
            state.withLockedValue { $0.token = token }
            return token
        }

        /// One POST of a JSON body; the answer's bytes on success, a ``FleetError`` otherwise.
        private func post(_ path: String, body: Data, token: String?, at index: Int) async throws(FleetError)
            -> ByteBuffer
        {
            let request = makeRequest(path, body: body, token: token, at: index)
            started()
            defer { ended() }
            do {
                let response = try await http.execute(request, timeout: TimeAmount(clamping: connection.requestTimeout))
                let bytes = try await response.body.collect(upTo: Self.maximumResponseBytes)
                if response.status.code / 100 != 2 {
                    throw Self.failure(status: response.status, body: bytes, endpoint: bases[index])
                }
                return bytes
            } catch let error as FleetError {
                throw error
            } catch {
                throw FleetError(.unreachable, "\(bases[index]) did not answer \(path): \(error)")
            }
        }

        private func makeRequest(_ path: String, body: Data, token: String?, at index: Int) -> HTTPClientRequest {
            var request = HTTPClientRequest(url: bases[index] + path)
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "application/json")
            if let token { request.headers.add(name: "Authorization", value: token) }
            request.body = .bytes(ByteBuffer(data: body))
            return request
        }

        /// The error an answer other than 2xx stands for. What a member says of itself rather than of the request
        /// counts as unreachable, so that the request is tried again (on the next endpoint): gRPC status 14
        /// (unavailable), 1 (cancelled: the gateway's connection to its member closed under the request, as when
        /// the member stops; HTTP 408) and 4 (deadline exceeded), and HTTP 408, 503 and 504 without a status.
        /// 16 (unauthenticated) is a token to renew; anything else is etcd refusing the request.
        static func failure(status: HTTPResponseStatus, body: ByteBuffer, endpoint: String) -> FleetError {
            let parsed = try? JSONDecoder().decode(EtcdErrorBody.self, from: Data(buffer: body))
            let message = parsed?.message ?? parsed?.error ?? String(buffer: body).prefix(200).description
            let text = "\(endpoint) answered \(status.code): \(message)"
            switch parsed?.code {
            case 11 where message.contains("compacted"): return FleetError(.compacted, text)
            case 1, 4, 14: return FleetError(.unreachable, text)
            case 16: return FleetError(.authenticationFailed, text)
            case 7: return FleetError(.authenticationFailed, text)
            default: return FleetError([408, 503, 504].contains(status.code) ? .unreachable : .etcdError, text)
            }
        }

        static func encode(_ value: some Encodable) throws(FleetError) -> Data {
            do { return try JSONEncoder().encode(value) } catch {
                throw FleetError(.invalidOption, "cannot encode a request for etcd: \(error)")
            }
        }

        static func decode<Value: Decodable>(_ type: Value.Type, from bytes: ByteBuffer) throws(FleetError) -> Value {
            do { return try JSONDecoder().decode(type, from: Data(buffer: bytes)) } catch {
                throw FleetError(.malformedResponse, "etcd's answer could not be read: \(error)")
            }
        }

        // MARK: Watch

        /// Watches the keys from `key` up to `rangeEnd` starting at `revision` on one endpoint, handing each
        /// response to `handle` in order, until the task is cancelled or the stream breaks.
        ///
        /// The request asks the member to cancel the watch when it loses its leader (the `hasleader` metadata
        /// etcd's own clients send), so that a watch on the minority side of a partition ends instead of
        /// staying silent.
        ///
        /// - Throws: ``FleetError/Code-swift.enum/compacted`` when `revision` was compacted away (its
        ///   `compactRevision` says from where etcd still holds events),
        ///   ``FleetError/Code-swift.enum/unreachable`` when the stream could not be opened or ended, and
        ///   ``WatchStop`` or a ``FleetError`` when `handle` throws one (another error of `handle`'s is reported
        ///   as a broken watch).
        func watch(
            key: Data, rangeEnd: Data?, from revision: Int64, endpoint index: Int,
            handle: (EtcdWatchResponse) async throws -> Void
        ) async throws {
            let body = try Self.encode(
                EtcdWatchRequest(
                    create_request: EtcdWatchCreateRequest(
                        key: key, range_end: rangeEnd, start_revision: EtcdInt64(revision))))
            let token = try await tokenIfNeeded(at: index, renew: false)
            var request = makeRequest("/v3/watch", body: body, token: token, at: index)
            started()
            defer { ended() }
            request.headers.add(name: "Grpc-Metadata-hasleader", value: "true")
            let response: HTTPClientResponse
            do {
                response = try await http.execute(request, deadline: .distantFuture)
            } catch {
                throw FleetError(.unreachable, "\(bases[index]) did not open a watch: \(error)")
            }
            guard response.status.code / 100 == 2 else {
                let bytes = (try? await response.body.collect(upTo: 1 << 16)) ?? ByteBuffer()
                throw Self.failure(status: response.status, body: bytes, endpoint: bases[index])
            }
            var pending = ByteBuffer()
            do {
                for try await chunk in response.body {
                    var chunk = chunk
                    pending.writeBuffer(&chunk)
                    while let newline = pending.readableBytesView.firstIndex(of: UInt8(ascii: "\n")) {
                        let length = newline - pending.readerIndex
                        guard let line = pending.readSlice(length: length) else { break }
                        pending.moveReaderIndex(forwardBy: 1)
                        try await handle(try Self.watchResponse(line, endpoint: bases[index]))
                    }
                    if pending.readableBytes > Self.maximumResponseBytes {
                        throw FleetError(.malformedResponse, "\(bases[index]) sent a watch line over 64 MiB")
                    }
                    pending.discardReadBytes()
                }
            } catch let error as FleetError {
                throw error
            } catch is CancellationError {
                throw CancellationError()
            } catch let stop as WatchStop {
                throw stop
            } catch {
                if Task.isCancelled { throw CancellationError() }
                throw FleetError(.unreachable, "the watch on \(bases[index]) broke: \(error)")
            }
            if Task.isCancelled { throw CancellationError() }
            throw FleetError(.unreachable, "\(bases[index]) ended the watch stream")
        }

        static func watchResponse(_ line: ByteBuffer, endpoint: String) throws(FleetError) -> EtcdWatchResponse {
            let parsed = try decode(EtcdWatchStreamLine.self, from: line)
            if let error = parsed.error {
                // 14 (unavailable) is how a member that lost its leader ends a `hasleader` watch.
                let text = "\(endpoint) ended the watch: \(error.message ?? "an error")"
                throw FleetError(
                    error.grpc_code == 16 || error.grpc_code == 7 ? .authenticationFailed : .unreachable, text)
            }
            guard let result = parsed.result else {
                throw FleetError(.malformedResponse, "\(endpoint) sent a watch line without a result")
            }
            if result.canceled == true {
                if let compacted = result.compact_revision, compacted.value > 0 {
                    var error = FleetError(
                        .compacted, "\(endpoint): the watch's revision was compacted (now \(compacted.value))")
                    error.compactRevision = compacted.value
                    throw error
                }
                throw FleetError(
                    .unreachable, "\(endpoint) cancelled the watch: \(result.cancel_reason ?? "no reason given")")
            }
            return result
        }
    }

    extension TimeAmount {
        /// A duration as a request timeout: at least a nanosecond, and the longest there is instead of an
        /// overflow. (The core's own conversion is `package`; this module works over its public API.)
        init(clamping duration: Duration) {
            let parts = duration.components
            let whole = parts.seconds.multipliedReportingOverflow(by: 1_000_000_000)
            let total = whole.partialValue.addingReportingOverflow(parts.attoseconds / 1_000_000_000)
            let overflow = whole.overflow || total.overflow
            self = .nanoseconds(overflow ? (parts.seconds < 0 ? 1 : .max) : max(1, total.partialValue))
        }
    }
#endif
