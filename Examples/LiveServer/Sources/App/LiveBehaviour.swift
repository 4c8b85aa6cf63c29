import Configuration
import Foundation
import Hummingbird
import LiveDefaults
import LiveDefaultsConfiguration
import Logging
import ServiceLifecycle
import Synchronization

/// What the settings do: `GET /hello` answers with the greeting, honours the API key, maintenance mode and
/// the rate limit, and logs at the configured level. Every request reads the settings live, so a change from
/// a shell applies to the next request.
///
/// Two ways to read them, side by side: the plain settings through swift-configuration's `ConfigReader` over
/// a ``LiveDefaultsProvider`` (what a server that reads other providers too would write), the structured
/// ones (feature flags, the log level, followed with a typed update stream) through typed keys.
final class LiveBehaviour: Service, Sendable {
    private let defaults: Defaults
    private let config: ConfigReader
    private let logger: Mutex<Logger>
    /// Requests served in the current minute, for the rate limit.
    private let window = Mutex<(minute: Int, count: Int)>((0, 0))

    init(defaults: Defaults, logger: Logger) {
        self.defaults = defaults
        self.config = ConfigReader(provider: LiveDefaultsProvider(defaults: defaults))
        self.logger = Mutex(logger)
    }

    func hello(_ request: Request) -> Response {
        let apiKey = defaults[.apiKey]
        if !apiKey.isEmpty,
            !Self.same(request.headers.first { $0.name.canonicalName == "x-api-key" }?.value ?? "", apiKey)
        {
            return json(["error": "GET /hello requires the header X-API-Key"], status: .unauthorized)
        }
        if config.bool(forKey: "Maintenance", default: false) {
            return json(["error": "down for maintenance"], status: .serviceUnavailable)
        }
        let minute = Int(Date().timeIntervalSince1970 / 60)
        let limit = config.int(forKey: "RateLimit", default: DefaultsKeys.rateLimit.defaultValue)
        let allowed = window.withLock { window in
            if window.minute != minute { window = (minute, 0) }
            window.count += 1
            return window.count <= limit
        }
        guard allowed else {
            return json(["error": "rate limit of \(limit) requests per minute reached"], status: .tooManyRequests)
        }
        logger.withLock { $0 }.debug("GET /hello")
        let features = defaults[.features]
        var answer: [String: Any] = [
            "greeting": config.string(forKey: "Greeting", default: DefaultsKeys.greeting.defaultValue)
        ]
        if let banner = features.banner { answer["banner"] = banner }
        if features.search, let query = request.uri.queryParameters.get("q") { answer["query"] = query }
        return json(answer)
    }

    /// Whether two secrets are equal, in a time that does not tell how much of them matches.
    static func same(_ given: String, _ secret: String) -> Bool {
        let given = Array(given.utf8)
        let secret = Array(secret.utf8)
        var difference = given.count == secret.count ? 0 : 1
        for index in secret.indices { difference |= Int(secret[index] ^ (index < given.count ? given[index] : 0)) }
        return difference == 0
    }

    /// Follows the log level for as long as the server runs.
    func run() async throws {
        // The loop ends when the service group shuts down gracefully.
        await cancelWhenGracefulShutdown {
            for await level in self.defaults.updates(.logLevel) {
                let changed = self.logger.withLock { logger in
                    defer { logger.logLevel = level.level }
                    return logger.logLevel != level.level
                }
                if changed { self.logger.withLock { $0 }.notice("log level is now \(level.rawValue)") }
            }
        }
    }
}
