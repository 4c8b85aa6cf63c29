import Foundation
import LiveDefaultsTesting
import TestProcesses
import Testing

@testable import LiveDefaults

/// The environment layer (``Defaults/Configuration/environmentPrefix``): variables named after keys, typed by
/// the published schema, `_FILE` secrets; it beats every file, and what it cannot use is reported. The stores
/// are given their environment (never the test process's own); they do not watch, except where a secret file's
/// rotation must reach a running store (inotify, which only the kernel shows).
@Suite("The environment layer: variables and secret files set keys, above every file")
struct EnvironmentLayerTests {
    static let domain = "com.example.env"

    let directory = TemporaryDirectory()
    let errors = Lock<[DefaultsError]>([])

    func store(_ environment: [String: String], watching: Bool = false) throws -> Defaults {
        var configuration = Defaults.Configuration.rooted(at: directory.path, applicationDomain: Self.domain)
        configuration.environmentPrefix = "MYSERVER_"
        configuration.environmentVariables = environment
        if !watching {
            configuration.watching = .off
            configuration.clock = ManualDefaultsClock()
        }
        configuration.errorHandler = { [errors] error in errors.withLock { $0.append(error) } }
        return try Defaults(configuration: configuration)
    }

    /// The domain file, written as another program would.
    func writeFile(_ contents: [String: PropertyList]) throws {
        try PropertyList.dictionary(contents).encoded(as: .xml).write(
            to: URL(fileURLWithPath: directory.file("\(Self.domain).plist")))
    }

    func publish(_ keys: [KeySchema]) throws {
        try DomainSchema(domain: Self.domain, keys: keys).write(to: directory.file("Schemas"))
    }

    var reported: [String] {
        errors.withLock { $0.filter { $0.code == .environmentValueIgnored }.map(\.description) }
    }

    @Test("a key's variable is its name in upper snake case; a name nothing knows is upper camel case")
    func names() {
        for key in ["RateLimit", "rateLimit", "rate.limit", "rate-limit", "rate_limit", "RATE_LIMIT", "Rate Limit"] {
            #expect(EnvironmentLayer.variableSuffix(forKey: key) == "RATE_LIMIT", "\(key)")
        }
        #expect(EnvironmentLayer.variableSuffix(forKey: "APIKey") == "API_KEY")
        #expect(EnvironmentLayer.variableSuffix(forKey: "maxPool2") == "MAX_POOL2")
        #expect(EnvironmentLayer.variableSuffix(forKey: "HTTP2Port") == "HTTP2_PORT")
        #expect(EnvironmentLayer.variableSuffix(forKey: "a..b--") == "A_B")
        for unnamable in ["", "ä", "key/other", "x=y", "..", "emoji🙂"] {
            #expect(EnvironmentLayer.variableSuffix(forKey: unnamable) == nil, "\(unnamable)")
        }
        #expect(EnvironmentLayer.defaultKey(forSuffix: "RATE_LIMIT") == "RateLimit")
        #expect(EnvironmentLayer.defaultKey(forSuffix: "API_KEY") == "ApiKey")
        #expect(EnvironmentLayer.defaultKey(forSuffix: "X") == "X")
        #expect(EnvironmentLayer.defaultKey(forSuffix: "HTTP2_PORT") == "Http2Port")
        // Where camel case would not split back into the same words, the `_` stays.
        for suffix in ["A_B", "PORT_2", "A_B2", "X_1_Y", "AB_C"] {
            let key = EnvironmentLayer.defaultKey(forSuffix: suffix)
            #expect(EnvironmentLayer.variableSuffix(forKey: key) == suffix, "\(suffix) → \(key)")
        }
        #expect(EnvironmentLayer.defaultKey(forSuffix: "A_B") == "A_B")
        // No variable of the prefix, or no prefix: no layer at all.
        #expect(EnvironmentLayer(prefix: "MYSERVER_", environment: ["OTHER_X": "1", "MYSERVER_": "2"]) == nil)
        #expect(EnvironmentLayer(prefix: "", environment: ["X": "1"]) == nil)
    }

    @Test("a variable beats the domain file and a later set; the file keeps what was set; the domain is listed")
    func beatsFiles() throws {
        try writeFile(["RateLimit": 100, "Theme": "light"])
        let defaults = try store(["MYSERVER_RATE_LIMIT": "200", "MYSERVER_LOG_LEVEL": "debug", "PATH": "/bin"])
        #expect(defaults.integer(forKey: "RateLimit") == 200)
        #expect(defaults[DefaultsKey<Int>("RateLimit", default: 1)] == 200)
        #expect(defaults.string(forKey: "Theme") == "light")
        // A key nothing else names takes its name from the variable.
        #expect(defaults.string(forKey: "LogLevel") == "debug")
        defaults.set(300, forKey: "RateLimit")
        #expect(defaults.integer(forKey: "RateLimit") == 200, "pinned by the environment")
        #expect(defaults.synchronize())
        #expect(defaults.persistentDomainValues(forName: Self.domain)?["RateLimit"] == 300)
        #expect(defaults.volatileDomainNames.contains(Defaults.environmentDomain))
        #expect(
            defaults.volatileDomainValues(forName: Defaults.environmentDomain) == [
                "RateLimit": "200", "LogLevel": "debug",
            ])
        #expect(defaults.dictionaryRepresentationValues()["LogLevel"] == "debug")
        #expect(reported.isEmpty, "\(reported)")
    }

    @Test("the argument domain and forced values still win over the environment")
    func argumentsWin() throws {
        var configuration = Defaults.Configuration.rooted(
            at: directory.path, applicationDomain: Self.domain, arguments: ["-RateLimit", "7"])
        configuration.environmentPrefix = "MYSERVER_"
        configuration.environmentVariables = ["MYSERVER_RATE_LIMIT": "200", "MYSERVER_THEME": "dark"]
        configuration.watching = .off
        try FileManager.default.createDirectory(
            atPath: directory.file("Managed"), withIntermediateDirectories: true)
        try PropertyList.dictionary(["Theme": "forced"]).encoded(as: .xml).write(
            to: URL(fileURLWithPath: directory.file("Managed/\(Self.domain).plist")))
        let defaults = try Defaults(configuration: configuration)
        #expect(defaults.integer(forKey: "RateLimit") == 7)
        #expect(defaults.string(forKey: "Theme") == "forced")
    }

    @Test("source(ofKey:) names where each value comes from, in the order reads take it")
    func sources() throws {
        try writeFile(["RateLimit": 100, "Theme": "light"])
        let secret = directory.file("token")
        try Data("t0k\n".utf8).write(to: URL(fileURLWithPath: secret))
        try FileManager.default.createDirectory(atPath: directory.file("Managed"), withIntermediateDirectories: true)
        try PropertyList.dictionary(["Forced": 1]).encoded(as: .xml).write(
            to: URL(fileURLWithPath: directory.file("Managed/\(Self.domain).plist")))
        var configuration = Defaults.Configuration.rooted(
            at: directory.path, applicationDomain: Self.domain, arguments: ["-Arg", "1"])
        configuration.environmentPrefix = "MYSERVER_"
        configuration.environmentVariables = [
            "MYSERVER_RATE_LIMIT": "200", "MYSERVER_TOKEN_FILE": secret, "MYSERVER_FORCED": "2",
        ]
        configuration.watching = .off
        let defaults = try Defaults(configuration: configuration)
        defaults.register(defaults: ["Registered": 1])
        #expect(defaults.source(ofKey: "RateLimit") == .environmentVariable("MYSERVER_RATE_LIMIT"))
        #expect(defaults.source(ofKey: "Token") == .environmentFile(variable: "MYSERVER_TOKEN_FILE", path: secret))
        #expect(
            defaults.source(ofKey: "Theme")
                == .file(domain: Self.domain, layer: .currentUser, path: directory.file("\(Self.domain).plist")))
        #expect(
            defaults.source(ofKey: "Forced")
                == .forced(domain: Self.domain, layer: .managed, path: directory.file("Managed/\(Self.domain).plist")))
        #expect(defaults.source(ofKey: "Arg") == .argument)
        #expect(defaults.source(ofKey: "Registered") == .registration)
        #expect(defaults.source(ofKey: "Nowhere") == nil)
        #expect("\(DefaultsValueSource.environmentVariable("MYSERVER_X"))" == "environment variable MYSERVER_X")
    }

    @Test("the published schema types the text and checks it; what fails is reported once and reads from below")
    func typedBySchema() throws {
        try publish([
            KeySchema(name: "RateLimit", type: .integer, minimum: 1, maximum: 1000),
            KeySchema(name: "Hosts", type: .array),
            KeySchema(name: "Limits", type: .dictionary),
            KeySchema(name: "Verbose", type: .boolean),
            KeySchema(name: "Ratio", type: .real),
            KeySchema(name: "Since", type: .date),
            KeySchema(name: "Blob", type: .data),
            KeySchema(name: "Name", type: .string),
            KeySchema(name: "Port", type: .integer),
            KeySchema(name: "Big", type: .integer, maximum: 10),
        ])
        try writeFile(["Port": 8080, "Big": 5])
        let defaults = try store([
            "MYSERVER_RATE_LIMIT": " 250\n", "MYSERVER_HOSTS": "(a, \"b c\")", "MYSERVER_LIMITS": "{ burst = 5; }",
            "MYSERVER_VERBOSE": "yes", "MYSERVER_RATIO": "0.25", "MYSERVER_SINCE": "2026-11-28T10:00:00Z",
            "MYSERVER_BLOB": "<0fa1>", "MYSERVER_NAME": "(not an array)", "MYSERVER_PORT": "eighty",
            "MYSERVER_BIG": "11",
        ])
        #expect(defaults.value(forKey: "RateLimit") == .integer(250))
        #expect(defaults.value(forKey: "Hosts") == .array(["a", "b c"]))
        #expect(defaults.value(forKey: "Limits") == .dictionary(["burst": "5"]))
        #expect(defaults.value(forKey: "Verbose") == .bool(true))
        #expect(defaults.value(forKey: "Ratio") == .real(0.25))
        #expect(defaults.value(forKey: "Since") == .date(Date(timeIntervalSince1970: 1_795_860_000)))
        #expect(defaults.value(forKey: "Blob") == .data(Data([0x0f, 0xa1])))
        #expect(defaults.value(forKey: "Name") == .string("(not an array)"))
        // Not an integer, and out of range: the file's values.
        #expect(defaults.value(forKey: "Port") == .integer(8080))
        #expect(defaults.value(forKey: "Big") == .integer(5))
        #expect(defaults.synchronize())
        let reports = reported
        #expect(reports.count == 2, "\(reports)")
        #expect(
            reports.contains { $0.contains("MYSERVER_PORT (key Port): \"eighty\" is not an integer") }, "\(reports)")
        #expect(reports.contains { $0.contains("MYSERVER_BIG (key Big)") }, "\(reports)")
        // Reported once: a rebuild of the view (a registration) reports nothing again.
        defaults.register(defaults: ["Other": 1])
        #expect(defaults.synchronize())
        #expect(reported.count == 2)
    }

    @Test("without a schema: old-style arrays and dictionaries, strings otherwise, which getters read as numbers")
    func untyped() throws {
        let defaults = try store([
            "MYSERVER_HOSTS": "(a, b)", "MYSERVER_LIMITS": "{ burst = 5; }", "MYSERVER_RATE_LIMIT": "200",
            "MYSERVER_ODD": "(unclosed", "MYSERVER_VERBOSE": "true",
        ])
        #expect(defaults.value(forKey: "Hosts") == .array(["a", "b"]))
        #expect(defaults.value(forKey: "Limits") == .dictionary(["burst": "5"]))
        #expect(defaults.value(forKey: "RateLimit") == .string("200"))
        #expect(defaults.integer(forKey: "RateLimit") == 200)
        #expect(defaults[DefaultsKey<Int>("RateLimit", default: 1)] == 200)
        #expect(defaults[DefaultsKey<Bool>("Verbose", default: false)])
        #expect(defaults.value(forKey: "Odd") == .string("(unclosed"))
    }

    @Test("the known key's own spelling is used; two keys of one name take nothing from it, reported")
    func spellings() throws {
        try writeFile(["rateLimit": 1, "maxPool": 2, "MaxPool": 3])
        let defaults = try store(["MYSERVER_RATE_LIMIT": "200", "MYSERVER_MAX_POOL": "9"])
        #expect(defaults.string(forKey: "rateLimit") == "200")
        #expect(defaults.value(forKey: "RateLimit") == nil)
        #expect(defaults.value(forKey: "maxPool") == .integer(2))
        #expect(defaults.value(forKey: "MaxPool") == .integer(3))
        #expect(defaults.synchronize())
        #expect(reported.count == 1 && reported[0].contains("keys MaxPool and maxPool both map to it"), "\(reported)")
    }

    @Test("a key that appears in a file later takes the variable under its own spelling")
    func keyAppearsLater() throws {
        let defaults = try store(["MYSERVER_RATE_LIMIT": "200"])
        #expect(defaults.string(forKey: "RateLimit") == "200")
        defaults.set(1, forKey: "rateLimit")
        #expect(defaults.string(forKey: "rateLimit") == "200")
        #expect(defaults.value(forKey: "RateLimit") == nil)
    }

    @Test(
        "a _FILE variable reads its file, one trailing newline dropped; what cannot be read is reported, never waited on"
    )
    func valueFiles() throws {
        let secrets = directory.file("secrets")
        try FileManager.default.createDirectory(atPath: secrets, withIntermediateDirectories: true)
        try Data("s3cret\n\n".utf8).write(to: URL(fileURLWithPath: secrets + "/api_key"))
        try Data("crlf\r\n".utf8).write(to: URL(fileURLWithPath: secrets + "/crlf"))
        try Data(count: EnvironmentLayer.maximumFileSize + 1).write(to: URL(fileURLWithPath: secrets + "/huge"))
        #expect(mkfifo(secrets + "/fifo", 0o600) == 0)
        try FileManager.default.createSymbolicLink(atPath: secrets + "/loop", withDestinationPath: secrets + "/loop")
        try Data([0xff, 0xfe]).write(to: URL(fileURLWithPath: secrets + "/binary"))
        let defaults = try store([
            "MYSERVER_API_KEY_FILE": secrets + "/api_key", "MYSERVER_CRLF_FILE": secrets + "/crlf",
            "MYSERVER_HUGE_FILE": secrets + "/huge", "MYSERVER_FIFO_FILE": secrets + "/fifo",
            "MYSERVER_LOOP_FILE": secrets + "/loop", "MYSERVER_GONE_FILE": secrets + "/gone",
            "MYSERVER_BINARY_FILE": secrets + "/binary", "MYSERVER_DIR_FILE": secrets,
            "MYSERVER_BOTH": "x", "MYSERVER_BOTH_FILE": secrets + "/api_key",
        ])
        #expect(defaults.string(forKey: "ApiKey") == "s3cret\n")
        #expect(defaults.string(forKey: "Crlf") == "crlf")
        for key in ["Huge", "Fifo", "Loop", "Gone", "Binary", "Dir", "Both"] {
            #expect(defaults.value(forKey: key) == nil, "\(key)")
        }
        #expect(defaults.synchronize())
        let reports = reported
        #expect(reports.count == 7, "\(reports)")
        for (variable, words) in [
            ("MYSERVER_HUGE_FILE", "more than the"), ("MYSERVER_FIFO_FILE", "is not a regular file"),
            ("MYSERVER_LOOP_FILE", "cannot be read"), ("MYSERVER_GONE_FILE", "does not exist"),
            ("MYSERVER_BINARY_FILE", "is not UTF-8 text"), ("MYSERVER_DIR_FILE", "is not a regular file"),
            ("MYSERVER_BOTH", "neither is used"),
        ] {
            #expect(reports.contains { $0.contains(variable) && $0.contains(words) }, "\(variable): \(reports)")
        }
    }

    @Test("_FILE names: a known key ending in File keeps its variable; X_FILE_FILE is the file of X_FILE; conflicts")
    func fileNames() throws {
        let secret = directory.file("secret")
        try Data("from file\n".utf8).write(to: URL(fileURLWithPath: secret))
        try writeFile(["KeyFile": "on disk", "maxPool": 1, "MaxPool": 2])
        let defaults = try store([
            // A known key's own variable, not the file of `KEY`.
            "MYSERVER_KEY_FILE": "/etc/key.pem",
            // The file of `TOKEN`, and the file of `TOKEN_FILE` (a key nothing else names: TokenFile).
            "MYSERVER_TOKEN_FILE": secret, "MYSERVER_TOKEN_FILE_FILE": secret,
            // The file of a name two keys share: neither is set, reported once.
            "MYSERVER_MAX_POOL_FILE": secret,
        ])
        #expect(defaults.string(forKey: "KeyFile") == "/etc/key.pem")
        #expect(defaults.value(forKey: "Key") == nil)
        #expect(defaults.string(forKey: "Token") == "from file")
        #expect(defaults.string(forKey: "TokenFile") == "from file")
        #expect(defaults.value(forKey: "maxPool") == .integer(1))
        #expect(defaults.value(forKey: "MaxPool") == .integer(2))
        #expect(
            defaults.source(ofKey: "TokenFile") == .environmentFile(variable: "MYSERVER_TOKEN_FILE_FILE", path: secret))
        #expect(defaults.source(ofKey: "KeyFile") == .environmentVariable("MYSERVER_KEY_FILE"))
        #expect(defaults.synchronize())
        let reports = reported
        #expect(reports.count == 1 && reports[0].contains("keys MaxPool and maxPool both map to it"), "\(reports)")
    }

    @Test("the readers' announcement names what each store pins, described when written, at most 64 keys")
    func announcedPins() throws {
        try writeFile(["RateLimit": 1])
        var configuration = Defaults.Configuration.rooted(at: directory.path, applicationDomain: Self.domain)
        configuration.environmentPrefix = "MYSERVER_"
        configuration.environmentVariables = ["MYSERVER_RATE_LIMIT": "200"]
        let first = try Defaults(configuration: configuration)
        var many: [String: String] = ["MYSERVER_RATE_LIMIT": "300"]
        for index in 0..<100 { many["MYSERVER_SETTING_\(index)"] = "\(index)" }
        configuration.environmentVariables = many
        let second = try Defaults(configuration: configuration)
        Defaults.waitForBackgroundRecords()
        let mine = first.readers().filter { $0.processID == getpid() }
        #expect(mine.count == 1)
        let pinned = mine.first?.pinnedKeys ?? [:]
        #expect(pinned.count == ReaderAnnouncements.maximumPinnedKeys)
        #expect(pinned["RateLimit"] == "environment variable MYSERVER_RATE_LIMIT")
        #expect(pinned["Setting_0"] == "environment variable MYSERVER_SETTING_0")
        // The first by name: `Setting_99` sorts after the 63 kept with `RateLimit`.
        #expect(pinned["Setting_99"] == nil)
        // A store let go takes its pins with it.
        withExtendedLifetime(second) {}
        _ = consume second
        Defaults.waitForBackgroundRecords()
        #expect(
            first.readers().first { $0.processID == getpid() }?.pinnedKeys == [
                "RateLimit": "environment variable MYSERVER_RATE_LIMIT"
            ])
    }

    @Test("a secret rotated by rename and rewritten in place reaches a watching store, as a change of the key")
    func secretRotation() async throws {
        let secret = directory.file("api_key")
        try Data("one\n".utf8).write(to: URL(fileURLWithPath: secret))
        let defaults = try store(["MYSERVER_API_KEY_FILE": secret], watching: true)
        #expect(defaults.string(forKey: "ApiKey") == "one")
        var updates = defaults.updates(forKey: "ApiKey", emitCurrentValue: false).makeAsyncIterator()
        // Rotated by rename, as Kubernetes and configuration tools replace a file.
        try Data("two\n".utf8).write(to: URL(fileURLWithPath: secret + ".new"))
        #expect(rename(secret + ".new", secret) == 0)
        #expect(await updates.next() == .string("two"))
        // Rewritten in place.
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: secret))
        try handle.truncate(atOffset: 0)
        try handle.write(contentsOf: Data("three\n".utf8))
        try handle.close()
        var seen: PropertyList?
        repeat { seen = await updates.next() ?? nil } while seen != .string("three") && seen != nil
        #expect(seen == .string("three"))
        #expect(defaults.string(forKey: "ApiKey") == "three")
    }
}
