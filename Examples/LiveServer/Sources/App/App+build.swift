import Foundation
import Hummingbird
import LiveDefaults
import LiveDefaultsService
import Logging
import Prometheus

/// How the server runs.
public struct ServerOptions: Sendable {
    /// The address to listen on; loopback by default, so that only this machine can edit the settings.
    public var host = "127.0.0.1"
    /// The TCP port to listen on.
    public var port = 8080
    /// When set, `PUT /settings/{key}` requires `Authorization: Bearer <token>`. Without a token, editing is
    /// allowed only while the server listens on loopback.
    public var token: String?

    /// Where to listen, and the token that guards the settings endpoints (nil: none).
    public init(host: String = "127.0.0.1", port: Int = 8080, token: String? = nil) {
        self.host = host
        self.port = port
        self.token = token
    }

    var listensOnLoopback: Bool { ["127.0.0.1", "::1", "localhost"].contains(host) }
}

/// The server's application domain.
public let serverDomain = "com.example.liveserver"
/// The prefix of the environment variables that set the server's settings (`LIVESERVER_RATE_LIMIT=200`,
/// `LIVESERVER_API_KEY_FILE=/run/secrets/api_key`): they beat the settings file, and the page says so.
public let serverEnvironmentPrefix = "LIVESERVER_"

/// Builds the server: its routes read every setting live from `defaults`. It first publishes the schema of
/// its settings (``DefaultsKeys/serverSettings``) where the `defaults` command and other programs find it
/// (the first of `defaults.configuration.locations.schemaDirectories`), so that every writer honours it and
/// the settings page can be generated from it; a schema that cannot be written is logged, and the server
/// runs without it. With a `metrics` registry (the one the process bootstrapped swift-metrics with), `GET
/// /metrics` serves it in Prometheus' text format: the library's `livedefaults_` metrics among the server's.
public func buildApplication(
    defaults: Defaults, options: ServerOptions, logger: Logger = Logger(label: "LiveServer"),
    metrics: PrometheusCollectorRegistry? = nil,
    onServerRunning: @escaping @Sendable (_ port: Int) async -> Void = { _ in }
) -> some ApplicationProtocol {
    do {
        try defaults.publishSchema(for: DefaultsKeys.serverSettings)
    } catch {
        logger.warning("the settings' schema could not be published: \(error)")
    }
    // The rule across settings (ServerRules): a version that breaks it is refused whole, wherever it comes from.
    // Added, it judges the version the store holds before anything is served: a version refused while the server
    // was down does not run after a restart (the store runs its change log's last accepted version instead).
    defaults.addValidator(ServerRules.check)
    let catalog = SettingsCatalog(defaults: defaults, keys: DefaultsKeys.serverSettings, logger: logger)
    let router = Router()
    let behaviour = LiveBehaviour(defaults: defaults, logger: logger)
    router.get("/") { _, _ in
        Response(
            status: .ok, headers: [.contentType: "text/html; charset=utf-8"],
            body: ResponseBody(
                byteBuffer: ByteBuffer(string: Page.html(domain: defaults.configuration.applicationDomain))))
    }
    router.get("hello") { request, _ in behaviour.hello(request) }
    // Who changed which setting, newest first, from the domain's change log (the page's "Recent changes").
    let changes = RecentChanges(catalog: catalog)
    router.get("changes") { request, _ in
        let limit = request.uri.queryParameters.get("limit", as: Int.self).map { min(max($0, 1), 500) } ?? 20
        return json(changes.json(limit: limit))
    }
    // The temporary changes still to undo (`defaults write --for`): the page's "Temporary changes".
    let temporary = TemporaryChanges(catalog: catalog)
    router.get("temporary") { _, _ in json(temporary.json()) }
    // The last version of the domain this server refused, and why (its own announcement, Docs/OnDisk.md
    // "Readers"; the page's "Last refused version"); null when it refused none. `running` says what it runs
    // instead when it accepted no version of the file since it started (the file's version refused, or
    // unreadable, when it started): its change log's last known good, or its defaults.
    router.get("refusal") { _, _ in
        let own = defaults.readers().first { $0.processID == ProcessInfo.processInfo.processIdentifier }
        guard let own, own.refusal != nil || own.fallback != nil else { return json(NSNull()) }
        var object: [String: Any] = ["running": own.version.description]
        switch own.fallback {
        case .changeLog?: object["fallback"] = "changeLog"
        case .defaults?: object["fallback"] = "defaults"
        case nil: break
        }
        if let refusal = own.refusal {
            object["version"] = refusal.version.description
            object["reason"] = refusal.reason
            object["time"] = refusal.time.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
        }
        return json(object)
    }
    if let metrics {
        router.get("metrics") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: metrics.emitToBuffer())))
        }
    }
    SettingsController(catalog: catalog, options: options).addRoutes(to: router)
    return Application(
        router: router,
        configuration: .init(address: .hostname(options.host, port: options.port), serverName: "LiveServer"),
        // DefaultsService first: a group shuts its services down in reverse order, so it goes last, after the
        // behaviour's stream and the server's /events handlers have ended; it writes what is pending and ends
        // any stream still open.
        services: [DefaultsService(defaults), behaviour],
        onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? options.port) },
        logger: logger)
}

/// A JSON response.
func json(_ object: Any, status: HTTPResponse.Status = .ok) -> Response {
    let data =
        (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .fragmentsAllowed]))
        ?? Data("{}".utf8)
    return Response(
        status: status, headers: [.contentType: "application/json"],
        body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
}
