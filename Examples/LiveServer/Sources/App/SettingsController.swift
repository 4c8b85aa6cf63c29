import Foundation
import Hummingbird
import LiveDefaults
import ServiceLifecycle

/// `GET /settings`, `PUT /settings/{key}`, `GET /events`.
struct SettingsController: Sendable {
    let defaults: Defaults
    let options: ServerOptions

    func addRoutes(to router: Router<BasicRequestContext>) {
        router.get("settings") { _, _ in json(Setting.snapshot(defaults)) }
        router.get("settings/types") { _, _ in
            json(Dictionary(uniqueKeysWithValues: Setting.all.map { ($0.key, $0.type) }))
        }
        router.put("settings/:key") { request, context in try await put(request, context) }
        router.get("events") { request, _ in events(request) }
    }

    /// Validates and stores one setting. 401/403 when editing is not allowed, 404 for an unknown key,
    /// 400 for a body that is not JSON, 422 for a value of the wrong type, 409 when the key is forced.
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
        guard let setting = Setting.named(key) else {
            return json(
                ["error": "no setting named \"\(key)\"; settings: \(Setting.all.map(\.key).joined(separator: ", "))"],
                status: .notFound)
        }
        let body = try await request.body.collect(upTo: 64 * 1024)
        guard let value = try? JSONSerialization.jsonObject(with: Data(buffer: body), options: [.fragmentsAllowed])
        else {
            return json(
                ["error": "the body must be a JSON value, for example 42, true or \"text\""], status: .badRequest)
        }
        do {
            try setting.write(defaults, value)
        } catch SettingError.invalid(let message) {
            return json(["error": message], status: .unprocessableContent)
        } catch SettingError.refused(let message) {
            return json(["error": message], status: .conflict)
        }
        return json([key: setting.read(defaults)])
    }

    /// Server-sent events: first `settings` with every value, then one `change` event per change of a
    /// setting, whoever made it. `?max=N` ends the stream after N changes (for scripts and tests).
    ///
    /// The stream ends as soon as the client disconnects (the handler is cancelled when the connection's
    /// inbound side closes) and when the server shuts down gracefully (SIGTERM): without both, a connected
    /// page would keep the server from ever stopping.
    func events(_ request: Request) -> Response {
        let limit = request.uri.queryParameters.get("max", as: Int.self)
        let known = Set(Setting.all.map(\.key))
        let defaults = self.defaults
        return Response(
            status: .ok,
            headers: [.contentType: "text/event-stream", .cacheControl: "no-cache"],
            body: ResponseBody { writer in
                do {
                    try await request.body.consumeWithCancellationOnInboundClose { _ in
                        // Subscribed before the first event is written, so no change can fall in between.
                        var changes = defaults.changes().cancelOnGracefulShutdown().makeAsyncIterator()
                        try await writer.write(ByteBuffer(string: Self.event("settings", Setting.snapshot(defaults))))
                        var sent = 0
                        while limit.map({ sent < $0 }) ?? true, let change = await changes.next() {
                            guard known.contains(change.key), let setting = Setting.named(change.key) else { continue }
                            let payload: [String: Any] = [
                                "key": change.key, "value": setting.read(defaults), "origin": change.origin.rawValue,
                            ]
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
