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
        let server = Process()
        server.executableURL = Self.serverBinary()
        server.arguments = ["--port", "0", "--directory", directory.path]
        let output = Pipe()
        server.standardOutput = output
        try server.run()
        defer {
            server.terminate()
            server.waitUntilExit()
        }
        // The banner names the address once the server listens.
        var banner = ""
        let deadline = Date().addingTimeInterval(20)
        while !banner.contains("/hello"), Date() < deadline {
            banner += String(decoding: output.fileHandleForReading.availableData, as: UTF8.self)
        }
        let address = try #require(banner.firstMatch(of: /LiveServer on (http:\/\/127\.0\.0\.1:\d+)/)?.1).description

        // Follow /events in another process while the shell writes.
        let events = Process()
        events.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        events.arguments = [
            "python3", "-c",
            "import sys, urllib.request\nfor line in urllib.request.urlopen(sys.argv[1], timeout=20):\n print(line.decode().rstrip(), flush=True)",
            "\(address)/events?max=1",
        ]
        let eventOutput = Pipe()
        events.standardOutput = eventOutput
        try events.run()
        var received = ""
        while !received.contains("event: settings"), Date() < deadline {
            received += String(decoding: eventOutput.fileHandleForReading.availableData, as: UTF8.self)
        }

        let write = Process()
        write.executableURL = try Self.defaultsTool()
        write.arguments = ["write", "com.example.liveserver", "Greeting", "Hi from the shell"]
        write.environment = ProcessInfo.processInfo.environment.merging(["XDG_CONFIG_HOME": directory.path]) { $1 }
        try write.run()
        write.waitUntilExit()
        #expect(write.terminationStatus == 0)

        received += String(decoding: eventOutput.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        events.waitUntilExit()
        #expect(received.contains(#"data: {"key":"Greeting","origin":"external","value":"Hi from the shell"}"#))

        let settings = try Self.get("\(address)/settings")
        #expect(settings.contains(#""Greeting":"Hi from the shell""#))
        #expect(try Self.get("\(address)/hello").contains("Hi from the shell"))
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
