@testable import App
import Foundation
import Hummingbird
import HummingbirdTesting
import LiveDefaults
import LiveDefaultsTesting
import ServiceLifecycle
import Synchronization
import Testing

/// Every route and error, through Hummingbird's router test client, on a store in a temporary directory.
@Suite("LiveServer routes")
struct AppTests {
    static func store() throws -> (Defaults, TemporaryDirectory) {
        let directory = TemporaryDirectory()
        let defaults = try Defaults(configuration: .rooted(at: directory.path, applicationDomain: serverDomain))
        return (defaults, directory)
    }

    static func body(_ response: TestResponse) -> [String: Any] {
        guard let object = try? JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any]
        else { return [:] }
        return object
    }

    @Test("GET /settings returns every setting as JSON")
    func getSettings() async throws {
        let (defaults, directory) = try Self.store()
        defaults.set("Howdy", forKey: "Greeting")
        let app = buildApplication(defaults: defaults, options: ServerOptions(port: 0))
        try await app.test(.router) { client in
            try await client.execute(uri: "/settings", method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType] == "application/json")
                let settings = Self.body(response)
                #expect(settings["Greeting"] as? String == "Howdy")
                #expect(settings["RateLimit"] as? Int == 60)
                #expect(settings["Maintenance"] as? Bool == false)
                #expect(settings["LogLevel"] as? String == "info")
                #expect((settings["Features"] as? [String: Any])?["search"] as? Bool == false)
                #expect(settings["APIKey"] as? String == "<secret>")
                #expect(settings.count == DefaultsKeys.serverSettings.count)
            }
        }
        withExtendedLifetime(directory) {}
    }

    @Test("PUT /settings/{key} stores valid values through the library")
    func putValid() async throws {
        let (defaults, directory) = try Self.store()
        let app = buildApplication(defaults: defaults, options: ServerOptions(port: 0))
        try await app.test(.router) { client in
            for (key, value) in [
                ("Greeting", #""Bonjour""#), ("RateLimit", "5"), ("Maintenance", "true"), ("LogLevel", #""debug""#),
                ("Features", #"{"search": true, "banner": "Back at 5"}"#), ("APIKey", #""k-123""#),
            ] {
                try await client.execute(uri: "/settings/\(key)", method: .put, body: ByteBuffer(string: value)) {
                    response in
                    #expect(response.status == .ok, "\(key)")
                    if key == "APIKey" { #expect(Self.body(response)["APIKey"] as? String == "<secret>") }
                }
            }
        }
        #expect(defaults.string(forKey: "Greeting") == "Bonjour")
        #expect(defaults.integer(forKey: "RateLimit") == 5)
        #expect(defaults.bool(forKey: "Maintenance"))
        #expect(defaults.string(forKey: "LogLevel") == "debug")
        #expect(defaults.value(forKey: "Features") == ["search": true, "banner": "Back at 5"])
        #expect(defaults.string(forKey: "APIKey") == "k-123")
        #expect(defaults.synchronize())
        // Other processes see it: it is in the domain file.
        let file = try PropertyList.decode(
            Data(contentsOf: URL(fileURLWithPath: directory.path + "/\(serverDomain).plist")))
        #expect(file.value.dictionaryValue?["Greeting"] == "Bonjour")
    }

    @Test("PUT of a value the schema refuses is 422 with its message; unknown key 404; not JSON 400")
    func putInvalid() async throws {
        let (defaults, directory) = try Self.store()
        let app = buildApplication(defaults: defaults, options: ServerOptions(port: 0))
        let rateLimit = #"key "RateLimit" accepts an integer in 1…100000"#
        try await app.test(.router) { client in
            for (key, value, fragment) in [
                ("RateLimit", #""abc""#, rateLimit),
                ("RateLimit", "0", rateLimit + "; the value (integer 0) is out of range"),
                ("RateLimit", "true", rateLimit), ("RateLimit", "2.5", rateLimit), ("RateLimit", "[1]", rateLimit),
                ("Maintenance", "1", #"key "Maintenance" accepts a Boolean"#),
                ("Greeting", "42", #"key "Greeting" accepts a string"#),
                ("LogLevel", #""loud""#, "one of: trace, debug, info, notice, warning, error, critical"),
                ("Features", #"{"search": [1]}"#, "cannot be read as the key's type"),
                ("Features", #""on""#, #"key "Features" accepts a dictionary"#),
                ("Features", #"{"banner": [null]}"#, "an array cannot hold null"),
                ("APIKey", "12345", #"key "APIKey" accepts a string; the value (<secret>)"#),
            ] {
                try await client.execute(uri: "/settings/\(key)", method: .put, body: ByteBuffer(string: value)) {
                    response in
                    #expect(response.status == .unprocessableContent, "\(key) = \(value)")
                    let message = Self.body(response)["error"] as? String
                    #expect(message?.contains(fragment) == true, "\(key) = \(value): \(message ?? "")")
                }
            }
            try await client.execute(uri: "/settings/Colour", method: .put, body: ByteBuffer(string: "1")) { response in
                #expect(response.status == .notFound)
                #expect((Self.body(response)["error"] as? String)?.contains("Greeting") == true)
            }
            try await client.execute(uri: "/settings/RateLimit", method: .put, body: ByteBuffer(string: "{oops")) {
                response in
                #expect(response.status == .badRequest)
            }
        }
        #expect(defaults.object(forKey: "RateLimit") == nil, "nothing was stored")
        withExtendedLifetime(directory) {}
    }

    @Test("PUT /settings stores several settings as one change, or none of them")
    func putSeveral() async throws {
        let (defaults, directory) = try Self.store()
        let app = buildApplication(defaults: defaults, options: ServerOptions(port: 0))
        var changes = defaults.changes().makeAsyncIterator()
        try await app.test(.router) { client in
            let body = #"{"RateLimit": 250, "Greeting": "Together", "Maintenance": true}"#
            try await client.execute(uri: "/settings", method: .put, body: ByteBuffer(string: body)) { response in
                #expect(response.status == .ok)
                let answer = Self.body(response)
                #expect(answer["RateLimit"] as? Int == 250 && answer["Greeting"] as? String == "Together")
                #expect(answer.count == 3)
            }
            // One refused value: nothing stored, the key's message.
            let refused = #"{"RateLimit": 0, "Greeting": "Never"}"#
            try await client.execute(uri: "/settings", method: .put, body: ByteBuffer(string: refused)) { response in
                #expect(response.status == .unprocessableContent)
                #expect((Self.body(response)["error"] as? String)?.contains("RateLimit") == true)
            }
            try await client.execute(uri: "/settings", method: .put, body: ByteBuffer(string: #"{"Colour": 1}"#)) {
                response in
                #expect(response.status == .notFound)
            }
            try await client.execute(uri: "/settings", method: .put, body: ByteBuffer(string: "[1, 2]")) { response in
                #expect(response.status == .badRequest)
            }
        }
        var batch: [KeyChange] = []
        for _ in 0..<3 { if let change = await changes.next() { batch.append(change) } }
        #expect(Set(batch.map(\.key)) == ["RateLimit", "Greeting", "Maintenance"])
        #expect(Set(batch.map(\.batch)).count == 1, "one change")
        #expect(defaults.integer(forKey: "RateLimit") == 250 && defaults.string(forKey: "Greeting") == "Together")
        let file = try PropertyList.decode(
            Data(contentsOf: URL(fileURLWithPath: directory.path + "/\(serverDomain).plist")))
        #expect(file.value.dictionaryValue?["Greeting"] == "Together", "on disk when the answer came")
    }

    @Test("GET /temporary lists the temporary changes still to undo: until when, back to what, why; secrets masked")
    func temporaryChanges() async throws {
        let (defaults, directory) = try Self.store()
        _ = directory
        let app = buildApplication(defaults: defaults, options: ServerOptions(port: 0))
        try defaults.transaction { $0.set(120, forKey: "RateLimit") }
        try defaults.transaction(for: .seconds(3600), reason: "incident 4521") { transaction in
            transaction.set(30, forKey: "RateLimit")
            transaction.set("k2", forKey: "APIKey")
        }
        try await app.test(.router) { client in
            try await client.execute(uri: "/temporary", method: .get) { response in
                let list = try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [[String: Any]]
                let change = try #require(list?.first)
                #expect(list?.count == 1)
                #expect(change["reason"] as? String == "incident 4521")
                let keys = change["keys"] as? [String: [String: Any]]
                #expect(keys?["RateLimit"]?["now"] as? Int == 30 && keys?["RateLimit"]?["returnsTo"] as? Int == 120)
                #expect(keys?["APIKey"]?["now"] as? String == "<secret>")
                #expect(keys?["APIKey"]?["returnsTo"] is NSNull)
            }
        }
    }

    @Test("A version that breaks the rule across settings is refused whole, from the page or another process")
    func ruleAcrossSettings() async throws {
        let (defaults, directory) = try Self.store()
        let app = buildApplication(defaults: defaults, options: ServerOptions(port: 0))
        try await app.test(.router) { client in
            // From the page: 422 with the rule's reason; nothing stored.
            try await client.execute(uri: "/settings/RateLimit", method: .put, body: ByteBuffer(string: "50000")) {
                response in
                #expect(response.status == .unprocessableContent)
                #expect((Self.body(response)["error"] as? String)?.contains("needs an APIKey") == true)
            }
            try await client.execute(uri: "/refusal", method: .get) { response in
                #expect(String(buffer: response.body) == "null", "the page's own refused edit is not a version")
            }
            // Another process writes a version that breaks it, with a key beside it: neither is applied.
            try PropertyList.dictionary(["RateLimit": 20_000, "Greeting": "Open to all"]).encoded().write(
                to: URL(fileURLWithPath: directory.path + "/\(serverDomain).plist"))
            var refusal: [String: Any] = [:]
            for _ in 0..<3000 where refusal.isEmpty {
                try await client.execute(uri: "/refusal", method: .get) { response in
                    refusal = Self.body(response)
                }
                if refusal.isEmpty { try await Task.sleep(for: .milliseconds(10)) }
            }
            #expect((refusal["reason"] as? String)?.contains("RateLimit 20000 needs an APIKey") == true)
            try await client.execute(uri: "/settings", method: .get) { response in
                let settings = Self.body(response)
                #expect(settings["RateLimit"] as? Int == 60)
                #expect(settings["Greeting"] as? String == "Hello from LiveDefaults")
            }
            // With an API key the same limit passes.
            try await client.execute(
                uri: "/settings", method: .put, body: ByteBuffer(string: #"{"RateLimit": 20000, "APIKey": "k"}"#)
            ) { response in
                #expect(response.status == .ok)
            }
            #expect(defaults.integer(forKey: "RateLimit") == 20_000)
        }
    }

    @Test("A forced setting is 409")
    func putForced() async throws {
        let directory = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory.path + "/Managed", withIntermediateDirectories: true)
        try PropertyList.dictionary(["RateLimit": 10]).encoded().write(
            to: URL(fileURLWithPath: directory.path + "/Managed/\(serverDomain).plist"))
        let defaults = try Defaults(configuration: .rooted(at: directory.path, applicationDomain: serverDomain))
        let app = buildApplication(defaults: defaults, options: ServerOptions(port: 0))
        try await app.test(.router) { client in
            try await client.execute(uri: "/settings/RateLimit", method: .put, body: ByteBuffer(string: "20")) {
                response in
                #expect(response.status == .conflict)
                #expect((Self.body(response)["error"] as? String)?.contains("administrator") == true)
            }
            try await client.execute(uri: "/settings", method: .get) { response in
                #expect(Self.body(response)["RateLimit"] as? Int == 10)
            }
        }
    }

    @Test("The environment pins a setting over the file; the form and /settings/sources name each value's source")
    func environmentSources() async throws {
        let directory = TemporaryDirectory()
        let secret = directory.path + "/api_key"
        try Data("k-from-a-file\n".utf8).write(to: URL(fileURLWithPath: secret))
        var configuration = Defaults.Configuration.rooted(at: directory.path, applicationDomain: serverDomain)
        configuration.environmentPrefix = serverEnvironmentPrefix
        configuration.environmentVariables = ["LIVESERVER_RATE_LIMIT": "500", "LIVESERVER_API_KEY_FILE": secret]
        let defaults = try Defaults(configuration: configuration)
        defaults.set("Howdy", forKey: "Greeting")
        let app = buildApplication(defaults: defaults, options: ServerOptions(port: 0))
        try await app.test(.router) { client in
            // The schema is published when the app is built: the environment's text is typed by it.
            try await client.execute(uri: "/settings", method: .get) { response in
                #expect(Self.body(response)["RateLimit"] as? Int == 500)
            }
            try await client.execute(uri: "/settings/RateLimit", method: .put, body: ByteBuffer(string: "20")) {
                response in
                #expect(response.status == .ok)
            }
            try await client.execute(uri: "/settings/sources", method: .get) { response in
                let sources = Self.body(response)
                #expect(sources["RateLimit"] as? String == "environment variable LIVESERVER_RATE_LIMIT")
                #expect(
                    sources["APIKey"] as? String
                        == "the file \(secret), named by environment variable LIVESERVER_API_KEY_FILE")
                #expect((sources["Greeting"] as? String)?.hasPrefix("\(serverDomain) currentUser") == true)
                #expect(sources["Maintenance"] as? String == "the default")
            }
            try await client.execute(uri: "/settings/schema", method: .get) { response in
                let keys = Self.body(response)["keys"] as? [[String: Any]] ?? []
                let rateLimit = keys.first { $0["name"] as? String == "RateLimit" }
                #expect(rateLimit?["source"] as? String == "environment variable LIVESERVER_RATE_LIMIT")
            }
            // The file has what was written; the server reads its environment's value.
            #expect(defaults.persistentDomainValues(forName: serverDomain)?["RateLimit"] == 20)
            #expect(defaults.integer(forKey: "RateLimit") == 500)
        }
        withExtendedLifetime(directory) {}
    }

    @Test("Editing needs loopback, or the bearer token when one is set")
    func authorization() async throws {
        let (defaults, directory) = try Self.store()
        let open = buildApplication(defaults: defaults, options: ServerOptions(host: "0.0.0.0", port: 0))
        try await open.test(.router) { client in
            try await client.execute(uri: "/settings/RateLimit", method: .put, body: ByteBuffer(string: "5")) {
                response in
                #expect(response.status == .forbidden)
            }
        }
        let guarded = buildApplication(
            defaults: defaults, options: ServerOptions(host: "0.0.0.0", port: 0, token: "s3cret"))
        try await guarded.test(.router) { client in
            try await client.execute(uri: "/settings/RateLimit", method: .put, body: ByteBuffer(string: "5")) {
                response in
                #expect(response.status == .unauthorized)
            }
            try await client.execute(
                uri: "/settings/RateLimit", method: .put, headers: [.authorization: "Bearer wrong"],
                body: ByteBuffer(string: "5")
            ) { response in
                #expect(response.status == .unauthorized)
            }
            try await client.execute(
                uri: "/settings/RateLimit", method: .put, headers: [.authorization: "Bearer s3cret"],
                body: ByteBuffer(string: "5")
            ) { response in
                #expect(response.status == .ok)
            }
        }
        #expect(defaults.integer(forKey: "RateLimit") == 5)
        withExtendedLifetime(directory) {}
    }

    @Test("GET /hello follows greeting, banner, search, maintenance and rate limit live")
    func hello() async throws {
        let (defaults, directory) = try Self.store()
        let app = buildApplication(defaults: defaults, options: ServerOptions(port: 0))
        try await app.test(.router) { client in
            try await client.execute(uri: "/hello", method: .get) { response in
                #expect(Self.body(response)["greeting"] as? String == "Hello from LiveDefaults")
            }
            defaults.set("Hi", forKey: "Greeting")
            defaults.set(["search": true, "banner": "New!"] as [String: Any], forKey: "Features")
            try await client.execute(uri: "/hello?q=swift", method: .get) { response in
                let body = Self.body(response)
                #expect(
                    body["greeting"] as? String == "Hi" && body["banner"] as? String == "New!"
                        && body["query"] as? String == "swift")
            }
            defaults.set(true, forKey: "Maintenance")
            try await client.execute(uri: "/hello", method: .get) { response in
                #expect(response.status == .serviceUnavailable)
            }
            defaults.set(false, forKey: "Maintenance")
            defaults.set(1, forKey: "RateLimit")
            var statuses: [HTTPResponse.Status] = []
            for _ in 0..<3 {
                try await client.execute(uri: "/hello", method: .get) { response in statuses.append(response.status) }
            }
            #expect(statuses.contains(.tooManyRequests))
            defaults.set(1000, forKey: "RateLimit")
            // The API key, a secret, is checked as soon as it is set.
            defaults.set("k-1", forKey: "APIKey")
            try await client.execute(uri: "/hello", method: .get) { response in
                #expect(response.status == .unauthorized)
            }
            try await client.execute(uri: "/hello", method: .get, headers: [.init("X-API-Key")!: "k-2"]) {
                response in
                #expect(response.status == .unauthorized)
            }
            try await client.execute(uri: "/hello", method: .get, headers: [.init("X-API-Key")!: "k-1"]) {
                response in
                #expect(response.status == .ok)
            }
        }
        withExtendedLifetime(directory) {}
    }

    @Test("GET / serves the settings page, wired to /settings and /events")
    func page() async throws {
        let (defaults, directory) = try Self.store()
        let app = buildApplication(defaults: defaults, options: ServerOptions(port: 0))
        try await app.test(.router) { client in
            try await client.execute(uri: "/", method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType] == "text/html; charset=utf-8")
                let html = String(buffer: response.body)
                #expect(
                    html.contains("new EventSource(\"/events\")") && html.contains("method: \"PUT\"")
                        && html.contains(serverDomain))
            }
            try await client.execute(uri: "/settings/types", method: .get) { response in
                #expect(
                    Self.body(response)["LogLevel"] as? String
                        == "a string, one of: trace, debug, info, notice, warning, error, critical")
            }
        }
        withExtendedLifetime(directory) {}
    }

    @Test("the server publishes its settings' schema; /settings/schema describes each key from it for the form")
    func schema() async throws {
        let (defaults, directory) = try Self.store()
        let app = buildApplication(defaults: defaults, options: ServerOptions(port: 0))
        // Published where the `defaults` command and other programs look (this store's first schema directory).
        let published = try #require(try defaults.publishedSchema())
        #expect(Set(published.keys.keys) == Set(DefaultsKeys.serverSettings.map(\.name)))
        #expect(FileManager.default.fileExists(atPath: directory.path + "/Schemas/\(serverDomain).plist"))
        // A key the program does not declare, added to the published file by a package: the page shows it too.
        var extended = published
        extended.keys["Motd"] = KeySchema(name: "Motd", type: .string, summary: "Message of the day.")
        try extended.write(to: directory.path + "/Schemas")
        try await app.test(.router) { client in
            try await client.execute(uri: "/settings/schema", method: .get) { response in
                let form = Self.body(response)
                #expect(form["domain"] as? String == serverDomain)
                let keys = (form["keys"] as? [[String: Any]]) ?? []
                let byName = Dictionary(keys.map { ($0["name"] as? String ?? "", $0) }, uniquingKeysWith: { a, _ in a })
                #expect(keys.map { $0["name"] as? String ?? "" } == byName.keys.sorted(), "in name order")
                #expect(byName["RateLimit"]?["type"] as? String == "integer")
                #expect(
                    byName["RateLimit"]?["minimum"] as? Int == 1 && byName["RateLimit"]?["maximum"] as? Int == 100_000)
                #expect(byName["RateLimit"]?["default"] as? Int == 60)
                #expect((byName["RateLimit"]?["summary"] as? String)?.contains("429") == true)
                #expect(byName["LogLevel"]?["choices"] as? [String] == LogLevel.allCases.map(\.rawValue))
                #expect(byName["Maintenance"]?["type"] as? String == "boolean")
                #expect(byName["Features"]?["type"] as? String == "dictionary")
                #expect(
                    byName["APIKey"]?["secret"] as? Bool == true
                        && byName["APIKey"]?["default"] as? String == "<secret>")
                #expect(byName["Motd"]?["summary"] as? String == "Message of the day.")
            }
            try await client.execute(uri: "/settings/Motd", method: .put, body: ByteBuffer(string: #""Welcome""#)) {
                response in
                #expect(response.status == .ok)
            }
            try await client.execute(uri: "/settings/Motd", method: .put, body: ByteBuffer(string: "3")) { response in
                #expect(response.status == .unprocessableContent)
            }
        }
        #expect(defaults.string(forKey: "Motd") == "Welcome")
    }

    @Test("a value another writer stored against the schema is flagged in the form's description of the key")
    func refusedStoredValue() async throws {
        let (defaults, directory) = try Self.store()
        let app = buildApplication(defaults: defaults, options: ServerOptions(port: 0))
        // Foundation's untyped API stores what it is given (as `defaults write --no-validate` does).
        defaults.set(0, forKey: "RateLimit")
        try await app.test(.router) { client in
            try await client.execute(uri: "/settings/schema", method: .get) { response in
                let keys = (Self.body(response)["keys"] as? [[String: Any]]) ?? []
                let rateLimit = keys.first { $0["name"] as? String == "RateLimit" }
                #expect((rateLimit?["refused"] as? String)?.contains("is out of range") == true)
                #expect(keys.filter { $0["refused"] != nil }.count == 1)
            }
        }
        withExtendedLifetime(directory) {}
    }

    @Test("GET /events sends the settings, then one event per change")
    func events() async throws {
        let (defaults, directory) = try Self.store()
        let app = buildApplication(defaults: defaults, options: ServerOptions(port: 0))
        try await app.test(.live) { client in
            let writer = Task {
                // Two subscriptions: the log-level follower (a service) and this request's stream. Changes
                // made once both exist are events.
                let deadline = ContinuousClock.now + .seconds(10)
                while defaults.activeObserverCount < 2, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(5))
                }
                defaults.set("Ahoy", forKey: "Greeting")
                defaults.set("ignored", forKey: "NotASetting")
                defaults.set(7, forKey: "RateLimit")
            }
            try await client.execute(uri: "/events?max=2", method: .get) { response in
                #expect(response.headers[.contentType] == "text/event-stream")
                let text = String(buffer: response.body)
                let events = text.components(separatedBy: "\n\n").filter { !$0.isEmpty }
                #expect(events.count == 3)
                #expect(events.first?.hasPrefix("event: settings\ndata: {") == true)
                // Each change carries every setting from one version, after that change.
                let changes = events.dropFirst().map { event -> [String: Any] in
                    #expect(event.hasPrefix("event: change\ndata: "))
                    let data = Data(event.dropFirst("event: change\ndata: ".count).utf8)
                    return (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
                }
                #expect(changes.first?["key"] as? String == "Greeting" && changes.first?["value"] as? String == "Ahoy")
                #expect(changes.first?["origin"] as? String == "local")
                #expect((changes.first?["values"] as? [String: Any])?["Greeting"] as? String == "Ahoy")
                #expect(changes.last?["key"] as? String == "RateLimit" && changes.last?["value"] as? Int == 7)
                #expect((changes.last?["values"] as? [String: Any])?["RateLimit"] as? Int == 7)
                #expect((changes.last?["values"] as? [String: Any])?["APIKey"] as? String == "<secret>")
                #expect(
                    (changes.last?["batch"] as? Int ?? 0) > (changes.first?["batch"] as? Int ?? .max),
                    "two sets, two batches")
            }
            try await writer.value
        }
        withExtendedLifetime(directory) {}
    }
}

extension AppTests {
    @Test("/events ends as soon as its client disconnects, and on graceful shutdown with a client connected")
    func eventsEnd() async throws {
        let (defaults, directory) = try Self.store()
        let port = Mutex<Int?>(nil)
        let app = buildApplication(defaults: defaults, options: ServerOptions(port: 0)) { bound in
            port.withLock { $0 = bound }
        }
        let group = ServiceGroup(services: [app])
        let running = Task { try await group.run() }
        func waitFor(_ condition: () -> Bool) async -> Bool {
            let deadline = ContinuousClock.now + .seconds(20)
            while !condition(), ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(5)) }
            return condition()
        }
        #expect(await waitFor { port.withLock { $0 } != nil })
        let address = "http://127.0.0.1:\(port.withLock { $0 } ?? 0)"
        #expect(await waitFor { defaults.activeObserverCount == 1 }, "the log-level follower")

        // A client connects, reads the first event, and goes away (its process is killed).
        let (client, pipe) = try EndToEndTests.eventClient("\(address)/events")
        #expect(await Self.read(pipe, until: "event: settings"))
        // The handler's stream subscribes when it first waits for a change, which may be just after the event.
        #expect(await waitFor { defaults.activeObserverCount == 2 })
        // SIGKILL: a child spawned from a pool thread inherits that thread's blocked signals, SIGTERM among
        // them, and would live on until its own 60 s timeout.
        kill(client.processIdentifier, SIGKILL)
        client.waitUntilExit()
        #expect(await waitFor { defaults.activeObserverCount == 1 }, "the handler's stream ended with its client")

        // Another stays connected through a graceful shutdown: the group still returns.
        let (second, secondPipe) = try EndToEndTests.eventClient("\(address)/events")
        #expect(await Self.read(secondPipe, until: "event: settings"))
        await group.triggerGracefulShutdown()
        try await running.value
        #expect(defaults.streamsFinished, "DefaultsService ran")
        #expect(await waitFor { defaults.activeObserverCount == 0 })
        // In this process the client's connection was seen to stay open after the group returned (until the
        // client's own 60 s timeout; the built server's exit closes it, see EndToEndTests): end it here.
        kill(second.processIdentifier, SIGKILL)
        second.waitUntilExit()
        withExtendedLifetime(directory) {}
    }
}

extension AppTests {
    /// Reads a client's output until it contains `text` (false if the client ended first), on a thread of its
    /// own: a blocking read on the cooperative pool would starve the in-process server's handlers (on a
    /// 2-core machine the pool has two threads), and the client would wait for a response that never comes.
    static func read(_ pipe: Pipe, until text: String) async -> Bool {
        await withCheckedContinuation { continuation in
            Thread {
                var received = ""
                while !received.contains(text) {
                    let data = pipe.fileHandleForReading.availableData
                    if data.isEmpty { break }
                    received += String(decoding: data, as: UTF8.self)
                }
                continuation.resume(returning: received.contains(text))
            }.start()
        }
    }
}

/// A fresh directory, removed when the test process exits.
final class TemporaryDirectory: Sendable {
    let path = NSTemporaryDirectory() + "liveserver-tests-\(UUID().uuidString)"
    private static let created = Mutex<[String]>([])

    init() {
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let first = Self.created.withLock { created in
            created.append(path)
            return created.count == 1
        }
        if first {
            atexit {
                for path in TemporaryDirectory.created.withLock({ $0 }) {
                    try? FileManager.default.removeItem(atPath: path)
                }
            }
        }
    }
}
