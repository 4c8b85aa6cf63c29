import Configuration
import ConfigurationTesting
import Foundation
import LiveDefaults
import LiveDefaultsTesting
import LiveDefaultsConfiguration
import TestProcesses
import Testing

/// The swift-configuration provider: swift-configuration's own conformance test, the key and value mapping
/// of its PropertyListSnapshot, and changes — this process's and another's — reaching the watches.
@Suite("LiveDefaultsProvider", .blockingWork)
struct ProviderTests {
    static let magic = Data([0x6d, 0x61, 0x67, 0x69, 0x63])
    static let magic2 = Data([0x6d, 0x61, 0x67, 0x69, 0x63, 0x32])

    /// swift-configuration's canned values, stored as a defaults domain would hold them: some under nested
    /// dictionaries, some under dotted top-level names.
    static func populate(_ defaults: Defaults) {
        defaults.set("Hello", forKey: "string")
        defaults.set(42, forKey: "int")
        defaults.set(3.14, forKey: "double")
        defaults.set(true, forKey: "bool")
        defaults.set(magic, forKey: "bytes")
        let other: PropertyList = [
            "string": "Other Hello", "int": 24, "double": 2.72, "bool": false, "bytes": .data(magic2),
            "stringy": ["array": ["Hello", "Swift"]], "inty": ["array": [16, 32]],
            "doubly": ["array": [0.9, 1.8]], "booly": ["array": [false, true, true]],
            "byteChunky": ["array": [.data(magic), .data(magic2), .data(magic)]],
        ]
        defaults.set(other, forKey: "other")
        defaults.set(["array": ["Hello", "World"]] as PropertyList, forKey: "stringy")
        defaults.set([42, 24] as PropertyList, forKey: "inty.array")
        defaults.set([3.14, 2.72] as PropertyList, forKey: "doubly.array")
        defaults.set([true, false] as PropertyList, forKey: "booly.array")
        defaults.set(["array": [.data(magic), .data(magic2)]] as PropertyList, forKey: "byteChunky")
    }

    @Test("swift-configuration's ProviderCompatTest passes")
    func compatibility() async throws {
        let sandbox = Sandbox()
        let defaults = try sandbox.store("com.example.config.compat")
        defer { sandbox.remove(after: defaults) }
        Self.populate(defaults)
        try await ProviderCompatTest(provider: LiveDefaultsProvider(defaults: defaults)).runTest()
        // The same through the files: another store of another process's making reads them alike.
        #expect(defaults.synchronize())
        let reopened = try Defaults(
            configuration: .rooted(at: sandbox.path, applicationDomain: "com.example.config.compat"))
        try await ProviderCompatTest(provider: LiveDefaultsProvider(defaults: reopened)).runTest()
    }

    @Test("a version the store's validators refuse is never served through the provider, not at start")
    func refusedVersionNotServed() async throws {
        let sandbox = Sandbox()
        let domain = "com.example.config.judged"
        let writer = try sandbox.store(domain)
        writer.set(20, forKey: "MaxPool")
        writer.set(2, forKey: "MinPool")
        #expect(writer.synchronize())
        writer.set(60, forKey: "MinPool")  // refused by the program below
        #expect(writer.synchronize())
        struct PoolError: Error {}
        let minPool = DefaultsKey<Int>("MinPool", default: 1)
        let maxPool = DefaultsKey<Int>("MaxPool", default: 10)
        var configuration = Defaults.Configuration.rooted(at: sandbox.path, applicationDomain: domain)
        configuration.validators = [
            { candidate in guard candidate[minPool] <= candidate[maxPool] else { throw PoolError() } }
        ]
        // The program starts as another process would: a context of its own, so that it shares no file, writer
        // or records with the writer above.
        configuration.context = ProcessContext(fileSystem: ProcessContext.system.fileSystem)
        let defaults = try Defaults(configuration: configuration)
        defer { sandbox.remove(after: writer, defaults) }
        let config = ConfigReader(provider: LiveDefaultsProvider(defaults: defaults))
        #expect(config.int(forKey: "MinPool") == 2, "the change log's last accepted version")
        #expect(config.int(forKey: "MaxPool") == 20)
        #expect(defaults.lastError?.code == .versionRefused)
    }

    @Test("the provider reads the environment layer as the store does: variables, secret files, typed by the schema")
    func environmentLayer() async throws {
        let sandbox = Sandbox()
        let secret = sandbox.file("token")
        try Data("t0k3n\n".utf8).write(to: URL(fileURLWithPath: secret))
        try DomainSchema(domain: "com.example.config.env", keys: [KeySchema(name: "RateLimit", type: .integer)])
            .write(to: sandbox.file("Schemas"))
        var configuration = Defaults.Configuration.rooted(at: sandbox.path, applicationDomain: "com.example.config.env")
        configuration.environmentPrefix = "MYSERVER_"
        configuration.environmentVariables = [
            "MYSERVER_RATE_LIMIT": "200", "MYSERVER_TOKEN_FILE": secret, "MYSERVER_HOSTS": "(a, b)",
        ]
        let defaults = try Defaults(configuration: configuration)
        defer { sandbox.remove(after: defaults) }
        defaults.set(100, forKey: "RateLimit")
        let config = ConfigReader(provider: LiveDefaultsProvider(defaults: defaults))
        #expect(config.int(forKey: "RateLimit") == 200)
        #expect(config.string(forKey: "Token") == "t0k3n")
        #expect(config.stringArray(forKey: "Hosts") == ["a", "b"])
        let snapshot = LiveDefaultsProvider(defaults: defaults).snapshot()
        #expect(try snapshot.value(forKey: AbsoluteConfigKey(["RateLimit"]), type: .int).value?.content == .int(200))
        // A rotated secret reaches the provider's readers as the store's.
        try Data("rotated\n".utf8).write(to: URL(fileURLWithPath: secret + ".new"))
        #expect(rename(secret + ".new", secret) == 0)
        #expect(await waitForValue(defaults, "Token") { $0 == "rotated" })
        #expect(config.string(forKey: "Token") == "rotated")
    }

    @Test("keys map as PropertyListSnapshot maps them; the longest top-level name wins")
    func keyMapping() throws {
        let sandbox = Sandbox()
        let defaults = try sandbox.store("com.example.config.keys")
        defer { sandbox.remove(after: defaults) }
        defaults.set(["port": 80, "tls.port": 443, "limits": ["max": 5]] as PropertyList, forKey: "http")
        let config = ConfigReader(provider: LiveDefaultsProvider(defaults: defaults))
        #expect(config.int(forKey: "http.port") == 80)
        #expect(config.int(forKey: "http.tls.port") == 443, "a nested key may contain a dot")
        #expect(config.int(forKey: "http.limits.max") == 5)
        #expect(config.int(forKey: "http.limits") == nil, "a dictionary is not a value")
        #expect(config.int(forKey: "http.missing", default: 7) == 7)
        defaults.set(8080, forKey: "http.port")
        #expect(config.int(forKey: "http.port") == 8080, "a top-level dotted name is longer than `http`")
        defaults.removeObject(forKey: "http.port")
        #expect(config.int(forKey: "http.port") == 80)
    }

    @Test("numbers convert as swift-configuration converts them; other kinds are an error for their key only")
    func valueMapping() throws {
        let sandbox = Sandbox()
        let defaults = try sandbox.store("com.example.config.values")
        defer { sandbox.remove(after: defaults) }
        defaults.set(2.0, forKey: "whole")
        defaults.set(2.5, forKey: "fraction")
        defaults.set(true, forKey: "flag")
        defaults.set(0, forKey: "zero")
        defaults.set(Date(timeIntervalSince1970: 0), forKey: "when")
        defaults.set(["a", 1] as PropertyList, forKey: "mixed")
        defaults.set([] as PropertyList, forKey: "empty")
        defaults.set("text", forKey: "name")
        let provider = LiveDefaultsProvider(defaults: defaults)
        func content(_ key: String, _ type: ConfigType) throws -> ConfigContent? {
            try provider.value(forKey: AbsoluteConfigKey(key.split(separator: ".").map(String.init)), type: type)
                .value?.content
        }
        #expect(try content("whole", .int) == .int(2))
        #expect(throws: LiveDefaultsConfigError.self) { try content("fraction", .int) }
        #expect(try content("fraction", .double) == .double(2.5))
        #expect(try content("flag", .int) == .int(1))
        #expect(try content("zero", .bool) == .bool(false))
        #expect(try content("empty", .intArray) == .intArray([]))
        #expect(try content("empty", .stringArray) == .stringArray([]))
        #expect(throws: LiveDefaultsConfigError.self) { try content("when", .string) }
        #expect(throws: LiveDefaultsConfigError.self) { try content("mixed", .stringArray) }
        #expect(throws: LiveDefaultsConfigError.self) { try content("name", .int) }
        do {
            _ = try content("name", .int)
        } catch let error as LiveDefaultsConfigError {
            #expect("\(error)".contains("name") && "\(error)".contains("string") && "\(error)".contains("int"))
        }
        // One bad value does not spoil the others.
        let config = ConfigReader(provider: provider)
        #expect(config.string(forKey: "name") == "text")
    }

    @Test("secrets are marked by the provider's rule")
    func secrets() throws {
        let sandbox = Sandbox()
        let defaults = try sandbox.store("com.example.config.secrets")
        defer { sandbox.remove(after: defaults) }
        defaults.set(["password": "hunter2", "user": "admin"] as PropertyList, forKey: "database")
        let provider = LiveDefaultsProvider(
            defaults: defaults, secretsSpecifier: .dynamic { key, _ in key.hasSuffix("password") })
        let password = try provider.value(forKey: AbsoluteConfigKey(["database", "password"]), type: .string)
        let user = try provider.value(forKey: AbsoluteConfigKey(["database", "user"]), type: .string)
        #expect(password.value?.isSecret == true)
        #expect(user.value?.isSecret == false)
        #expect(password.encodedKey == "database.password")
        let snapshot = provider.snapshot()
        #expect(
            try snapshot.value(forKey: AbsoluteConfigKey(["database", "password"]), type: .string).value?.isSecret
                == true)
    }

    @Test("keys the published schema marks secret are secrets for swift-configuration, with everything below them")
    func schemaSecrets() throws {
        let sandbox = Sandbox()
        let defaults = try sandbox.store("com.example.config.schema")
        defer { sandbox.remove(after: defaults) }
        let token = DefaultsKey<String>("token", default: "", isSecret: true)
        let credentials = DefaultsKey<[String: String]>("credentials", default: [:], isSecret: true)
        let port = DefaultsKey<Int>("port", default: 8080)
        try defaults.publishSchema(for: [token, credentials, port])
        defaults[token] = "s3cret"
        defaults[credentials] = ["user": "admin"]
        defaults[port] = 9000
        let provider = LiveDefaultsProvider(defaults: defaults)
        #expect(try provider.value(forKey: AbsoluteConfigKey(["token"]), type: .string).value?.isSecret == true)
        #expect(
            try provider.value(forKey: AbsoluteConfigKey(["credentials", "user"]), type: .string).value?.isSecret
                == true)
        #expect(try provider.value(forKey: AbsoluteConfigKey(["port"]), type: .int).value?.isSecret == false)
        #expect(
            try provider.snapshot().value(forKey: AbsoluteConfigKey(["token"]), type: .string).value?.isSecret == true)
        // Without a published schema, only the rule decides.
        let plain = LiveDefaultsProvider(defaults: try sandbox.store("com.example.config.unpublished"))
        #expect(try plain.value(forKey: AbsoluteConfigKey(["token"]), type: .string).value?.isSecret != true)
    }

    @Test("a snapshot is one moment of the whole search list")
    func snapshotIsConsistent() throws {
        let sandbox = Sandbox()
        let defaults = try sandbox.store("com.example.config.snapshot")
        defer { sandbox.remove(after: defaults) }
        defaults.register(defaults: ["timeout": 30, "retries": 3] as [String: PropertyList])
        defaults.set(10, forKey: "timeout")
        let provider = LiveDefaultsProvider(defaults: defaults)
        let snapshot = provider.snapshot()
        defaults.set(20, forKey: "timeout")
        #expect(try snapshot.value(forKey: AbsoluteConfigKey(["timeout"]), type: .int).value?.content == .int(10))
        #expect(try snapshot.value(forKey: AbsoluteConfigKey(["retries"]), type: .int).value?.content == .int(3))
        #expect(try provider.value(forKey: AbsoluteConfigKey(["timeout"]), type: .int).value?.content == .int(20))
    }

    @Test("another process's write reaches watchValue, then watchSnapshot")
    func anotherProcessReachesTheWatches() async throws {
        let sandbox = Sandbox()
        let domain = "com.example.config.live"
        let defaults = try sandbox.store(domain)
        defer { sandbox.remove(after: defaults) }
        defaults.set(0, forKey: "limit")
        #expect(defaults.synchronize())
        let provider = LiveDefaultsProvider(defaults: defaults)

        let seen = try await provider.watchValue(forKey: AbsoluteConfigKey(["limit"]), type: .int) { updates in
            var values: [Int] = []
            var writer: Process?
            for await update in updates {
                guard case .int(let value)? = try update.get().value?.content else { continue }
                values.append(value)
                if values.count == 1 {
                    // The first element is the current value; now another process writes 1, 2, 3.
                    writer = try helperProcess(["write-sequence", sandbox.path, domain, "limit", "3"])
                    try writer?.run()
                }
                if value == 3 { break }
            }
            writer?.waitUntilExit()
            return values
        }
        #expect(seen.first == 0)
        #expect(seen.last == 3)
        #expect(seen == seen.sorted(), "values arrive in order (the newest wins when several come at once)")

        let snapshotLimit = try await provider.watchSnapshot { updates in
            var writer: Process?
            var count = 0
            for await snapshot in updates {
                count += 1
                let limit = try snapshot.value(forKey: AbsoluteConfigKey(["limit"]), type: .int).value?.content
                if count == 1 {
                    #expect(limit == .int(3))
                    writer = try helperProcess(["write-sequence", sandbox.path, domain, "other", "1"])
                    try writer?.run()
                    continue
                }
                let other = try snapshot.value(forKey: AbsoluteConfigKey(["other"]), type: .int).value?.content
                if other == .int(1) {
                    writer?.waitUntilExit()
                    return limit
                }
            }
            return nil
        }
        #expect(snapshotLimit == .int(3), "the new snapshot holds the other process's key and the old ones")
    }

    @Test("another process's transactions reach watchSnapshot whole: 2,000 of A = B, never A ≠ B")
    func snapshotsOfTransactions() async throws {
        let sandbox = Sandbox()
        let domain = "com.example.config.pairs"
        let defaults = try sandbox.store(domain)
        defer { sandbox.remove(after: defaults) }
        let provider = LiveDefaultsProvider(defaults: defaults)
        let count = 2_000
        // The writer waits half-way until this watch has seen that version: a loaded machine may otherwise
        // starve the watch until the last version, which would prove nothing about the ones between.
        let half = count / 2
        let writer = try helperProcess(["tx-pairs", sandbox.path, domain, "\(count)", "\(half)"])
        let input = Pipe()
        writer.standardInput = input
        writer.standardOutput = Pipe()
        let (seen, mixed) = try await provider.watchSnapshot { updates in
            var seen = 0
            var mixed = 0
            for await snapshot in updates {
                seen += 1
                if seen == 1 {
                    try writer.run()
                    try input.fileHandleForWriting.write(contentsOf: Data("go\n".utf8))
                }
                let first = try snapshot.value(forKey: AbsoluteConfigKey(["PairA"]), type: .int).value?.content
                let second = try snapshot.value(forKey: AbsoluteConfigKey(["PairB"]), type: .int).value?.content
                if first != second { mixed += 1 }
                if first == .int(half) { try input.fileHandleForWriting.write(contentsOf: Data("on\n".utf8)) }
                if first == .int(count) { break }
            }
            return (seen, mixed)
        }
        writer.waitUntilExit()
        #expect(writer.terminationStatus == 0)
        // The first, the pause half-way, the last: at least three, with or without inotify.
        #expect(seen >= 3, "the watch saw \(seen) snapshots")
        #expect(mixed == 0, "\(mixed) of \(seen) snapshots mixed two versions")
    }

    @Test("fetchValue re-reads the files, and a watch ends with its handler")
    func fetchAndEnd() async throws {
        let sandbox = Sandbox()
        let defaults = try sandbox.store("com.example.config.fetch")
        defer { sandbox.remove(after: defaults) }
        defaults.set("before", forKey: "mode")
        #expect(defaults.synchronize())
        let provider = LiveDefaultsProvider(defaults: defaults)
        // Written behind the store's back by a plain file replacement (an editor, a deploy script).
        let text = """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0"><dict><key>mode</key><string>after</string></dict></plist>
            """
        try Data(text.utf8).write(
            to: URL(fileURLWithPath: sandbox.file("com.example.config.fetch.plist")), options: .atomic)
        let fetched = try await provider.fetchValue(forKey: AbsoluteConfigKey(["mode"]), type: .string)
        #expect(fetched.value?.content == .string("after"))
        // Leaving the handler ends the watch: nothing stays subscribed.
        try await provider.watchValue(forKey: AbsoluteConfigKey(["mode"]), type: .string) { updates in
            for await _ in updates { break }
        }
        #expect(defaults.activeObserverCount == 0)
    }
}
