import Configuration
import Foundation
import Hummingbird
import LiveDefaults
import LiveDefaultsConfiguration
import Logging
import ServiceLifecycle
import Synchronization

/// What the settings do: `GET /hello` answers with the greeting, honours maintenance mode and the rate
/// limit, and logs at the configured level. Every request reads the settings live, so a change from a shell
/// applies to the next request.
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
