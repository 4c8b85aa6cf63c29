import Foundation
import LiveDefaultsTesting
import Synchronization
import TestProcesses
import Testing

@testable import LiveDefaults

/// Keys with metadata, as a program declares them.
enum SchemaKeys {
    static let rateLimit = DefaultsKey<Int>(
        "RateLimit", default: 100, summary: "Requests per minute per client.", range: 1...100_000)
    static let theme = DefaultsKey<Theme>("Theme", default: .system, summary: "The colour scheme.")
    static let token = DefaultsKey<String>("APIToken", default: "", summary: "Upstream token.", isSecret: true)
    static let ratio = DefaultsKey<Double>("Ratio", default: 0.5, range: 0...1)
    static let name = DefaultsKey<String>("Name", default: "m", range: "a"..."z")
    static let lastSync = DefaultsKey<Date?>("LastSync", summary: "Last synchronisation.")
    static let optionalTheme = DefaultsKey<Theme?>("OptionalTheme")
    static let names = DefaultsKey<[String]>("Names", default: [])
    static let numbers = DefaultsKey<Set<Int>>("Numbers", default: [])
    static let weights = DefaultsKey<[String: Double]>("Weights", default: [:])
    static let limits = DefaultsKey<FeatureFlags>("Flags", default: FeatureFlags())
    static let anything = DefaultsKey<PropertyList?>("Anything")
    static let shared = DefaultsKey<Int>("Shared", default: 1, suite: "com.example.schema.shared", range: 0...9)
}

/// Errors a store reported, for assertions.
final class ReportedErrors: Sendable {
    let errors = Observed<[DefaultsError]>([])
    var all: [DefaultsError] { errors.current }
    var invalidValues: [DefaultsError] { all.filter { $0.code == .invalidValue } }
    var undeclaredKeys: [DefaultsError] { all.filter { $0.code == .undeclaredKey } }
    func handler() -> @Sendable (DefaultsError) -> Void { { error in self.errors.update { $0.append(error) } } }
}

@Suite("Typed keys as a contract: metadata, published schemas, refused writes, protected reads", .blockingWork)
struct SchemaTests {
    func store(_ directory: TemporaryDirectory, _ domain: String, reported: ReportedErrors) throws -> Defaults {
        var configuration = Defaults.Configuration.rooted(at: directory.path, applicationDomain: domain)
        configuration.errorHandler = reported.handler()
        return try Defaults(configuration: configuration)
    }

    // MARK: Metadata

    @Test("every kind of key knows its property-list type; ranges, choices, summaries and secrets are kept")
    func metadata() {
        #expect(SchemaKeys.rateLimit.schema.type == .integer)
        #expect(SchemaKeys.rateLimit.schema.minimum == 1 && SchemaKeys.rateLimit.schema.maximum == 100_000)
        #expect(SchemaKeys.rateLimit.schema.summary == "Requests per minute per client.")
        #expect(SchemaKeys.rateLimit.schema.defaultValue == 100)
        #expect(SchemaKeys.theme.schema.type == .string)
        #expect(SchemaKeys.theme.schema.choices == ["light", "dark", "system"])
        #expect(SchemaKeys.optionalTheme.schema.choices == ["light", "dark", "system"])
        #expect(SchemaKeys.optionalTheme.schema.defaultValue == nil)
        #expect(SchemaKeys.token.schema.isSecret && !SchemaKeys.rateLimit.schema.isSecret)
        #expect(SchemaKeys.ratio.schema.type == .real && SchemaKeys.ratio.schema.maximum == .real(1))
        #expect(SchemaKeys.name.schema.minimum == "a")
        #expect(SchemaKeys.lastSync.schema.type == .date)
        #expect(SchemaKeys.names.schema.type == .array && SchemaKeys.numbers.schema.type == .array)
        #expect(SchemaKeys.weights.schema.type == .dictionary)
        #expect(SchemaKeys.limits.schema.type == .dictionary, "a Codable struct: the shape its encoder produces")
        #expect(SchemaKeys.anything.schema.type == nil, "PropertyList accepts any type")
        #expect(DefaultsKeys.verbose.schema.type == .boolean && DefaultsKeys.token.schema.type == .data)
        #expect(DefaultsKeys.port.schema.type == .integer && DefaultsKeys.homepage.schema.type == .string)
        #expect(DefaultsKeys.level.schema.type == .integer && DefaultsKeys.level.schema.choices == nil)
        #expect(SchemaKeys.rateLimit.schema.accepted == "an integer in 1…100000")
        #expect(SchemaKeys.theme.schema.accepted == "a string, one of: light, dark, system")
    }

    @Test("a schema checks type, range and choices as every writer will")
    func violations() {
        let schema = SchemaKeys.rateLimit.schema
        #expect(schema.violation(for: 50) == nil)
        #expect(schema.violation(for: "fifty")?.reason == .wrongType)
        #expect(schema.violation(for: 0)?.reason == .outOfRange)
        #expect(schema.violation(for: 100_001)?.reason == .outOfRange)
        #expect(SchemaKeys.theme.schema.violation(for: "blue")?.reason == .notAChoice)
        #expect(SchemaKeys.ratio.schema.violation(for: 1) == nil, "a real accepts an integer")
        #expect(SchemaKeys.ratio.schema.violation(for: .real(.nan)) == nil, "NaN has no order: no range applies")
        let message = "\(schema.violation(for: "fifty")!)"
        #expect(
            message.contains("RateLimit") && message.contains("an integer in 1…100000") && message.contains("fifty"))
        var secret = SchemaKeys.token.schema.violation(for: 5)!
        secret.isSecret = true
        #expect(!"\(secret)".contains("5)") && "\(secret)".contains("<secret>"))
    }

    // MARK: Publishing

    @Test("publishSchema writes one file per domain, which reads back as published; a suite's keys go to the suite")
    func publishAndFind() throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store("com.example.schema")
        let keys: [AnyDefaultsKey] = [
            SchemaKeys.rateLimit, SchemaKeys.theme, SchemaKeys.token, SchemaKeys.lastSync, SchemaKeys.shared,
        ]
        let paths = try defaults.publishSchema(for: keys)
        #expect(
            paths == [
                directory.file("Schemas/com.example.schema.plist"),
                directory.file("Schemas/com.example.schema.shared.plist"),
            ])
        let found = try #require(try defaults.publishedSchema())
        #expect(found.domain == "com.example.schema")
        #expect(found.keys.count == 4)
        #expect(found.keys["RateLimit"] == SchemaKeys.rateLimit.schema)
        #expect(found.keys["Theme"] == SchemaKeys.theme.schema)
        #expect(found.keys["APIToken"]?.isSecret == true)
        #expect(found.keys["LastSync"] == SchemaKeys.lastSync.schema)
        let shared = try #require(try defaults.publishedSchema(inDomain: "com.example.schema.shared"))
        #expect(shared.keys["Shared"]?.maximum == 9)
        #expect(try defaults.publishedSchema(inDomain: "com.example.none") == nil)
        // Published again with fewer keys: the file is replaced whole.
        try defaults.publishSchema(for: [SchemaKeys.rateLimit])
        #expect(try defaults.publishedSchema()?.keys.count == 1)
        // Through the store's atomic replace, readable by every user as other tools make files (0666 less
        // the umask), with no temporary left beside it.
        let umask = try Self.processUmask()
        let mode = try FileManager.default.attributesOfItem(atPath: paths[0])[.posixPermissions] as? Int
        #expect(mode == 0o666 & ~umask)
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.file("Schemas"))
        #expect(names.sorted() == ["com.example.schema.plist", "com.example.schema.shared.plist"])
    }

    /// The process's umask, as the kernel reports it (`umask(2)` would change it to read it).
    static func processUmask() throws -> Int {
        let status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("Umask:") })
        return try #require(Int(line.dropFirst("Umask:".count).trimmingCharacters(in: .whitespaces), radix: 8))
    }

    @Test("the search path: the first directory holding the domain wins; a broken schema is an error, never no schema")
    func searchPath() throws {
        let directory = TemporaryDirectory()
        let user = directory.file("user")
        let system = directory.file("system")
        try DomainSchema(domain: "com.example.api", keys: [SchemaKeys.rateLimit.schema]).write(to: system)
        #expect(try DomainSchema.find(domain: "com.example.api", in: [user, system])?.keys["RateLimit"] != nil)
        try DomainSchema(domain: "com.example.api", keys: [SchemaKeys.theme.schema]).write(to: user)
        #expect(try DomainSchema.find(domain: "com.example.api", in: [user, system])?.keys.keys.sorted() == ["Theme"])
        try directory.write("user/com.example.api.plist", "<plist><dict><key>Domain</key>")
        #expect(throws: SchemaFileError.self) { try DomainSchema.find(domain: "com.example.api", in: [user, system]) }
        try DomainSchema(domain: "com.example.other", keys: []).write(to: user)
        try FileManager.default.moveItem(
            atPath: user + "/com.example.other.plist", toPath: user + "/com.example.misnamed.plist")
        let misnamed = #expect(throws: SchemaFileError.self) {
            try DomainSchema.find(domain: "com.example.misnamed", in: [user])
        }
        #expect(misnamed?.description.contains("com.example.other") == true)
    }

    @Test("a refused value's message escapes control characters: a hostile file's key or value forges no log line")
    func violationMessageIsPrintable() {
        let violation = SchemaViolation(
            key: "Nul\u{0}\nKey", value: "a\u{0}b\nnotice forged\u{1B}[2J\u{85}😀", reason: .wrongType,
            accepted: "an integer")
        let message = violation.description
        #expect(!message.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }, "\(message)")
        #expect(
            message
                == #"key "Nul\u{0}\u{a}Key" accepts an integer; the value (string a\u{0}b\u{a}notice forged\u{1b}[2J\u{85}😀) is of another type"#
        )
        // Text without control characters is shown as it is.
        #expect(
            SchemaViolation(key: "K", value: "a b😀", reason: .wrongType, accepted: "an integer").description
                == "key \"K\" accepts an integer; the value (string a b😀) is of another type")
    }

    @Test("schema files of every wrong shape are errors naming what is wrong")
    func hostileSchemaFiles() {
        let cases: [(PropertyList, String)] = [
            (.array([]), "not a dictionary"),
            (["Keys": [:]], "Domain"),
            (["Domain": "d", "Keys": [:], "FormatVersion": 99], "newer"),
            (["Domain": "d"], "Keys"),
            (["Domain": "d", "Keys": ["K": 1]], "not a dictionary"),
            (["Domain": "d", "Keys": ["K": ["Type": "number"]]], "Type must be one of"),
            (["Domain": "d", "Keys": ["K": ["Summary": 5]]], "Summary"),
            (["Domain": "d", "Keys": ["K": ["Choices": "a"]]], "Choices"),
            (["Domain": "d", "Keys": ["K": ["Secret": "yes"]]], "Secret"),
        ]
        for (value, expected) in cases {
            #expect(throws: SchemaFileError.self) { try DomainSchema(propertyList: value) }
            do {
                _ = try DomainSchema(propertyList: value)
            } catch {
                #expect(error.message.contains(expected), "\(error.message)")
            }
        }
        #expect(throws: SchemaFileError.self) { try DomainSchema(data: Data("not a plist".utf8)) }
        #expect(throws: SchemaFileError.self) {
            try DomainSchema(data: Data(count: DomainSchema.maximumFileSize + 1))
        }
    }

    @Test(
        "a program publishes at $XDG_DATA_HOME/livedefaults/schemas ($HOME/.local/share/…) by default, or where LIVEDEFAULTS_SCHEMA_PATH says"
    )
    func defaultLocations() throws {
        let directory = TemporaryDirectory()
        let data = directory.file("data")
        let run = try runHelper(
            ["publish-schema", "com.example.published"],
            environment: ["XDG_CONFIG_HOME": directory.path, "XDG_DATA_HOME": data, "LIVEDEFAULTS_SCHEMA_PATH": ""])
        #expect(run.status == 0)
        let expected = data + "/livedefaults/schemas/com.example.published.plist"
        #expect(run.output.split(separator: "\n").map(String.init).contains(expected))
        let schema = try #require(
            try DomainSchema.find(
                domain: "com.example.published",
                in: [data + "/livedefaults/schemas", "/usr/share/livedefaults/schemas"]))
        #expect(schema.keys["RateLimit"]?.maximum == 100_000)
        #expect(schema.keys["Theme"]?.choices == ["light", "dark", "system"])
        #expect(schema.keys["Limits"]?.type == .dictionary)
        // The suite's key went to the suite's file.
        #expect(FileManager.default.fileExists(atPath: data + "/livedefaults/schemas/com.example.shared.plist"))
        let custom = directory.file("custom")
        let second = try runHelper(
            ["publish-schema", "com.example.published"],
            environment: [
                "XDG_CONFIG_HOME": directory.path, "XDG_DATA_HOME": data,
                "LIVEDEFAULTS_SCHEMA_PATH": custom + ":" + directory.file("other"),
            ])
        #expect(second.status == 0)
        #expect(FileManager.default.fileExists(atPath: custom + "/com.example.published.plist"))
        // Without XDG_DATA_HOME, `$HOME/.local/share`, as the XDG Base Directory specification says.
        let home = directory.file("home")
        let third = try runHelper(
            ["publish-schema", "com.example.published"],
            environment: [
                "XDG_CONFIG_HOME": directory.path, "XDG_DATA_HOME": "", "LIVEDEFAULTS_SCHEMA_PATH": "", "HOME": home,
            ])
        #expect(third.status == 0)
        #expect(
            third.output.split(separator: "\n").map(String.init).contains(
                home + "/.local/share/livedefaults/schemas/com.example.published.plist"))
    }

    // MARK: Writers

    @Test("a typed set the key refuses stores nothing and is reported; trySet throws")
    func typedSetRefused() throws {
        let directory = TemporaryDirectory()
        let reported = ReportedErrors()
        let defaults = try store(directory, "com.example.set", reported: reported)
        defaults[SchemaKeys.rateLimit] = 200
        defaults[SchemaKeys.rateLimit] = 0
        #expect(defaults[SchemaKeys.rateLimit] == 200)
        #expect(defaults.integer(forKey: "RateLimit") == 200)
        #expect(reported.invalidValues.count == 1)
        #expect(defaults.lastError?.code == .invalidValue)
        #expect(defaults.lastError?.violation?.reason == .outOfRange)
        let error = #expect(throws: DefaultsError.self) { try defaults.trySet(100_001, for: SchemaKeys.rateLimit) }
        #expect(error?.code == .invalidValue && error?.key == "RateLimit")
        #expect("\(error!)".contains("an integer in 1…100000"))
        #expect(throws: DefaultsError.self) { try defaults.trySet(1.5, for: SchemaKeys.ratio) }
        try defaults.trySet(0.25, for: SchemaKeys.ratio)
        #expect(defaults[SchemaKeys.ratio] == 0.25)
        // A secret's value never reaches an error's text (nor so the log, lastError's description).
        let pin = DefaultsKey<Int>("PIN", default: 1234, range: 1000...9999, isSecret: true)
        let secret = #expect(throws: DefaultsError.self) { try defaults.trySet(12, for: pin) }
        #expect("\(secret!)".contains("<secret>") && !"\(secret!)".contains("integer 12"))
        // Foundation's untyped API stays Foundation's: it stores what it is given.
        defaults.set(0, forKey: "RateLimit")
        #expect(defaults.integer(forKey: "RateLimit") == 0)
    }

    @Test("a key of any type checks and stores a property list as a typed write would (a generated form's path)")
    func erasedWrites() throws {
        let directory = TemporaryDirectory()
        let reported = ReportedErrors()
        let defaults = try store(directory, "com.example.erased", reported: reported)
        let keys: [AnyDefaultsKey] = [SchemaKeys.rateLimit, SchemaKeys.theme, SchemaKeys.limits, SchemaKeys.shared]
        #expect(keys[0].violation(for: .integer(0))?.reason == .outOfRange)
        #expect(keys[0].violation(for: .string("fifty"))?.reason == .wrongType)
        #expect(keys[1].violation(for: .string("sepia"))?.reason == .notAChoice)
        #expect(keys[2].violation(for: .dictionary(["search": .string("yes")]))?.reason == .unreadable)
        #expect(keys[0].violation(for: .integer(250)) == nil)

        try defaults.trySet(propertyList: .integer(250), for: keys[0])
        try defaults.trySet(propertyList: .string("dark"), for: keys[1])
        try defaults.trySet(propertyList: .integer(7), for: keys[3])
        #expect(defaults[SchemaKeys.rateLimit] == 250 && defaults[SchemaKeys.theme] == .dark)
        #expect(defaults[SchemaKeys.shared] == 7)
        let suite = try store(directory, "com.example.schema.shared", reported: reported)
        #expect(suite.integer(forKey: "Shared") == 7)
        let refused = #expect(throws: DefaultsError.self) {
            try defaults.trySet(propertyList: .integer(0), for: keys[0])
        }
        #expect(refused?.code == .invalidValue && refused?.violation?.reason == .outOfRange)
        #expect(defaults.integer(forKey: "RateLimit") == 250)
        #expect(throws: DefaultsError.self) { try defaults.trySet(propertyList: .integer(10), for: keys[3]) }
        // The typed write's guard follows the key: another writer's refused value reads as the last valid one.
        defaults.set("fifty", forKey: "RateLimit")
        #expect(defaults[SchemaKeys.rateLimit] == 250)
        try defaults.trySet(propertyList: nil, for: keys[0])
        #expect(defaults[SchemaKeys.rateLimit] == 100)
    }
    // MARK: Readers

    @Test(
        "another process's wrong type, out-of-range value and unknown case read as the last valid value, reported once")
    func lastValidValue() async throws {
        let machine = SimulatedMachine(seed: 1)
        let reported = ReportedErrors()
        let domain = "com.example.guard"
        var configuration = machine.process("reader").configuration(applicationDomain: domain)
        configuration.errorHandler = reported.handler()
        let defaults = try machine.process("reader").defaults(configuration: configuration)
        try await machine.save(["RateLimit": 200, "Theme": "dark", "Name": "q"], toDomain: domain)
        #expect(defaults[SchemaKeys.rateLimit] == 200)
        #expect(defaults[SchemaKeys.theme] == .dark && defaults[SchemaKeys.name] == "q")

        try await machine.save(["RateLimit": "fifty", "Theme": "blue", "Name": "zz"], toDomain: domain)
        #expect(defaults.string(forKey: "RateLimit") == "fifty")
        #expect(defaults[SchemaKeys.rateLimit] == 200, "wrong type: the last valid value")
        #expect(defaults[SchemaKeys.theme] == .dark, "unknown case: the last valid value")
        #expect(defaults[SchemaKeys.name] == "q", "a string out of range: the last valid value")
        defaults.reportsDelivered()
        #expect(reported.invalidValues.count == 3)
        for _ in 0..<10 { _ = defaults[SchemaKeys.rateLimit] }
        defaults.reportsDelivered()
        #expect(reported.invalidValues.count == 3, "reported once per bad value, not per read")
        let rate = try #require(reported.invalidValues.first { $0.key == "RateLimit" })
        #expect(rate.domain == domain && rate.violation?.reason == .wrongType)

        try await machine.save(["RateLimit": 0, "Theme": "blue", "Name": "zz"], toDomain: domain)
        #expect(defaults.integer(forKey: "RateLimit") == 0)
        #expect(defaults[SchemaKeys.rateLimit] == 200, "out of range: the last valid value")
        defaults.reportsDelivered()
        #expect(reported.invalidValues.count == 4, "a new bad value is reported")

        try await machine.save(["RateLimit": 300, "Theme": "light", "Name": "b"], toDomain: domain, as: .inPlace)
        #expect(defaults[SchemaKeys.rateLimit] == 300, "the next valid value is taken")
        #expect(defaults[SchemaKeys.theme] == .light && defaults[SchemaKeys.name] == "b")
        try await machine.save([:], toDomain: domain, as: .unlinkAndCreate)
        #expect(defaults[SchemaKeys.rateLimit] == 100, "removed: the default")
    }

    @Test("the declared key a mistyped one most likely meant: within a typo's reach, letter case ignored")
    func nearestKey() {
        let schema = DomainSchema(
            domain: "com.example.api",
            keys: [
                SchemaKeys.rateLimit.schema, SchemaKeys.theme.schema, SchemaKeys.token.schema, SchemaKeys.name.schema,
            ])
        #expect(schema.nearestKey(to: "RateLimt") == "RateLimit")
        #expect(schema.nearestKey(to: "ratelimit") == "RateLimit")
        #expect(schema.nearestKey(to: "RaetLimit") == "RateLimit", "two neighbours swapped: one edit")
        #expect(schema.nearestKey(to: "RateLmt") == "RateLimit", "two edits in nine letters")
        #expect(schema.nearestKey(to: "Thme") == "Theme")
        #expect(schema.nearestKey(to: "APITokn") == "APIToken")
        #expect(schema.nearestKey(to: "Completely") == nil)
        #expect(schema.nearestKey(to: "Nmae") == "Name")
        #expect(schema.nearestKey(to: "X") == nil && schema.nearestKey(to: "") == nil)
        #expect(schema.nearestKey(to: String(repeating: "RateLimit", count: 20)) == nil, "too long to compare")
        #expect(schema.undeclaredKeys(in: ["Theme", "Thme", "RateLimit", "Zed"]) == ["Thme", "Zed"])
        #expect(
            "\(DefaultsError.undeclaredKey("RateLimt", domain: "com.example.api", suggestion: "RateLimit"))"
                == "RateLimt is not a key of com.example.api; did you mean RateLimit?")
    }

    @Test("a store that published its schema reports each key of its files the schema does not declare, once")
    func undeclaredKeysReported() throws {
        // The reporting is the library's logic: in memory, each version read by synchronize() (whose reports
        // are delivered before it returns), not waited for.
        let fileSystem = InMemoryFileSystem()
        let reported = ReportedErrors()
        let root = "/home/u/.config"
        let path = root + "/com.example.declared.plist"
        // Written by another program (not LiveDefaults): before the program starts, and while it runs.
        func write(_ values: [String: PropertyList]) throws {
            try fileSystem.place(try PropertyList.dictionary(values).encoded(as: .xml), at: path)
        }
        try write(["RateLimt": 5, "RateLimit": 7])
        var configuration = Defaults.Configuration.rooted(at: root, applicationDomain: "com.example.declared")
        configuration.errorHandler = reported.handler()
        configuration.fileSystem = fileSystem
        configuration.clock = ManualDefaultsClock()
        let defaults = try Defaults(configuration: configuration)
        func afterSynchronize(_ condition: () -> Bool) -> Bool {
            defaults.synchronize()
            return condition()
        }
        #expect(reported.undeclaredKeys.isEmpty, "nothing is declared before a schema is published")
        try defaults.publishSchema(for: [SchemaKeys.rateLimit, SchemaKeys.theme])
        #expect(fileSystem.contents(atPath: root + "/Schemas/com.example.declared.plist") != nil)
        #expect(afterSynchronize { reported.undeclaredKeys.count == 1 })
        let first = try #require(reported.undeclaredKeys.first)
        #expect(first.key == "RateLimt" && first.domain == "com.example.declared" && first.detail == "RateLimit")
        #expect("\(first)" == "RateLimt is not a key of com.example.declared; did you mean RateLimit?")
        #expect(afterSynchronize { defaults.lastError?.code == .undeclaredKey })

        try write(["RateLimt": 6, "RateLimit": 7, "Thme": "dark"])
        #expect(afterSynchronize { reported.undeclaredKeys.map(\.key) == ["RateLimt", "Thme"] })
        #expect(reported.undeclaredKeys.last?.detail == "Theme")
        try write(["RateLimt": 9, "Thme": "light", "Elsewhere": 1])
        #expect(afterSynchronize { reported.undeclaredKeys.map(\.key) == ["RateLimt", "Thme", "Elsewhere"] })
        #expect(reported.undeclaredKeys.last?.detail == nil, "no declared key is near")
        // The program's own set of such a key is reported the same way; a key reported is not reported again.
        defaults.set(1, forKey: "Them")
        #expect(afterSynchronize { reported.undeclaredKeys.map(\.key).last == "Them" })
        try write(["RateLimt": 10, "Thme": "dark", "Elsewhere": 2, "Them": 3])
        #expect(afterSynchronize { reported.undeclaredKeys.count == 4 }, "\(reported.undeclaredKeys)")
    }

    @Test("a value refused from the start reads as the default; a key past the slot table is checked too")
    func refusedFromTheStart() throws {
        let directory = TemporaryDirectory()
        try directory.write(
            "com.example.start.plist", try SearchListTests.xml(["RateLimit": 0, "Theme": "blue"]))
        let reported = ReportedErrors()
        let defaults = try store(directory, "com.example.start", reported: reported)
        #expect(defaults[SchemaKeys.rateLimit] == 100)
        #expect(defaults[SchemaKeys.theme] == .system)
        #expect(reported.invalidValues.count == 2)
    }

    @Test("typed streams never deliver a refused value; the next valid value arrives as an ordinary change")
    func streamsSkipRefusedValues() async throws {
        let directory = TemporaryDirectory()
        let reported = ReportedErrors()
        let defaults = try store(directory, "com.example.stream", reported: reported)
        defaults[SchemaKeys.rateLimit] = 200
        let received = Observed<[Int]>([])
        let task = Task {
            for await value in defaults.updates(SchemaKeys.rateLimit) {
                received.update { $0.append(value) }
                if value == 300 { break }
            }
        }
        #expect(await received.wait { $0 == [200] })
        defaults.set("fifty", forKey: "RateLimit")
        defaults.set(0, forKey: "RateLimit")
        #expect(await reported.errors.wait { $0.contains { $0.code == .invalidValue } })
        defaults.set(300, forKey: "RateLimit")
        await task.value
        #expect(received.current == [200, 300])
        // A stream that starts while the stored value is refused starts from the last valid value.
        defaults.set(0, forKey: "RateLimit")
        var first: Int?
        for await value in defaults.updates(SchemaKeys.rateLimit) {
            first = value
            break
        }
        #expect(first == 300)
    }

    @Test("a real second process's typed stream skips what a writer stores against the key")
    func otherProcessStream() throws {
        let directory = TemporaryDirectory()
        let writer = try directory.store("com.example.watched")
        writer.set(5, forKey: "RateLimit")
        #expect(writer.synchronize())
        let process = try helperProcess(["typed-watch", directory.path, "com.example.watched", "2"])
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        var printed = ""
        while !printed.contains("ready") {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            printed += String(decoding: chunk, as: UTF8.self)
        }
        writer.set("fifty", forKey: "RateLimit")
        #expect(writer.synchronize())
        // The reader reports the refused value (its error handler prints to standard error) before the
        // next write, so that no coalescing of the two hides it.
        var logged = ""
        while !logged.contains("accepts") {
            let chunk = errors.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            logged += String(decoding: chunk, as: UTF8.self)
        }
        writer.set(7, forKey: "RateLimit")
        #expect(writer.synchronize())
        printed += String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        logged += String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect(printed.split(separator: "\n").filter { $0 != "ready" } == ["5", "7"])
        #expect(logged.contains("\"RateLimit\" accepts an integer in 1…100000"))
    }
}
