import Foundation
public import LiveDefaults

/// A small command-line app that remembers its preferences between runs.
///
/// It shows the parts of the defaults model a program meets first:
/// - registration defaults (`register(defaults:)`): the values a key has until someone sets it;
/// - the application domain: what `set` writes, kept in `$XDG_CONFIG_HOME/com.example.preferences.plist`;
/// - a suite shared with other tools (`com.example.shared`), searched after the application domain;
/// - the argument domain: `-Greeting Howdy` on the command line wins over everything, for this run only.
extension DefaultsKeys {
    static let greeting = DefaultsKey<String>("Greeting", default: "Hello")
    static let name = DefaultsKey<String>("Name", default: "world")
    static let launches = DefaultsKey<Int>("Launches", default: 0)
    static let shout = DefaultsKey<Bool>("Shout", default: false)
    static let lastLaunch = DefaultsKey<Date?>("LastLaunch")
}

/// The preferences the app uses, as properties backed by typed keys: reads are live, assignments are
/// stored at once.
struct Preferences {
    @Default<String> var greeting: String
    @Default<String> var name: String
    @Default<Int> var launches: Int
    @Default<Bool> var shout: Bool
    @Default<Date?> var lastLaunch: Date?

    init(store: Defaults) {
        _greeting = Default(.greeting, store: store)
        _name = Default(.name, store: store)
        _launches = Default(.launches, store: store)
        _shout = Default(.shout, store: store)
        _lastLaunch = Default(.lastLaunch, store: store)
    }
}

/// The example's command-line app: reads and edits its settings through typed keys.
public struct PreferencesApp: Sendable {
    /// The application domain.
    public static let domain = "com.example.preferences"
    /// A domain that several tools of the same vendor share.
    public static let sharedSuite = "com.example.shared"

    /// Factory settings in the registration domain: what a key reads until somebody sets it (they win over
    /// the keys' own defaults, and `defaults read` never shows them, since they are not stored).
    public static let registered: [String: PropertyList] = [
        "Greeting": "Hello",
        "Shout": false,
    ]

    /// The app's own store.
    public let defaults: Defaults
    /// The store of the settings shared with other apps (a suite).
    public let shared: Defaults

    /// An app whose files live in `locations`, with `arguments` parsed into the argument domain.
    public init(locations: DefaultsLocations = .current, arguments: [String]) throws {
        var configuration = Defaults.Configuration(
            locations: locations, applicationDomain: Self.domain, arguments: arguments)
        configuration.languages = []
        defaults = try Defaults(configuration: configuration)
        defaults.register(defaults: Self.registered)
        defaults.addSuite(named: Self.sharedSuite)
        // The shared suite's own store: the suite takes the application domain's place.
        var sharedConfiguration = configuration
        sharedConfiguration.applicationDomain = Self.sharedSuite
        shared = try Defaults(configuration: sharedConfiguration)
    }

    /// Runs one command and returns what to print.
    ///
    /// - `[]`: greet, count the launch, and show every preference with the domain it came from;
    /// - `["set", key, value]`: store a value in the application domain (old-style plist syntax: `42`,
    ///   `YES`, `"two words"`, `(a, b)`);
    /// - `["share", key, value]`: store a value in the shared suite;
    /// - `["remove", key]`: remove a key from the application domain, so a lower domain shows through;
    /// - `["reset"]`: forget everything this app stored.
    public func run(_ words: [String]) throws -> String {
        switch words.first {
        case nil:
            return greet()
        case "set" where words.count == 3:
            try defaults.trySet(Self.parse(words[2]), forKey: words[1])
            return "\(words[1]) = \(defaults.value(forKey: words[1]).map { "\($0)" } ?? "(nothing)")"
        case "share" where words.count == 3:
            try shared.trySet(Self.parse(words[2]), forKey: words[1])
            return "\(words[1]) = \(Self.parse(words[2])) in \(Self.sharedSuite), for every tool that adds the suite"
        case "remove" where words.count == 2:
            defaults.removeObject(forKey: words[1])
            return "\(words[1]) is now \(describe(words[1]))"
        case "reset" where words.count == 1:
            defaults.removePersistentDomain(forName: Self.domain)
            return "Forgot everything in \(Self.domain)."
        default:
            return Self.usage
        }
    }

    /// The help text.
    public static let usage = """
        usage: preferences [-Key value …]          greet, count the launch, show the preferences
               preferences set <key> <value>       store a value (42, YES, "two words", (a, b))
               preferences share <key> <value>     store a value in the shared suite
               preferences remove <key>            remove a value, so a lower domain shows through
               preferences reset                   forget everything
        """

    private func greet() -> String {
        let preferences = Preferences(store: defaults)
        preferences.launches += 1
        let previous = preferences.lastLaunch
        preferences.lastLaunch = Date()
        var greeting = "\(preferences.greeting), \(preferences.name)!"
        if preferences.shout { greeting = greeting.uppercased() }
        var lines = [greeting, "This is launch number \(preferences.launches)."]
        if let previous { lines.append("Last launch: \(previous.formatted(.iso8601)).") }
        lines.append("")
        lines.append("Preferences, first domain in the search list wins:")
        let keys = Set(defaults.dictionaryRepresentationValues().keys).union([
            "Greeting", "Name", "Launches", "Shout",
        ])
        for key in keys.sorted() {
            lines.append("  \(key) = \(describe(key))")
        }
        lines.append("")
        lines.append("Stored in \(defaults.configuration.locations.path(forDomain: Self.domain, layer: .currentUser))")
        return lines.joined(separator: "\n")
    }

    /// A key's effective value and the domain it comes from.
    public func describe(_ key: String) -> String {
        guard let value = defaults.value(forKey: key) else {
            let keyDefault: String? =
                switch key {
                case "Name": DefaultsKeys.name.defaultValue
                case "Launches": "\(DefaultsKeys.launches.defaultValue)"
                default: nil
                }
            return keyDefault.map { "\($0)  [key default]" } ?? "(not set)"
        }
        return "\(value)  [\(source(of: key))]"
    }

    /// The first domain of the search list that has the key.
    public func source(of key: String) -> String {
        if defaults.volatileDomainValues(forName: Defaults.argumentDomain)[key] != nil { return "command line" }
        if defaults.persistentDomainValues(forName: Self.domain)?[key] != nil { return Self.domain }
        if defaults.persistentDomainValues(forName: Self.sharedSuite)?[key] != nil { return Self.sharedSuite }
        if defaults.persistentDomainValues(forName: Defaults.globalDomain)?[key] != nil { return "global" }
        return "registered default"
    }

    /// Parses a value as `defaults write` does: old-style property-list syntax, else the plain string.
    static func parse(_ text: String) -> PropertyList {
        if let integer = Int(text) { return .integer(integer) }
        if let real = Double(text) { return .real(real) }
        switch text.uppercased() {
        case "YES", "TRUE": return true
        case "NO", "FALSE": return false
        default: return (try? PropertyList(parsing: text)) ?? .string(text)
        }
    }
}
