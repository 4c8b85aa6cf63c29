import Foundation
import LiveDefaults
import TestProcesses
import Testing

/// A running program whose environment pins a key (``Defaults/Configuration/environmentPrefix``): the
/// environment beats the domain file and a later `defaults write`, which warns that the program will not see
/// it; `defaults readers`, `describe` and `doctor` say where the program's value comes from.
@Suite("The environment pins keys: defaults write warns, describe and doctor say so", .blockingWork)
struct EnvironmentToolTests {
    static let domain = "com.example.pinned"

    /// The helper's `env-reader`: a store with the prefix `MYSERVER_`, run with `variables` in its environment.
    final class Program: @unchecked Sendable {
        // @unchecked: used from the test's thread only.
        let process: Process
        let input = Pipe()
        let output = Pipe()
        var pid: Int32 { process.processIdentifier }

        init(_ sandbox: Sandbox, variables: [String: String]) throws {
            process = try helperProcess(
                ["env-reader", sandbox.path, EnvironmentToolTests.domain, "MYSERVER_"],
                environment: sandbox.environment(variables))
            process.standardInput = input
            process.standardOutput = output
            process.standardError = FileHandle.nullDevice
            try process.run()
            #expect(readLine() == "ready")
        }

        /// What the program reads for `key`, and from where.
        func reads(_ key: String) -> String {
            try? input.fileHandleForWriting.write(contentsOf: Data("\(key)\n".utf8))
            return readLine()
        }

        private func readLine() -> String {
            var bytes: [UInt8] = []
            while let byte = try? output.fileHandleForReading.read(upToCount: 1)?.first, byte != UInt8(ascii: "\n") {
                bytes.append(byte)
            }
            return String(decoding: bytes, as: UTF8.self)
        }

        func stop() {
            try? input.fileHandleForWriting.close()
            process.waitUntilExit()
        }
    }

    @Test("the environment beats the file and a later write, which warns; readers, describe and doctor name it")
    func pinned() throws {
        let sandbox = Sandbox()
        try sandbox.ok("write", Self.domain, "RateLimit", "-int", "100")
        try sandbox.ok("write", Self.domain, "Theme", "light")
        let program = try Program(sandbox, variables: ["MYSERVER_RATE_LIMIT": "200"])
        defer { program.stop() }
        #expect(program.reads("RateLimit") == "RateLimit = 200 from environment variable MYSERVER_RATE_LIMIT")
        #expect(program.reads("Theme").hasPrefix("Theme = light from \(Self.domain) currentUser"))

        // Its announcement says which keys its environment pins (written before the program said "ready").
        #expect(try sandbox.ok("readers", Self.domain).contains("RateLimit pinned by"))
        let readers = try sandbox.ok("readers", Self.domain, "--json")
        let listed = try #require(JSONSerialization.jsonObject(with: Data(readers.utf8)) as? [[String: Any]])
        let entry = try #require(listed.first { $0["pid"] as? Int == Int(program.pid) })
        #expect(
            (entry["pinned"] as? [String: String])?["RateLimit"] == "environment variable MYSERVER_RATE_LIMIT",
            "\(readers)")

        // A write of the pinned key lands in the file, and warns; the program keeps its environment's value.
        let write = try sandbox.run("write", Self.domain, "RateLimit", "-int", "300")
        #expect(write.status == 0, "\(write.error)")
        #expect(
            write.error.contains(
                "warning: process \(program.pid) (LiveDefaultsTestHelper) will not see RateLimit: environment variable MYSERVER_RATE_LIMIT sets it there"
            ), "\(write.error)")
        #expect(try sandbox.ok("read", Self.domain, "RateLimit") == "300\n")
        #expect(program.reads("RateLimit") == "RateLimit = 200 from environment variable MYSERVER_RATE_LIMIT")
        // A key it does not pin: no warning, and the program sees the write.
        let other = try sandbox.run("write", Self.domain, "Theme", "dark", "--wait")
        #expect(other.status == 0 && !other.error.contains("warning"), "\(other.error)")
        #expect(other.output.contains("\(program.pid) LiveDefaultsTestHelper: applied"), "\(other.output)")
        #expect(program.reads("Theme").hasPrefix("Theme = dark from"))

        let doctor = try sandbox.run("doctor", Self.domain, "RateLimit")
        #expect(
            doctor.output.contains(
                "but process \(program.pid) (LiveDefaultsTestHelper) reads it from environment variable MYSERVER_RATE_LIMIT, not from a file"
            ), "\(doctor.output)")
        // describe reads the published schema (the tool's; the program has none, and reads the text).
        try DomainSchema(domain: Self.domain, keys: [KeySchema(name: "RateLimit", type: .integer)]).write(
            to: sandbox.file("data/livedefaults/schemas"))
        let describe = try sandbox.ok("describe", Self.domain, "RateLimit")
        #expect(
            describe.contains("reads it from environment variable MYSERVER_RATE_LIMIT"), "\(describe)")
    }

    @Test("a value the program cannot use is reported by it and read from the file; a secret file is its source")
    func fileAndBadValue() throws {
        let sandbox = Sandbox()
        try sandbox.ok("write", Self.domain, "Limits", "-dict", "burst", "-int", "5")
        let secret = sandbox.file("token")
        try Data("abc\n".utf8).write(to: URL(fileURLWithPath: secret))
        let program = try Program(sandbox, variables: ["MYSERVER_TOKEN_FILE": secret])
        defer { program.stop() }
        #expect(
            program.reads("Token")
                == "Token = abc from the file \(secret), named by environment variable MYSERVER_TOKEN_FILE")
        #expect(program.reads("Limits").hasPrefix("Limits = {"))
        #expect(program.reads("Missing") == "Missing = (none) from nowhere")
    }
}
