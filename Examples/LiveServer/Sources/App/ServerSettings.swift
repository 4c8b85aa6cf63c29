import Foundation
import LiveDefaults
import Logging

/// The server's behaviour, as typed keys of its domain. Change any of them while the server runs:
///
///     defaults write com.example.liveserver Greeting "Hi from the shell"
///     defaults write com.example.liveserver RateLimit -int 5
///     defaults write com.example.liveserver Maintenance -bool YES
///     defaults write com.example.liveserver LogLevel debug
///     defaults write com.example.liveserver Features -dict-add banner "Back at 5"
extension DefaultsKeys {
    /// What `GET /hello` answers.
    static let greeting = DefaultsKey<String>("Greeting", default: "Hello from LiveDefaults")
    /// Requests per minute that `GET /hello` serves before it answers 429.
    static let rateLimit = DefaultsKey<Int>("RateLimit", default: 60)
    /// When true, `GET /hello` answers 503.
    static let maintenance = DefaultsKey<Bool>("Maintenance", default: false)
    /// The level of the server's request log.
    static let logLevel = DefaultsKey<LogLevel>("LogLevel", default: .info)
    /// Feature flags, stored as a plist dictionary: `{ search = 1; banner = "…"; }`.
    static let features = DefaultsKey<Features>("Features", default: Features())
}

/// `Logger.Level`, storable.
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

/// One setting as the HTTP API sees it: how to show it as JSON and how to validate and store a new value.
struct Setting: Sendable {
    let key: String
    /// For the page and error messages: "string", "integer 1…100000", …
    let type: String
    let read: @Sendable (Defaults) -> Any
    /// Validates a JSON value and stores it; throws ``SettingError`` with a message for a person.
    let write: @Sendable (Defaults, Any) throws -> Void

    static let all: [Setting] = [
        Setting(key: "Greeting", type: "string (1–200 characters)", read: { $0[.greeting] }) { defaults, json in
            guard let text = json as? String, (1...200).contains(text.count) else {
                throw SettingError.invalid("Greeting must be a string of 1 to 200 characters, not \(describe(json))")
            }
            try store(defaults, text, .greeting)
        },
        Setting(key: "RateLimit", type: "integer 1…100000", read: { $0[.rateLimit] }) { defaults, json in
            guard let number = json as? NSNumber, !isBoolean(number), let value = Int(exactly: number.doubleValue),
                (1...100_000).contains(value)
            else {
                throw SettingError.invalid("RateLimit must be an integer from 1 to 100000, not \(describe(json))")
            }
            try store(defaults, value, .rateLimit)
        },
        Setting(key: "Maintenance", type: "boolean", read: { $0[.maintenance] }) { defaults, json in
            guard let number = json as? NSNumber, isBoolean(number) else {
                throw SettingError.invalid("Maintenance must be true or false, not \(describe(json))")
            }
            try store(defaults, number.boolValue, .maintenance)
        },
        Setting(
            key: "LogLevel", type: LogLevel.allCases.map(\.rawValue).joined(separator: "|"),
            read: { $0[.logLevel].rawValue }
        ) { defaults, json in
            guard let text = json as? String, let level = LogLevel(rawValue: text) else {
                throw SettingError.invalid(
                    "LogLevel must be one of \(LogLevel.allCases.map(\.rawValue).joined(separator: ", ")), not \(describe(json))"
                )
            }
            try store(defaults, level, .logLevel)
        },
        Setting(
            key: "Features", type: "object {search: boolean, banner: string or null}",
            read: { defaults in
                let features = defaults[.features]
                return ["search": features.search, "banner": features.banner ?? NSNull()] as [String: Any]
            }
        ) { defaults, json in
            guard let object = json as? [String: Any] else {
                throw SettingError.invalid("Features must be an object {search, banner}, not \(describe(json))")
            }
            if let unknown = object.keys.first(where: { $0 != "search" && $0 != "banner" }) {
                throw SettingError.invalid("Features has no field \"\(unknown)\" (fields: search, banner)")
            }
            var features = Features()
            if let search = object["search"] {
                guard let number = search as? NSNumber, isBoolean(number) else {
                    throw SettingError.invalid("Features.search must be true or false, not \(describe(search))")
                }
                features.search = number.boolValue
            }
            switch object["banner"] {
            case nil, is NSNull: features.banner = nil
            case let text as String: features.banner = text.isEmpty ? nil : text
            case let other?:
                throw SettingError.invalid("Features.banner must be a string or null, not \(describe(other))")
            }
            try store(defaults, features, .features)
        },
    ]

    static func named(_ key: String) -> Setting? { all.first { $0.key == key } }

    /// Every setting's current value, as a JSON object.
    static func snapshot(_ defaults: Defaults) -> [String: Any] {
        Dictionary(uniqueKeysWithValues: all.map { ($0.key, $0.read(defaults)) })
    }

    private static func store<Value>(_ defaults: Defaults, _ value: Value, _ key: DefaultsKey<Value>) throws {
        do { try defaults.trySet(value, for: key) } catch { throw SettingError.refused("\(error)") }
    }

    /// JSON numbers and Booleans both arrive as NSNumber; a Boolean has the C type `char` ("c").
    private static func isBoolean(_ number: NSNumber) -> Bool {
        String(cString: number.objCType) == "c"
    }

    private static func describe(_ json: Any) -> String {
        guard let data = try? JSONSerialization.data(withJSONObject: json, options: [.fragmentsAllowed]) else {
            return "\(json)"
        }
        return String(decoding: data, as: UTF8.self)
    }
}

enum SettingError: Error {
    /// The value does not fit the setting: 422.
    case invalid(String)
    /// The store refused it (a forced key): 409.
    case refused(String)
}
