import Foundation
import LiveDefaults
import Logging

/// The server's behaviour, as typed keys of its domain: each says what it holds, what it accepts and what
/// it means. The server publishes their schema when it starts (``serverSettings``), so that `defaults
/// write` refuses what they refuse, and the settings page is generated from it: there is no per-key code
/// anywhere else. Change any of them while the server runs:
///
///     defaults write com.example.liveserver Greeting "Hi from the shell"
///     defaults write com.example.liveserver RateLimit -int 5
///     defaults write com.example.liveserver Maintenance -bool YES
///     defaults write com.example.liveserver LogLevel debug
///     defaults write com.example.liveserver Features -dict-add banner "Back at 5"
extension DefaultsKeys {
    /// What `GET /hello` answers.
    static let greeting = DefaultsKey<String>(
        "Greeting", default: "Hello from LiveDefaults", summary: "What GET /hello answers.")
    /// Requests per minute that `GET /hello` serves before it answers 429.
    static let rateLimit = DefaultsKey<Int>(
        "RateLimit", default: 60, summary: "Requests per minute GET /hello serves before it answers 429.",
        range: 1...100_000)
    /// When true, `GET /hello` answers 503.
    static let maintenance = DefaultsKey<Bool>(
        "Maintenance", default: false, summary: "While on, GET /hello answers 503.")
    /// The level of the server's request log.
    static let logLevel = DefaultsKey<LogLevel>(
        "LogLevel", default: .info, summary: "The level of the server's request log.")
    /// Feature flags, stored as a plist dictionary: `{ search = 1; banner = "…"; }`.
    static let features = DefaultsKey<Features>(
        "Features", default: Features(),
        summary: "Feature flags: search (echo ?q= in GET /hello) and banner (a line added to every greeting).")
    /// The key clients must send in `X-API-Key` to call `GET /hello`; empty: none needed. A secret: the
    /// page, `defaults read` and the logs show `<secret>`.
    static let apiKey = DefaultsKey<String>(
        "APIKey", default: "", summary: "The key clients must send in X-API-Key to call GET /hello; empty: none.",
        isSecret: true)

    /// Every setting of the server: published as the domain's schema at start-up, shown and edited by the
    /// settings page, checked by every writer.
    static let serverSettings: [AnyDefaultsKey] = [greeting, rateLimit, maintenance, logLevel, features, apiKey]
}

/// The server's rule across two settings, which no schema of one key can say: a server anyone may call (no
/// `APIKey`) serves at most 10,000 requests a minute. A version that breaks it — saved on the page, written from
/// a shell or by the fleet — is refused whole (`Defaults.addValidator`): the server keeps the settings it ran,
/// and the page shows why.
///
///     defaults write com.example.liveserver RateLimit -int 50000 --wait   # refused: 1, with the reason
struct ServerRules {
    /// Why a version is refused: the error's description is what the page and `defaults write --wait` print.
    struct Broken: Error, CustomStringConvertible {
        var description: String
    }

    /// The most requests a minute without an API key.
    static let openRateLimit = 10_000

    @Sendable static func check(_ candidate: DefaultsSnapshot) throws {
        let rateLimit = candidate[.rateLimit]
        if rateLimit > openRateLimit && candidate[.apiKey].isEmpty {
            throw Broken(
                description:
                    "RateLimit \(rateLimit) needs an APIKey: without one, at most \(openRateLimit) requests a minute")
        }
    }
}

/// `Logger.Level`, storable; its cases are the key's choices (a select on the page).
enum LogLevel: String, CaseIterable, Codable, DefaultsSerializable {
    case trace, debug, info, notice, warning, error, critical

    var level: Logger.Level { Logger.Level(rawValue: rawValue) ?? .info }
}

/// Feature flags: a Codable struct, stored as native plist structure.
struct Features: Codable, Equatable, DefaultsSerializable {
    /// Whether `GET /hello?q=…` echoes the query.
    var search = false
    /// A line appended to every greeting, when set.
    var banner: String?
}
