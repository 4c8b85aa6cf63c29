import Foundation
import Hummingbird
import LiveDefaults
import ServiceLifecycle

/// `GET /settings`, `GET /settings/schema`, `PUT /settings/{key}`, `GET /events`: every route works from the
/// domain's published schema (``SettingsCatalog``), none knows a key.
struct SettingsController: Sendable {
    let catalog: SettingsCatalog
    let options: ServerOptions

    func addRoutes(to router: Router<BasicRequestContext>) {
        router.get("settings") { _, _ in json(catalog.snapshot(catalog.schema())) }
        router.get("settings/schema") { _, _ in json(catalog.form(catalog.schema())) }
        router.get("settings/types") { _, _ in json(catalog.schema().keys.mapValues(\.accepted)) }
        router.put("settings/:key") { request, context in try await put(request, context) }
        router.get("events") { request, _ in events(request) }
    }

    /// Validates and stores one setting. 401/403 when editing is not allowed, 404 for an unknown key,
    /// 400 for a body that is not JSON, 422 for a value the key's schema refuses, 409 when the key is forced.
    func put(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
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
            switch error {
            case .unknown(let message): return json(["error": message], status: .notFound)
            case .invalid(let message): return json(["error": message], status: .unprocessableContent)
            case .refused(let message): return json(["error": message], status: .conflict)
            }
        }
        return json([key: schema.keys[key].map(catalog.value(of:)) ?? NSNull()])
    }

    /// Server-sent events: first `settings` with every value, then one `change` event per change of a
    /// setting, whoever made it. `?max=N` ends the stream after N changes (for scripts and tests).
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
                            var payload: [String: Any] = [
                                "key": change.key, "value": catalog.value(of: key), "origin": change.origin.rawValue,
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
