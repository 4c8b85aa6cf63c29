import Foundation
import Hummingbird
import LiveDefaults
import ServiceLifecycle

/// `GET /settings`, `GET /settings/schema`, `GET /settings/sources`, `PUT /settings/{key}`, `PUT /settings`, `GET /events`: every route works from the
/// domain's published schema (``SettingsCatalog``), none knows a key.
struct SettingsController: Sendable {
    let catalog: SettingsCatalog
    let options: ServerOptions

    func addRoutes(to router: Router<BasicRequestContext>) {
        router.get("settings") { _, _ in json(catalog.snapshot(catalog.schema())) }
        router.get("settings/schema") { _, _ in json(catalog.form(catalog.schema())) }
        router.get("settings/types") { _, _ in json(catalog.schema().keys.mapValues(\.accepted)) }
        router.get("settings/sources") { _, _ in json(catalog.sources(catalog.schema())) }
        router.put("settings/:key") { request, context in try await put(request, context) }
        router.put("settings") { request, context in try await putAll(request, context) }
        router.get("events") { request, _ in events(request) }
    }

    /// Why editing is not allowed for this request (401, 403), or nil.
    func refusal(_ request: Request) -> Response? {
        if let token = options.token {
            guard request.headers[.authorization] == "Bearer \(token)" else {
                return json(["error": "editing requires Authorization: Bearer <token>"], status: .unauthorized)
            }
        } else if !options.listensOnLoopback {
            return json(
                [
                    "error":
                        "editing is disabled: the server listens on \(options.host), beyond loopback, and has no --token"
                ],
                status: .forbidden)
        }
        return nil
    }

    /// The answer to a setting that was not stored.
    func response(to error: SettingError) -> Response {
        switch error {
        case .unknown(let message): json(["error": message], status: .notFound)
        case .invalid(let message): json(["error": message], status: .unprocessableContent)
        case .refused(let message): json(["error": message], status: .conflict)
        }
    }

    /// Validates and stores several settings (a JSON object, name → value) as one change: all of them or none
    /// (the first refusal's status and message, as for one setting); a page following `/events` shows them
    /// together. Answers with the stored values, all from one version.
    func putAll(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        if let refused = refusal(request) { return refused }
        let body = try await request.body.collect(upTo: 256 * 1024)
        guard let settings = try? JSONSerialization.jsonObject(with: Data(buffer: body)) as? [String: Any] else {
            return json(
                ["error": "the body must be a JSON object of settings, for example {\"RateLimit\": 120}"],
                status: .badRequest)
        }
        let schema = catalog.schema()
        do throws(SettingError) {
            try catalog.write(settings, schema: schema)
        } catch {
            return response(to: error)
        }
        return json(catalog.snapshot(schema).filter { settings[$0.key] != nil })
    }

    /// Validates and stores one setting. 401/403 when editing is not allowed, 404 for an unknown key,
    /// 400 for a body that is not JSON, 422 for a value the key's schema refuses, 409 when the key is forced.
    func put(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        if let refused = refusal(request) { return refused }
        let key = context.parameters.get("key") ?? ""
        let body = try await request.body.collect(upTo: 64 * 1024)
        guard let value = try? JSONSerialization.jsonObject(with: Data(buffer: body), options: [.fragmentsAllowed])
        else {
            return json(
                ["error": "the body must be a JSON value, for example 42, true or \"text\""], status: .badRequest)
        }
        let schema = catalog.schema()
        do throws(SettingError) {
            try catalog.write(key, json: value, schema: schema)
        } catch {
            return response(to: error)
        }
        return json([key: schema.keys[key].map { catalog.value(of: $0) } ?? NSNull()])
    }

    /// Server-sent events: first `settings` with every value, then one `change` event per change of a
    /// setting, whoever made it, with every setting's value from one version (`values`) and the change's
    /// ``KeyChange/batch``. `?max=N` ends the stream after N changes (for scripts and tests).
    ///
    /// The stream ends as soon as the client disconnects (the handler is cancelled when the connection's
    /// inbound side closes) and when the server shuts down gracefully (SIGTERM): without both, a connected
    /// page would keep the server from ever stopping.
    func events(_ request: Request) -> Response {
        let limit = request.uri.queryParameters.get("max", as: Int.self)
        let catalog = self.catalog
        return Response(
            status: .ok,
            headers: [.contentType: "text/event-stream", .cacheControl: "no-cache"],
            body: ResponseBody { writer in
                do {
                    try await request.body.consumeWithCancellationOnInboundClose { _ in
                        // Subscribed before the first event is written, so no change can fall in between.
                        var changes = catalog.defaults.changes().cancelOnGracefulShutdown().makeAsyncIterator()
                        let schema = catalog.schema()
                        try await writer.write(ByteBuffer(string: Self.event("settings", catalog.snapshot(schema))))
                        var sent = 0
                        while limit.map({ sent < $0 }) ?? true, let change = await changes.next() {
                            guard let key = schema.keys[change.key] else { continue }
                            // Every setting from one version: a change made with others (a transaction, another
                            // program's new file) arrives whole, whichever of its keys comes first.
                            let values = catalog.snapshot(schema)
                            var payload: [String: Any] = [
                                "key": change.key, "value": values[change.key] ?? NSNull(),
                                "origin": change.origin.rawValue, "values": values, "batch": change.batch,
                            ]
                            if let problem = catalog.problem(of: key) { payload["refused"] = problem }
                            try await writer.write(ByteBuffer(string: Self.event("change", payload)))
                            sent += 1
                        }
                    }
                } catch is CancellationError {
                    // The client went away: nobody to finish the response for.
                    return
                }
                try await writer.finish(nil)
            })
    }

    static func event(_ name: String, _ payload: Any) -> String {
        let data = (try? JSONSerialization.data(withJSONObject: payload, options: [.sortedKeys])) ?? Data("{}".utf8)
        return "event: \(name)\ndata: \(String(decoding: data, as: UTF8.self))\n\n"
    }
}
