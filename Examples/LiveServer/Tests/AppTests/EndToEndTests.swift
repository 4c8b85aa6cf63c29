import Foundation
import Synchronization
import Testing

/// The server as a user runs it: the built `LiveServer` binary, changed by the built `defaults` command,
/// observed over HTTP (Python's urllib, an independent client).
@Suite("LiveServer end to end")
struct EndToEndTests {
    /// The example lives in Examples/LiveServer of the LiveDefaults package.
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let repositoryRoot = packageRoot.deletingLastPathComponent().deletingLastPathComponent()

    /// The root package's `defaults` binary, built first when it is missing.
    static func defaultsTool() throws -> URL {
        let binary = repositoryRoot.appendingPathComponent(".build/debug/defaults")
        if !FileManager.default.isExecutableFile(atPath: binary.path) {
            let build = Process()
            build.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            build.arguments = ["swift", "build", "--package-path", repositoryRoot.path, "--product", "defaults"]
            try build.run()
            build.waitUntilExit()
        }
        return binary
    }

    static func serverBinary() -> URL {
        var directory = Bundle.main.bundleURL
        for _ in 0..<4 {
            let candidate = directory.appendingPathComponent("LiveServer")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
        return packageRoot.appendingPathComponent(".build/debug/LiveServer")
    }

    @Test("defaults write changes the running server: GET /settings and /events show it")
    func defaultsWriteReachesServer() throws {
        let directory = TemporaryDirectory()
        let (server, address) = try Self.startServer(in: directory)
        defer {
            server.terminate()
            server.waitUntilExit()
        }

        // Follow /events in another process while the shell writes.
        let (events, eventOutput) = try Self.eventClient("\(address)/events?max=1")
        let deadline = Date().addingTimeInterval(20)
        var received = ""
        while !received.contains("event: settings"), Date() < deadline {
            received += String(decoding: eventOutput.fileHandleForReading.availableData, as: UTF8.self)
        }

        let write = ["write", "com.example.liveserver", "Greeting", "Hi from the shell"]
        #expect(try Self.defaults(write, in: directory) == 0)

        received += String(decoding: eventOutput.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        events.waitUntilExit()
        // The change, with every setting from the version it belongs to (`values`).
        #expect(received.contains(#""key":"Greeting","origin":"external","value":"Hi from the shell","values":{"#))
        #expect(received.contains(#""Greeting":"Hi from the shell""#))

        let settings = try Self.get("\(address)/settings")
        #expect(settings.contains(#""Greeting":"Hi from the shell""#))
        #expect(try Self.get("\(address)/hello").contains("Hi from the shell"))
    }

    @Test("/metrics counts another process's write; /changes lists it with its writer and its reason")
    func metricsAndChanges() throws {
        let directory = TemporaryDirectory()
        let (server, address) = try Self.startServer(in: directory)
        defer {
            server.terminate()
            server.waitUntilExit()
        }
        let external = #"livedefaults_changes_total{domain="com.example.liveserver",origin="external"}"#
        // No file yet: nothing read, nothing changed — and every series of the domain is there, at 0, so that an
        // alert on its increase or its absence works from the start.
        let start = try Self.get("\(address)/metrics")
        #expect(start.contains(external + " 0"), "\(start)")
        #expect(start.contains(#"livedefaults_reload_failures_total{domain="com.example.liveserver"} 0"#), "\(start)")
        #expect(start.contains(#"livedefaults_last_known_good{domain="com.example.liveserver"} 0"#), "\(start)")

        let write = ["write", "com.example.liveserver", "Greeting", "Hi from the shell", "--reason", "a greeting"]
        #expect(try Self.defaults(write, in: directory) == 0)

        var metrics = ""
        let deadline = Date().addingTimeInterval(20)
        while !metrics.contains(external + " 1"), Date() < deadline {
            metrics = try Self.get("\(address)/metrics")
            if !metrics.contains(external + " 1") { Thread.sleep(forTimeInterval: 0.05) }
        }
        #expect(metrics.contains(external + " 1"), "\(metrics)")
        #expect(metrics.contains(#"livedefaults_reloads_total{domain="com.example.liveserver"}"#))
        let changes = try Self.get("\(address)/changes")
        #expect(changes.contains(#""key":"Greeting""#) && changes.contains(#""new":"Hi from the shell""#), "\(changes)")
        #expect(changes.contains(#""origin":"local""#) && changes.contains(#""who":"defaults (pid "#), "\(changes)")
        #expect(changes.contains(#""reason":"a greeting""#), "\(changes)")
    }

    /// Runs the `defaults` command with `arguments` against the configuration in `directory`, as a shell
    /// would; returns its exit status.
    static func defaults(_ arguments: [String], in directory: TemporaryDirectory) throws -> Int32 {
        let process = Process()
        process.executableURL = try defaultsTool()
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(["XDG_CONFIG_HOME": directory.path]) { $1 }
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// An SSE client in another process (Python's urllib) on `url`, printing each line as it arrives.
    static func eventClient(_ url: String) throws -> (Process, Pipe) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "python3", "-c",
            "import sys, urllib.request\nfor line in urllib.request.urlopen(sys.argv[1], timeout=60):\n print(line.decode().rstrip(), flush=True)",
            url,
        ]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        return (process, pipe)
    }

    /// Starts the built server on a free port in `directory`; returns it and its address.
    static func startServer(in directory: TemporaryDirectory) throws -> (Process, String) {
        let server = Process()
        server.executableURL = Self.serverBinary()
        server.arguments = ["--port", "0", "--directory", directory.path]
        let output = Pipe()
        server.standardOutput = output
        try server.run()
        var banner = ""
        let deadline = Date().addingTimeInterval(20)
        while !banner.contains("/hello"), Date() < deadline {
            banner += String(decoding: output.fileHandleForReading.availableData, as: UTF8.self)
        }
        guard let address = banner.firstMatch(of: /LiveServer on (http:\/\/127\.0\.0\.1:\d+)/)?.1 else {
            server.terminate()
            throw CancellationError()
        }
        return (server, String(address))
    }

    @Test(
        "a refused RateLimit never runs, not after a restart: /hello answers 429 past the accepted limit; the page says why"
    )
    func refusedRateLimitAcrossRestarts() throws {
        let directory = TemporaryDirectory()
        var (server, address) = try Self.startServer(in: directory)
        defer { if server.isRunning { server.interrupt() } }
        #expect(try Self.defaults(["write", "com.example.liveserver", "RateLimit", "-int", "5"], in: directory) == 0)
        #expect(Self.eventually { (try? Self.get("\(address)/settings"))?.contains(#""RateLimit":5"#) == true })
        // Refused by the server's rule while it runs, and kept on disk (no --wait puts it back).
        #expect(
            try Self.defaults(["write", "com.example.liveserver", "RateLimit", "-int", "100000"], in: directory) == 0)
        #expect(Self.eventually { (try? Self.get("\(address)/refusal"))?.contains("RateLimit 100000 needs") == true })
        server.terminate()
        server.waitUntilExit()
        // And while it is stopped.
        #expect(
            try Self.defaults(["write", "com.example.liveserver", "RateLimit", "-int", "20000"], in: directory) == 0)
        (server, address) = try Self.startServer(in: directory)
        // The rule holds from the first request: five answered, the sixth refused (the limit accepted last).
        let statuses = try Self.statuses("\(address)/hello", count: 6)
        #expect(statuses == [200, 200, 200, 200, 200, 429], "\(statuses)")
        var refusal: [String: Any] = [:]
        #expect(
            Self.eventually {
                let text = (try? Self.get("\(address)/refusal")) ?? ""
                refusal = (try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]) ?? [:]
                return refusal["reason"] != nil
            })
        #expect(refusal["fallback"] as? String == "changeLog", "\(refusal)")
        #expect((refusal["reason"] as? String)?.contains("RateLimit 20000 needs an APIKey") == true, "\(refusal)")
        #expect(try Self.get("\(address)/settings").contains(#""RateLimit":5"#))
    }

    /// Polls `condition` until it holds, 30 s at most (the machine may be busy).
    static func eventually(_ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            if condition() { return true }
            usleep(20_000)
        }
        return condition()
    }

    /// The HTTP status of `count` GET requests to `url`, one after another (Python's urllib).
    static func statuses(_ url: String, count: Int) throws -> [Int] {
        let script = """
            import sys, urllib.request, urllib.error
            for _ in range(int(sys.argv[2])):
                try:
                    print(urllib.request.urlopen(sys.argv[1], timeout=10).status)
                except urllib.error.HTTPError as error:
                    print(error.code)
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script, url, String(count)]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self).split(separator: "\n").compactMap { Int($0) }
    }

    @Test("SIGTERM with /events clients connected: the server exits 0 within a second, and the clients end")
    func shutdownWithClients() throws {
        let directory = TemporaryDirectory()
        let (server, address) = try Self.startServer(in: directory)
        defer { if server.isRunning { server.interrupt() } }
        var clients: [(Process, Pipe)] = []
        for _ in 0..<3 { clients.append(try Self.eventClient("\(address)/events")) }
        let deadline = Date().addingTimeInterval(20)
        for (_, pipe) in clients {
            var received = ""
            while !received.contains("event: settings"), Date() < deadline {
                received += String(decoding: pipe.fileHandleForReading.availableData, as: UTF8.self)
            }
            #expect(received.contains("event: settings"))
        }
        let start = ContinuousClock.now
        server.terminate()  // SIGTERM
        let exited = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            server.waitUntilExit()
            exited.signal()
        }
        // A second is the promise (measured: a few milliseconds); 10 s only keeps a hung server from hanging
        // the suite.
        #expect(exited.wait(timeout: .now() + 10) == .success, "the server did not exit on SIGTERM")
        let elapsed = ContinuousClock.now - start
        print("LiveServer: SIGTERM to exit with 3 /events clients connected: \(elapsed)")
        #expect(elapsed < .seconds(1))
        #expect(server.terminationReason == .exit && server.terminationStatus == 0)
        for (client, _) in clients {
            client.waitUntilExit()  // the server closed the stream
        }
    }

    static func get(_ url: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "python3", "-c",
            "import sys, urllib.request\nprint(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())", url,
        ]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }
}
