import Foundation
import TestProcesses
import Testing

@testable import LiveDefaults

/// "Did my change take?": real programs with validators (the helper's `validate` mode) and a `defaults watch`
/// read a domain; `defaults readers` lists them and `defaults write --wait` waits for each to apply or refuse.
@Suite("defaults readers and --wait: every running reader answers", .blockingWork)
struct ReadersToolTests {
    static let domain = "com.example.pool"

    /// A running reader: the process, and the pipe that keeps it running (it ends when the pipe closes).
    final class Reader: @unchecked Sendable {
        // @unchecked: used from the test's thread only.
        let process: Process
        let input = Pipe()
        let output = Pipe()
        var pid: Int32 { process.processIdentifier }

        /// `saysReadyOnStandardError`: `defaults watch`, whose "Watching" line goes there.
        init(_ process: Process, saysReadyOnStandardError: Bool = false) throws {
            self.process = process
            process.standardInput = input
            process.standardOutput = output
            process.standardError = saysReadyOnStandardError ? output : FileHandle.nullDevice
            try process.run()
        }

        private var stopped = false

        /// Ends it: its standard input closed (the helper's end), then SIGTERM (`defaults watch` runs until one).
        func stop() {
            guard !stopped else { return }
            stopped = true
            try? input.fileHandleForWriting.close()
            if process.isRunning { process.terminate() }
            process.waitUntilExit()
        }

        func kill() {
            stopped = true
            Foundation.kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }

        /// What the helper served first, before anything could change ("first MinPool <n> MaxPool <n>").
        private(set) var first: String?

        private var isReady = false

        /// Waits until the reader is listed by `defaults readers` (it announced itself): its "ready" and "first"
        /// lines (the helper), or its "Watching" line (`defaults watch`); each says so only after announcing.
        func ready() {
            while !isReady {
                let line = readLine()
                if line.hasPrefix("first ") {
                    first = String(line.dropFirst(6))
                    isReady = true
                } else if line.hasPrefix("Watching ") || line.isEmpty {
                    isReady = true
                }
            }
        }

        /// Asks the helper what it serves: its next line ("MinPool <n> MaxPool <n>").
        func serves() -> String {
            ready()
            try? input.fileHandleForWriting.write(contentsOf: Data("?\n".utf8))
            return readLine()
        }

        /// What the helper serves once it serves `wanted` (it waits for that on its store's changes, 30 s at
        /// most, and answers what it serves then).
        func serves(once wanted: String) -> String {
            ready()
            try? input.fileHandleForWriting.write(contentsOf: Data("=\(wanted)\n".utf8))
            return readLine()
        }

        private func readLine() -> String {
            var bytes: [UInt8] = []
            while let byte = try? output.fileHandleForReading.read(upToCount: 1)?.first, byte != UInt8(ascii: "\n") {
                bytes.append(byte)
            }
            return String(decoding: bytes, as: UTF8.self)
        }
    }

    /// A program on the library with a validator: MinPool ≤ MaxPool ≤ `limit`.
    func validating(_ sandbox: Sandbox, limit: Int, directory: String? = nil) throws -> Reader {
        try Reader(
            helperProcess(
                ["validate", directory ?? sandbox.path, Self.domain, String(limit)],
                environment: sandbox.environment()))
    }

    /// The pids `defaults readers --json` lists.
    func listed(_ sandbox: Sandbox) throws -> [[String: Any]] {
        let output = try sandbox.ok("readers", Self.domain, "--json")
        return try #require(JSONSerialization.jsonObject(with: Data(output.utf8)) as? [[String: Any]])
    }

    func pids(_ sandbox: Sandbox) -> Set<Int> {
        Set(((try? listed(sandbox)) ?? []).compactMap { $0["pid"] as? Int })
    }

    @Test("two programs with validators and defaults watch: applied by all, refused by one, a later version by all")
    func appliedRefusedApplied() throws {
        let sandbox = Sandbox()
        try sandbox.ok("write", Self.domain, "MaxPool", "-int", "20")
        let generous = try validating(sandbox, limit: 100)
        let strict = try validating(sandbox, limit: 50)
        let watch = try Reader(
            Process.make(toolURL, ["watch", Self.domain], environment: sandbox.environment()),
            saysReadyOnStandardError: true)
        defer { [generous, strict, watch].forEach { $0.stop() } }
        for reader in [generous, strict, watch] { reader.ready() }
        let all = Set([generous.pid, strict.pid, watch.pid].map(Int.init))
        #expect(pids(sandbox) == all, "each reader announces itself")

        // Applied by all.
        var result = try sandbox.run("write", Self.domain, "MaxPool", "-int", "40", "--wait")
        #expect(result.status == 0, "\(result.output) \(result.error)")
        #expect(
            result.output.split(separator: "\n").filter { $0.hasSuffix(": applied") }.count == 3, "\(result.output)")

        // Refused by the strict program: non-zero, naming it and its reason; the others apply; kept on disk as
        // asked (--keep-refused).
        result = try sandbox.run("write", Self.domain, "MaxPool", "-int", "80", "--wait", "10", "--keep-refused")
        #expect(result.status != 0)
        #expect(result.output.contains("\(strict.pid) LiveDefaultsTestHelper: refused: MaxPool 80 is above"))
        #expect(result.output.contains("\(generous.pid) LiveDefaultsTestHelper: applied"))
        #expect(result.output.contains("\(watch.pid) defaults: applied"))
        #expect(result.error.contains("\(strict.pid)") && result.error.contains("keeps the new version"))
        #expect(try sandbox.ok("read", Self.domain, "MaxPool") == "80\n", "the file keeps the new version")
        // The listing says the same: the strict program runs the version before, and why.
        let strictEntry = try #require(try listed(sandbox).first { $0["pid"] as? Int == Int(strict.pid) })
        #expect(strictEntry["onDisk"] as? Bool == false)
        let refused = try #require(strictEntry["refused"] as? [String: Any])
        #expect((refused["reason"] as? String)?.contains("limit of 50") == true)
        let text = try sandbox.ok("readers", Self.domain)
        #expect(text.contains("not the version on disk") && text.contains("limit of 50"), "\(text)")
        // The change log records who refused the version, under its change (the program records it before it
        // announces the refusal `--wait` saw).
        let log = try sandbox.ok("log", Self.domain, "MaxPool", "--limit", "1")
        #expect(log.contains("40 → 80"), "\(log)")
        #expect(
            log.contains("refused by LiveDefaultsTestHelper (pid \(strict.pid), uid \(getuid())) at ")
                && log.contains(": MaxPool 80 is above this program's limit of 50"), "\(log)")
        #expect(!log.contains("pid \(generous.pid)"), "only the program that refused: \(log)")
        let logJSON = try sandbox.ok("log", Self.domain, "MaxPool", "--limit", "1", "--json")
        let logged = try #require(JSONSerialization.jsonObject(with: Data(logJSON.utf8)) as? [String: Any])
        let change = try #require((logged["changes"] as? [[String: Any]])?.first)
        let refusals = try #require(change["refusals"] as? [[String: Any]])
        #expect(refusals.map { $0["pid"] as? Int } == [Int(strict.pid)], "\(logJSON)")
        #expect(change["version"] as? String == refused["version"] as? String, "the version the reader refused")

        // A later valid version: applied by all.
        result = try sandbox.run("write", Self.domain, "MaxPool", "-int", "45", "--wait")
        #expect(result.status == 0, "\(result.output) \(result.error)")

        #expect(strict.serves() == "MinPool 1 MaxPool 45")
        #expect(generous.serves() == "MinPool 1 MaxPool 45")
    }

    @Test("a program that refuses a version keeps serving the whole version before it; the other applies it")
    func refusedKeepsWholeVersion() throws {
        let sandbox = Sandbox()
        try sandbox.ok("merge", Self.domain, "{ MinPool = 5; MaxPool = 40; }")
        let generous = try validating(sandbox, limit: 100)
        let strict = try validating(sandbox, limit: 50)
        defer { [generous, strict].forEach { $0.stop() } }
        for reader in [generous, strict] { reader.ready() }
        #expect(pids(sandbox) == Set([Int(generous.pid), Int(strict.pid)]))
        // Two keys in one version: the strict program refuses MaxPool 60, so MinPool 10 does not reach it either.
        let result = try sandbox.run(
            "merge", Self.domain, "{ MinPool = 10; MaxPool = 60; }", "--wait", "--keep-refused")
        #expect(result.status != 0)
        #expect(strict.serves() == "MinPool 5 MaxPool 40")
        #expect(generous.serves() == "MinPool 10 MaxPool 60")
    }

    @Test("defaults edit --wait: an edit a reader refuses is put back and offered again in the editor with the reason")
    func editRefusedOfferedAgain() throws {
        let sandbox = Sandbox()
        try sandbox.ok("write", Self.domain, "MinPool", "-int", "5")
        try sandbox.ok("write", Self.domain, "MaxPool", "-int", "40")
        let strict = try validating(sandbox, limit: 50)
        defer { strict.stop() }
        strict.ready()
        let result = try sandbox.run(
            ["edit", Self.domain, "--wait", "10"],
            environment: try sandbox.scriptedEditor([
                "sed -i 's/^    MaxPool = 40;$/    MaxPool = 60;/' \"$1\"",
                """
                grep -q '^//! Applied, then refused by a running program' "$1" || exit 2
                grep -q 'MaxPool 60 is above' "$1" || exit 2
                sed -i 's/^    MaxPool = 60;$/    MaxPool = 45;/' "$1"
                """,
            ]))
        #expect(result.status == 0, "\(result.output)\(result.error)")
        #expect(result.output.contains("\(strict.pid) LiveDefaultsTestHelper: refused: MaxPool 60 is above"))
        #expect(result.output.contains("rolled back to the version before"), "\(result.output)")
        #expect(result.output.contains("\(strict.pid) LiveDefaultsTestHelper: applied"), "\(result.output)")
        #expect(strict.serves(once: "MinPool 5 MaxPool 45") == "MinPool 5 MaxPool 45")
    }

    @Test("a version a reader refuses is rolled back to the one before it, as one change logged with the refusal")
    func refusedVersionRolledBack() throws {
        let sandbox = Sandbox()
        try sandbox.ok("merge", Self.domain, "{ MinPool = 5; MaxPool = 40; Banner = kept; }")
        let generous = try validating(sandbox, limit: 100)
        let strict = try validating(sandbox, limit: 50)
        defer { [generous, strict].forEach { $0.stop() } }
        for reader in [generous, strict] { reader.ready() }
        #expect(pids(sandbox) == Set([Int(generous.pid), Int(strict.pid)]))
        let before = try sandbox.ok("export", Self.domain, "-")
        let result = try sandbox.run("merge", Self.domain, "{ MinPool = 10; MaxPool = 60; }", "--wait", "10")
        #expect(result.status != 0)
        #expect(result.output.contains("\(strict.pid) LiveDefaultsTestHelper: refused: MaxPool 60 is above"))
        #expect(result.output.contains("rolled back to the version before"), "\(result.output)")
        #expect(result.error.contains("rolled back to the version before it"), "\(result.error)")
        #expect(try sandbox.ok("export", Self.domain, "-") == before, "the domain is as it was, every key")
        // The put-back is one change, logged with the refusal as its reason.
        let log = try sandbox.ok("log", Self.domain, "--json", "--limit", "2")
        let logged = try #require(JSONSerialization.jsonObject(with: Data(log.utf8)) as? [String: Any])
        let changes = try #require(logged["changes"] as? [[String: Any]])
        #expect(Set(changes.map { $0["version"] as? String }).count == 1, "one version: \(log)")
        let reason = try #require(changes.first?["reason"] as? String)
        #expect(reason.hasPrefix("rolled back: \(strict.pid) LiveDefaultsTestHelper refused "), "\(reason)")
        #expect(reason.contains("MaxPool 60 is above this program's limit of 50"), "\(reason)")
        // Every reader runs the version rolled back to.
        #expect(generous.serves(once: "MinPool 5 MaxPool 40") == "MinPool 5 MaxPool 40")
        #expect(strict.serves() == "MinPool 5 MaxPool 40")
    }

    @Test(
        "a program started on a refused version never serves it, not once: the log's last accepted, shown by readers and doctor"
    )
    func startedOnRefusedVersion() throws {
        let sandbox = Sandbox()
        try sandbox.ok("merge", Self.domain, "{ MinPool = 2; MaxPool = 20; }")
        // Written while the program is down (no reader: nothing to wait for or roll back).
        try sandbox.ok("write", Self.domain, "MinPool", "-int", "60")
        let program = try validating(sandbox, limit: 100)
        defer { program.stop() }
        #expect(program.serves() == "MinPool 2 MaxPool 20")
        #expect(program.first == "MinPool 2 MaxPool 20", "the first read comes from a judged version")
        #expect(pids(sandbox) == [Int(program.pid)])
        let text = try sandbox.ok("readers", Self.domain)
        #expect(text.contains("from the change log") && text.contains("MinPool 60 is above MaxPool 20"), "\(text)")
        let doctor = try sandbox.run("doctor", Self.domain)
        #expect(doctor.status == 1, "a refused version on disk is a problem")
        #expect(
            doctor.output.contains("\(program.pid) LiveDefaultsTestHelper: running version ")
                && doctor.output.contains(" from the change log: the file's version ")
                && doctor.output.contains(" is refused because MinPool 60 is above MaxPool 20"), "\(doctor.output)")
        // The refusal is in the change log, under the refused version, as any refusal is.
        let log = try sandbox.ok("log", Self.domain, "MinPool", "--limit", "1")
        #expect(
            log.contains("2 → 60") && log.contains("refused by LiveDefaultsTestHelper (pid \(program.pid)")
                && log.contains("MinPool 60 is above MaxPool 20"), "\(log)")
        // A restart changes nothing.
        program.stop()
        let again = try validating(sandbox, limit: 100)
        defer { again.stop() }
        #expect(again.serves() == "MinPool 2 MaxPool 20")
        #expect(again.first == "MinPool 2 MaxPool 20")
    }

    @Test("a program started on a truncated file serves the last version that could be read")
    func startedOnTruncatedFile() throws {
        let sandbox = Sandbox()
        try sandbox.ok("merge", Self.domain, "{ MinPool = 2; MaxPool = 20; }")
        let path = sandbox.file("\(Self.domain).plist")
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        try bytes.prefix(bytes.count / 2).write(to: URL(fileURLWithPath: path))
        let program = try validating(sandbox, limit: 100)
        defer { program.stop() }
        #expect(program.serves() == "MinPool 2 MaxPool 20")
        #expect(program.first == "MinPool 2 MaxPool 20")
    }

    @Test("a killed reader is forgotten and never waited for; a program that cannot announce still works")
    func killedAndUnannounced() throws {
        let sandbox = Sandbox()
        try sandbox.ok("write", Self.domain, "MaxPool", "-int", "20")
        let victim = try validating(sandbox, limit: 100)
        let survivor = try validating(sandbox, limit: 100)
        defer { survivor.stop() }
        for reader in [victim, survivor] { reader.ready() }
        #expect(pids(sandbox) == Set([Int(victim.pid), Int(survivor.pid)]))
        victim.kill()
        #expect(pids(sandbox) == [Int(survivor.pid)], "no entry of a dead process is shown")
        // A wait long enough that waiting on the dead one would end in "no answer", a failure.
        let result = try sandbox.run("write", Self.domain, "MaxPool", "-int", "30", "--wait", "60")
        #expect(result.status == 0, "\(result.output) \(result.error)")
        #expect(!result.output.contains("\(victim.pid)"))

        // A directory where the readers' directory cannot be made (a file is in its place): the program runs, reads
        // and applies, unlisted; --wait finds nobody to wait for.
        let elsewhere = sandbox.file("unlisted")
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: "\(elsewhere)/.livedefaults-readers", contents: Data("x".utf8)))
        let other = "com.example.unlisted"
        let file = "\(elsewhere)/\(other).plist"
        try sandbox.ok("write", file, "MaxPool", "-int", "20")
        let unlisted = try Reader(
            helperProcess(["validate", elsewhere, other, "100"], environment: sandbox.environment()))
        defer { unlisted.stop() }
        #expect(unlisted.serves() == "MinPool 1 MaxPool 20")
        let result2 = try sandbox.run("write", file, "MaxPool", "-int", "25", "--wait", "1")
        #expect(result2.status == 0)
        #expect(result2.output.contains("no process reads"))
        #expect(
            unlisted.serves(once: "MinPool 1 MaxPool 25") == "MinPool 1 MaxPool 25", "it applies versions all the same")
    }

    @Test("--wait takes an optional number after write, merge, delete and import; garbage is refused")
    func waitArguments() throws {
        let sandbox = Sandbox()
        #expect(try sandbox.ok("write", Self.domain, "A", "-int", "1", "--wait").contains("no process reads"))
        #expect(try sandbox.ok("write", Self.domain, "B", "-string", "x", "--wait", "0.5").contains("no process reads"))
        #expect(try sandbox.ok("write", "--wait", "1", Self.domain, "C", "2").contains("no process reads"))
        #expect(try sandbox.ok("merge", Self.domain, "{ D = 1; }", "--wait").contains("no process reads"))
        #expect(try sandbox.ok("delete", Self.domain, "D", "--wait", "2").contains("no process reads"))
        let plist = sandbox.file("import.plist")
        try Data("{ E = 1; }".utf8).write(to: URL(fileURLWithPath: plist))
        #expect(try sandbox.ok("import", Self.domain, plist, "--wait").contains("no process reads"))
        // The word inside a value (not followed by a number, nor last): part of the value.
        try sandbox.ok("write", Self.domain, "F", "-array", "--wait", "x")
        #expect(try sandbox.ok("read", Self.domain, "F").contains("--wait"))
        #expect(try sandbox.run("merge", Self.domain, "{ G = 1; }", "--wait", "-3").status != 0)
        // --keep-refused, last or before the domain, with --wait before it or after it.
        #expect(
            try sandbox.ok("write", Self.domain, "H", "-int", "1", "--wait", "--keep-refused").contains(
                "no process reads"))
        #expect(
            try sandbox.ok("write", Self.domain, "I", "-int", "1", "--keep-refused", "--wait", "1").contains(
                "no process reads"))
        #expect(try sandbox.ok("delete", "--keep-refused", Self.domain, "H", "--wait").contains("no process reads"))
        #expect(try sandbox.ok("read", Self.domain, "I") == "1\n")
    }
}

extension Process {
    /// A process of `executable` with `arguments` and `environment`, not yet started.
    static func make(_ executable: URL, _ arguments: [String], environment: [String: String]) -> Process {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.environment = environment
        return process
    }
}
