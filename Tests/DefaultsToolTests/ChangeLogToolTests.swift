import Foundation
import TestProcesses
import Testing

/// `defaults log`: every change of a domain's file, once, attributed — a program's write, the command's, an
/// edit no LiveDefaults writer made (noticed by a watching program, or by the next process that opens the
/// domain) — and a log that is broken or hostile never stops a write. Every writer is a real process.
@Suite("defaults log: who changed what, once each", .blockingWork)
struct ChangeLogToolTests {
    /// The changes `defaults log DOMAIN --json` lists, newest first.
    static func logged(_ sandbox: Sandbox, _ arguments: String...) throws -> [[String: Any]] {
        let output = try sandbox.ok(["log", "--json"] + arguments)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any])
        return try #require(object["changes"] as? [[String: Any]])
    }

    /// Rewrites the domain's file with Python's plistlib: a writer that knows nothing of LiveDefaults.
    static func edit(_ path: String, set key: String, to value: Int) throws {
        let script = """
            import plistlib, sys, os
            path, key, value = sys.argv[1], sys.argv[2], int(sys.argv[3])
            with open(path, 'rb') as f: data = plistlib.load(f)
            data[key] = value
            with open(path + '.new', 'wb') as f: plistlib.dump(data, f)
            os.replace(path + '.new', path)
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script, path, key, String(value)]
        let result = try runToEnd(process, errors: .inherited)
        #expect(result.status == 0)
    }

    @Test(
        "a program's write, defaults write, an edit seen by watching programs and one made while nothing ran: each once, attributed, newest first"
    )
    func attributedOnce() throws {
        let sandbox = Sandbox()
        let domain = "com.example.logged"
        let file = sandbox.file("\(domain).plist")
        // A program writes through the library (a process of its own).
        let program = try runHelper(["write-sequence", sandbox.path, domain, "RateLimit", "2"])
        #expect(program.status == 0)
        try sandbox.ok("write", domain, "Theme", "dark")
        // Two programs watch the domain when another writer edits it: it is recorded once, by whichever first.
        let watchers = try (0..<2).map { _ in try sandbox.start("watch", domain) }
        for watcher in watchers { #expect(watcher.waitForStderr("Watching \(domain)")) }
        try Self.edit(file, set: "RateLimit", to: 7)
        for watcher in watchers { #expect(watcher.waitForLine("\(domain) RateLimit = 7")) }
        for watcher in watchers { #expect(watcher.stop(SIGTERM) == 0) }
        // Nothing runs when it is edited again: the next process that opens the domain records it.
        try Self.edit(file, set: "RateLimit", to: 9)

        let changes = try Self.logged(sandbox, domain)
        let summary = changes.map { change in
            "\(change["key"] as? String ?? "?") \(change["old"].map { "\($0)" } ?? "?")→\(change["new"].map { "\($0)" } ?? "?") \(change["origin"] as? String ?? "?")"
        }
        #expect(
            summary == [
                "RateLimit 7→9 external", "RateLimit 2→7 external", "Theme <null>→dark local",
                "RateLimit 1→2 local", "RateLimit <null>→1 local",
            ], "\(summary)")
        // Who: the helper program, then the command, with their process and user; external changes name none.
        #expect(changes[3]["executable"] as? String == "LiveDefaultsTestHelper")
        #expect(changes[2]["executable"] as? String == "defaults")
        #expect((changes[2]["pid"] as? Int).map { $0 > 0 } == true && changes[2]["uid"] as? Int == Int(getuid()))
        #expect(changes[0]["executable"] == nil && changes[0]["pid"] == nil)
        let times = changes.compactMap { $0["time"] as? String }
        #expect(times == times.sorted(by: >), "newest first")
        // Asked again (the domain opened again), nothing is recorded twice; one key, and a limit.
        #expect(try Self.logged(sandbox, domain).count == 5)
        #expect(try Self.logged(sandbox, domain, "Theme").count == 1)
        let limited = try sandbox.ok("log", domain, "--limit", "2")
        #expect(limited.split(separator: "\n").count == 3 && limited.contains("(older changes not shown: --limit)"))
        #expect(limited.hasPrefix(String(times[0].prefix(19))) && limited.contains("RateLimit  7 → 9  external"))
        // doctor shows the last changes.
        let doctor = try sandbox.run("doctor", domain)
        #expect(doctor.output.contains("last changes of \(domain)'s file, newest first"), "\(doctor.output)")
        #expect(doctor.output.contains("Theme      (absent) → dark  local: defaults (pid "), "\(doctor.output)")
    }

    @Test("--reason on every verb that changes a domain: defaults log shows it beside each change of the version")
    func reasons() throws {
        let sandbox = Sandbox()
        let domain = "com.example.reasons"
        try sandbox.ok("write", "--reason", "before the domain", domain, "A", "-int", "1")
        try sandbox.ok("write", domain, "B", "-int", "2", "--reason", "last")
        try sandbox.ok("write", domain, "C", "three", "--reason=last, with =")
        try sandbox.ok("merge", domain, "{ D = 4; E = 5; }", "--reason", "merged")
        try sandbox.ok("rename", "--reason", "renamed", domain, "E", "F")
        try sandbox.ok("delete", "--reason", "deleted", domain, "D")
        try sandbox.ok("reset", "--reason", "reset", domain, "C")
        let file = sandbox.file("import.plist")
        try Data(#"{ A = 10; B = 2; F = 5; }"#.utf8).write(to: URL(fileURLWithPath: file))
        try sandbox.ok("import", "--reason", "imported", domain, file)
        try sandbox.ok(
            ["edit", "--reason", "edited", domain],
            environment: try sandbox.scriptedEditor([#"sed -i 's/^    A = "10";$/    A = 11;/' "$1""#]))

        let changes = try Self.logged(sandbox, domain)
        let reasons = changes.map { "\($0["key"] as? String ?? "?") \($0["reason"] as? String ?? "-")" }
        #expect(
            reasons == [
                "A edited", "B imported", "A imported", "C reset", "D deleted", "F renamed", "E renamed", "E merged",
                "D merged", "C last, with =", "B last", "A before the domain",
            ], "\(reasons)")
        // Old-style text is strings: the import changed B from the integer 2 to the string "2".
        let text = try sandbox.ok("log", domain, "A")
        #expect(text.contains(" — edited") && text.contains(" — before the domain"), "\(text)")
        // A reason the log would not keep as given is refused before anything is written.
        for bad in ["", "two\nlines", String(repeating: "x", count: 1_001)] {
            for arguments in [
                ["write", "--reason", bad, domain, "G", "1"], ["write", domain, "G", "1", "--reason", bad],
            ] {
                let result = try sandbox.run(arguments)
                #expect(result.status != 0 && result.error.contains("--reason"), "\(arguments): \(result.error)")
            }
        }
        #expect(try sandbox.run("read", domain, "G").status == 1)
    }

    @Test("4 processes writing at once: every change in the log exactly once, each with the value before it")
    func concurrentWriters() throws {
        let sandbox = Sandbox()
        let domain = "com.example.concurrent"
        let count = 25
        let writers = try (0..<4).map { index in
            let process = try helperProcess(["write-sequence", sandbox.path, domain, "K\(index)", String(count)])
            try process.run()
            return process
        }
        for writer in writers {
            writer.waitUntilExit()
            #expect(writer.terminationStatus == 0)
        }
        let changes = try Self.logged(sandbox, domain)
        #expect(changes.count == 4 * count)
        for index in 0..<4 {
            // Oldest first: 1 … count, each over the one before (absent before the first).
            let values = changes.reversed().filter { $0["key"] as? String == "K\(index)" }
            #expect(values.compactMap { $0["new"] as? Int } == Array(1...count), "K\(index)")
            #expect(values.compactMap { $0["old"] as? Int } == Array(1..<count), "K\(index)")
            #expect(Set(values.compactMap { $0["pid"] as? Int }).count == 1, "one writer per key")
        }
    }

    @Test("a corrupt, hostile or unwritable log never fails a write")
    func hostileLogs() throws {
        let sandbox = Sandbox()
        let domain = "com.example.hostile"
        let log = sandbox.file(".\(domain).plist.log")
        try sandbox.ok("write", domain, "A", "-int", "1")
        // Garbage, binary noise and a torn line: skipped; the next entries are appended and read.
        var noise = Data("not json\n{\"v\":1,\"version\":\"zz\"}\n".utf8)
        noise.append(contentsOf: (0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 131) })
        noise.append(Data("{\"v\":1,\"changes\":[{\"key\"".utf8))
        try noise.write(to: URL(fileURLWithPath: log))
        try sandbox.ok("write", domain, "A", "-int", "2")
        #expect(try sandbox.ok("read", domain, "A") == "2\n")
        let afterNoise = try Self.logged(sandbox, domain)
        #expect(afterNoise.first?["new"] as? Int == 2, "\(afterNoise)")
        // A directory, a FIFO (which must not block the writer) and a symbolic link where the log goes.
        try FileManager.default.removeItem(atPath: log)
        try FileManager.default.createDirectory(atPath: log, withIntermediateDirectories: false)
        try sandbox.ok("write", domain, "A", "-int", "3")
        try FileManager.default.removeItem(atPath: log)
        #expect(mkfifo(log, 0o600) == 0)
        try sandbox.ok("write", domain, "A", "-int", "4")
        #expect(try Self.logged(sandbox, domain).isEmpty)
        try FileManager.default.removeItem(atPath: log)
        let elsewhere = sandbox.file("elsewhere")
        try Data("keep\n".utf8).write(to: URL(fileURLWithPath: elsewhere))
        #expect(symlink(elsewhere, log) == 0)
        try sandbox.ok("write", domain, "A", "-int", "5")
        #expect(try String(contentsOfFile: elsewhere, encoding: .utf8) == "keep\n", "a link is not written through")
        #expect(try sandbox.ok("read", domain, "A") == "5\n")
    }

    @Test("keys the published schema marks secret show <secret>, unless --show-secrets")
    func secretsMasked() throws {
        let sandbox = Sandbox()
        let published = try runHelper(["publish-schema", "com.example.api"], environment: sandbox.environment())
        #expect(published.status == 0)
        try sandbox.ok("write", "com.example.api", "APIToken", "hunter2")
        let text = try sandbox.ok("log", "com.example.api")
        #expect(text.contains("APIToken  (absent) → <secret>") && !text.contains("hunter2"), "\(text)")
        #expect(try sandbox.ok("log", "com.example.api", "--json").contains("<secret>"))
        #expect(try sandbox.ok("log", "com.example.api", "--show-secrets").contains("hunter2"))
    }
}
