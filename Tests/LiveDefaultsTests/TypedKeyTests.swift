import Foundation
import PlistOracle
import Synchronization
import TestProcesses
import Testing

@testable import LiveDefaults

enum Theme: String, Codable, DefaultsSerializable, CaseIterable {
    case light, dark, system
}

enum Level: Int, DefaultsSerializable {
    case low = 1
    case high = 2
}

struct Limits: Codable, Equatable, DefaultsSerializable {
    var perMinute: Int
    var burst: Int?
    var tags: [String]
    var nested: Nested

    struct Nested: Codable, Equatable {
        var enabled: Bool
        var ratio: Double
        var since: Date
        var blob: Data
    }
}

enum Action: Codable, Equatable, DefaultsSerializable {
    case stop
    case wait(seconds: Int)
    case redirect(URL, permanent: Bool)
}

struct FeatureFlags: Codable, Equatable, DefaultsSerializable {
    var search = false
    var beta: Set<String> = []
}

extension DefaultsKeys {
    static let rateLimit = DefaultsKey<Int>("RateLimit", default: 100)
    static let greeting = DefaultsKey<String>("Greeting", default: "Hello")
    static let verbose = DefaultsKey<Bool>("Verbose", default: false)
    static let ratio = DefaultsKey<Double>("Ratio", default: 0.5)
    static let scale = DefaultsKey<Float>("Scale", default: 1)
    static let small = DefaultsKey<Int8>("Small", default: 7)
    static let big = DefaultsKey<UInt64>("Big", default: 1)
    static let port = DefaultsKey<UInt16>("Port", default: 8080)
    static let lastSync = DefaultsKey<Date?>("LastSync")
    static let token = DefaultsKey<Data>("Token", default: Data())
    static let homepage = DefaultsKey<URL>("Homepage", default: URL(string: "https://example.com")!)
    static let instance = DefaultsKey<UUID?>("Instance")
    static let names = DefaultsKey<[String]>("Names", default: [])
    static let numbers = DefaultsKey<Set<Int>>("Numbers", default: [])
    static let weights = DefaultsKey<[String: Double]>("Weights", default: [:])
    static let theme = DefaultsKey<Theme>("Theme", default: .system)
    static let level = DefaultsKey<Level>("Level", default: .low)
    static let limits = DefaultsKey<Limits?>("Limits")
    static let action = DefaultsKey<Action>("Action", default: .stop)
    static let flags = DefaultsKey<FeatureFlags>("Flags", default: FeatureFlags())
    static let raw = DefaultsKey<PropertyList?>("Raw")
    static let team = DefaultsKey<String>("Team", default: "core", suite: "com.example.shared")
}

@Suite("Typed keys and bridges", .blockingWork)
struct TypedKeyTests {
    static let date = Date(timeIntervalSince1970: 1_700_000_000)

    /// Writes through one store, synchronizes, and reads back through a fresh store on the same files.
    func roundTrip<Value: DefaultsSerializable & Equatable>(
        _ key: DefaultsKey<Value>, _ value: Value, stored expected: PropertyList? = nil
    ) throws {
        let directory = TemporaryDirectory()
        let writer = try directory.store("com.example.typed")
        #expect(writer[key] == key.defaultValue)
        writer[key] = value
        #expect(writer[key] == value)
        #expect(writer.synchronize())
        let reader = try directory.store("com.example.typed")
        #expect(reader[key] == value, "\(key.name) read back through a fresh store")
        if let expected {
            #expect(reader.persistentDomainValues(forName: key.suite ?? "com.example.typed")?[key.name] == expected)
        }
    }

    @Test("Scalars round-trip through a file")
    func scalars() throws {
        try roundTrip(.rateLimit, 250, stored: 250)
        try roundTrip(.greeting, "Grüß dich", stored: "Grüß dich")
        try roundTrip(.verbose, true, stored: true)
        try roundTrip(.ratio, 0.25, stored: 0.25)
        try roundTrip(.scale, Float(1.5), stored: 1.5)
        try roundTrip(.small, Int8(-100), stored: -100)
        try roundTrip(.big, UInt64(Int.max), stored: .integer(Int.max))
        try roundTrip(.port, UInt16(65_535), stored: 65_535)
        try roundTrip(.lastSync, Self.date, stored: .date(Self.date))
        try roundTrip(.token, Data([0, 1, 255]), stored: .data(Data([0, 1, 255])))
        try roundTrip(.homepage, URL(string: "https://swift.org/path?q=1")!, stored: "https://swift.org/path?q=1")
        try roundTrip(.homepage, URL(fileURLWithPath: NSHomeDirectory() + "/site"), stored: "~/site")
        let uuid = UUID()
        try roundTrip(.instance, uuid, stored: .string(uuid.uuidString))
        try roundTrip(.raw, ["free": ["form", 1]], stored: ["free": ["form", 1]])
    }

    @Test("Collections, optionals and enums round-trip through a file")
    func collections() throws {
        try roundTrip(.names, ["a", "b"], stored: ["a", "b"])
        try roundTrip(.numbers, [3, 1, 2], stored: [1, 2, 3])
        try roundTrip(.weights, ["x": 0.5, "y": 2], stored: ["x": 0.5, "y": 2.0])
        try roundTrip(.theme, .dark, stored: "dark")
        try roundTrip(.level, .high, stored: 2)
    }

    @Test("Codable types are stored as plist structure, readable by plistlib, editable by hand")
    func codableStructure() throws {
        let limits = Limits(
            perMinute: 60, burst: nil, tags: ["api", "web"],
            nested: .init(enabled: true, ratio: 0.75, since: Self.date, blob: Data([1, 2])))
        try roundTrip(
            .limits, limits,
            stored: [
                "perMinute": 60, "tags": ["api", "web"],
                "nested": ["enabled": true, "ratio": 0.75, "since": .date(Self.date), "blob": .data(Data([1, 2]))],
            ])
        try roundTrip(.action, .wait(seconds: 5))
        try roundTrip(.action, .redirect(URL(string: "https://a.example")!, permanent: true))
        try roundTrip(
            .flags, FeatureFlags(search: true, beta: ["x", "a"]), stored: ["search": true, "beta": ["a", "x"]])

        // Python sees a dictionary, not a JSON string or a data blob.
        let directory = TemporaryDirectory()
        let defaults = try directory.store("com.example.codable")
        defaults[.limits] = limits
        #expect(defaults.synchronize())
        let path = directory.file("com.example.codable.plist")
        #expect(try pythonPlist(path, expression: "d['Limits']['perMinute']") == "60")
        #expect(
            try pythonPlist(path, expression: "sorted(d['Limits']['nested'].keys())")
                == #"["blob", "enabled", "ratio", "since"]"#)

        // Edited by hand as an old-style dictionary (all strings), as `defaults write` would leave it.
        try defaults.trySet(
            try PropertyList(
                parsing:
                    "{ perMinute = 90; burst = 5; tags = (a); nested = { enabled = YES; ratio = 1.5; since = \"2023-11-14T22:13:20Z\"; blob = <0102>; }; }"
            ),
            forKey: "Limits")
        #expect(
            defaults[.limits]
                == Limits(
                    perMinute: 90, burst: 5, tags: ["a"],
                    nested: .init(enabled: true, ratio: 1.5, since: Self.date, blob: Data([1, 2]))))
    }

    @Test("Optional keys: nil removes the key, and the default shows again")
    func optionals() throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store()
        defaults[.lastSync] = Self.date
        #expect(defaults.object(forKey: "LastSync") as? Date == Self.date)
        defaults[.lastSync] = nil
        #expect(defaults.object(forKey: "LastSync") == nil)
        #expect(defaults[.lastSync] == nil)
        #expect(defaults.isDefault(.lastSync))
    }

    @Test("A key's default applies only when no domain has the key, registered defaults included")
    func defaultsAndRegistration() throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store(arguments: ["-Greeting", "Hi"])
        #expect(defaults[.rateLimit] == 100)
        defaults.register(defaults: ["RateLimit": 42] as [String: PropertyList])
        #expect(defaults[.rateLimit] == 42)
        defaults[.rateLimit] = 7
        #expect(defaults[.rateLimit] == 7)
        defaults.reset(.rateLimit)
        #expect(defaults[.rateLimit] == 42)
        #expect(defaults[.greeting] == "Hi", "the argument domain wins for typed keys too")
        defaults.reset(.rateLimit, .greeting)
        #expect(defaults[.greeting] == "Hi")
    }

    @Test("Wrong shapes read as the default, with one warning naming domain and key; valid writes work again")
    func wrongShapes() throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store("com.example.shapes")
        try defaults.trySet("fast", forKey: "RateLimit")
        #expect(defaults[.rateLimit] == 100)
        try defaults.trySet("250", forKey: "RateLimit")
        #expect(defaults[.rateLimit] == 250, "a string that is a whole number is a number")
        try defaults.trySet(300, forKey: "Small")
        #expect(defaults[.small] == 7, "300 does not fit Int8: the default, never a trap")
        try defaults.trySet(-1, forKey: "Port")
        #expect(defaults[.port] == 8080)
        try defaults.trySet("maybe", forKey: "Verbose")
        #expect(defaults[.verbose] == false)
        try defaults.trySet("YES", forKey: "Verbose")
        #expect(defaults[.verbose] == true)
        try defaults.trySet("purple", forKey: "Theme")
        #expect(defaults[.theme] == .system)
        try defaults.trySet(["perMinute": "lots"], forKey: "Limits")
        #expect(defaults[.limits] == nil)
        try defaults.trySet(42, forKey: "Names")
        #expect(defaults[.names] == [])
        defaults[.rateLimit] = 5
        #expect(defaults[.rateLimit] == 5)
        #expect(defaults.domainProviding("Theme") == "com.example.shapes")
    }

    @Test("The wrong-shape notice is logged once per stored value, naming domain and key (in a real process)")
    func wrongShapeWarningLogged() throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store("com.example.warn")
        try defaults.trySet("fast", forKey: "RateLimit")
        #expect(defaults.synchronize())
        let process = try helperProcess(["typed-read", directory.path, "com.example.warn", "3"])
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        process.waitUntilExit()
        let printed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let logged = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(printed == "100\n100\n100\n")
        // A notice, not a warning: the read carries on with the default (see Defaults.Configuration.logger).
        let warnings = logged.split(separator: "\n").filter { $0.contains("notice") }
        #expect(warnings.count == 1)
        #expect(
            warnings.first?.contains("com.example.warn") == true && warnings.first?.contains("\"RateLimit\"") == true)
    }

    @Test("Keys with a suite read and write that suite's domain")
    func suiteKeys() throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store("com.example.app")
        #expect(defaults[.team] == "core")
        defaults[.team] = "platform"
        #expect(defaults.synchronize())
        #expect(try pythonPlist(directory.file("com.example.shared.plist")) == #"{"Team": "platform"}"#)
        #expect(defaults.string(forKey: "Team") == nil, "the suite is not in the application's search list")
        let other = try directory.store("com.example.other")
        #expect(other[.team] == "platform")
    }

    @Test("Values with no property-list form are refused with an error")
    func unencodable() throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store()
        let big = DefaultsKey<UInt64>("Huge", default: 0)
        #expect(throws: DefaultsError.self) { try defaults.trySet(UInt64.max, for: big) }
        defaults[big] = UInt64.max
        #expect(defaults.object(forKey: "Huge") == nil)
        let holes = DefaultsKey<[Int?]>("Holes", default: [])
        #expect(throws: DefaultsError.self) { try defaults.trySet([1, nil], for: holes) }
    }

    @Test("Keys are Sendable and usable from any isolation domain")
    func sendableKeys() async throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store()
        let key: DefaultsKey<Int> = .rateLimit
        await withTaskGroup(of: Void.self) { group in
            for value in 0..<20 { group.addTask { defaults[key] = value } }
        }
        #expect((0..<20).contains(defaults[.rateLimit]))
        @MainActor func onMain() -> Int { defaults[.rateLimit] }
        #expect(await onMain() == defaults[.rateLimit])
        #expect(DefaultsKeys.rateLimit == DefaultsKey<Int>("RateLimit", default: 1))
        #expect("\(DefaultsKeys.team)" == "com.example.shared Team")
    }
}
