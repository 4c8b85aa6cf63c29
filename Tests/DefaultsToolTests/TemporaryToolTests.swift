import DefaultsToolSupport
import Foundation
import TestProcesses
import Testing

/// `--for DURATION` on `write`, `merge` and `delete`, as processes on real files and the real clock: what only
/// they can show (the command's first read applies an expired revert; a watching process applies it itself, at
/// the expiry). The rules themselves run on the simulated machine (TemporaryChangeTests).
@Suite("defaults write/merge/delete --for: temporary changes, as processes", .blockingWork)
struct TemporaryToolTests {
    static let domain = "com.example.temporary-tool"

    @Test("a read notes on standard error what is temporary, when it ends and what comes back; output unchanged")
    func readNotes() throws {
        let sandbox = Sandbox()
        try sandbox.ok("write", Self.domain, "RateLimit", "-int", "100")
        try sandbox.ok("write", Self.domain, "Mode", "normal")
        let output = try sandbox.ok(
            "write", Self.domain, "RateLimit", "-int", "50", "--for", "1h", "--reason", "incident")
        #expect(output.hasPrefix("temporary for 1h, until "), "\(output)")
        #expect(output.hasSuffix(": then RateLimit returns to the value before\n"), "\(output)")
        try sandbox.ok("merge", Self.domain, "{ Debug = 1; }", "--for=1h")
        try sandbox.ok("delete", Self.domain, "Mode", "--for", "1h")
        #expect(FileManager.default.fileExists(atPath: sandbox.file(".\(Self.domain).plist.reverts")))
        let read = try sandbox.run("read", Self.domain, "RateLimit")
        #expect(read.output == "50\n")
        #expect(read.error.hasPrefix("defaults: note: RateLimit is temporary (incident): at "), "\(read.error)")
        #expect(read.error.hasSuffix("it returns to 100 unless changed again\n"), "\(read.error)")
        let deleted = try sandbox.run("read", Self.domain, "Mode")
        #expect(deleted.status == 1 && deleted.error.contains("it returns to normal unless changed again"))
        let domainNotes = try sandbox.run("read", Self.domain).error
        #expect(domainNotes.contains("note: Debug is temporary") && domainNotes.contains("it returns to absent"))
        // readers says what the version they run holds for a while, with the time left.
        let readers = try sandbox.ok("readers", Self.domain)
        #expect(readers.contains("temporary changes still to undo:\n  RateLimit is temporary (incident): at "))
        #expect(readers.contains(", in 59m") || readers.contains(", in 1h,"), "\(readers)")
        // doctor lists them too, and as JSON each change with its keys.
        let doctor = try sandbox.run("doctor", Self.domain).output
        #expect(
            doctor.contains("temporary changes still to undo:\n  RateLimit is temporary (incident): at "), "\(doctor)")
        let json = try sandbox.run("doctor", Self.domain, "--json").output
        let object = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
        let changes = try #require(object?["temporaryChanges"] as? [[String: Any]])
        #expect(changes.count == 3)
        #expect(changes.first?["reason"] as? String == "incident")
        #expect(
            (changes.first?["keys"] as? [String: Any])?["RateLimit"] as? [String: String] == [
                "before": "100", "set": "50",
            ])
    }

    @Test("every form of write and delete makes one temporary change of the keys it touches")
    func everyForm() throws {
        let sandbox = Sandbox()
        try sandbox.ok("write", Self.domain, "{ Mode = normal; Hosts = (a); Limits = { Read = 1; }; }")
        try sandbox.ok("write", Self.domain, "Hosts", "-array-add", "b", "--for", "1h")
        try sandbox.ok("write", Self.domain, "Limits", "-dict-add", "Write", "-int", "2", "--for", "1h")
        // The whole domain replaced: its new key set, every key it no longer has removed, in one change.
        let replaced = try sandbox.ok("write", Self.domain, "{ Mode = test; Extra = 1; }", "--for", "1h")
        #expect(replaced.contains(": then Extra, Hosts, Limits, Mode return to the values before"), "\(replaced)")
        #expect(try sandbox.ok("read", Self.domain) == "{\n    Extra = 1;\n    Mode = test;\n}\n")
        // The whole domain deleted: each key removed, the file kept to hold what comes back.
        try sandbox.ok("delete", Self.domain, "--for", "1h")
        #expect(try sandbox.ok("read", Self.domain) == "{\n}\n")
        let json = try sandbox.run("doctor", Self.domain, "--json").output
        let object = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
        let changes = try #require(object?["temporaryChanges"] as? [[String: Any]])
        let keys = changes.map { (($0["keys"] as? [String: Any]) ?? [:]).keys.sorted() }
        #expect(keys == [["Hosts"], ["Limits"], ["Extra", "Hosts", "Limits", "Mode"], ["Extra", "Mode"]])
        let hosts = (changes.first?["keys"] as? [String: Any])?["Hosts"] as? [String: String]
        #expect(hosts == ["before": "(\n    a\n)", "set": "(\n    a,\n    b\n)"], "\(String(describing: hosts))")
    }

    @Test(
        "nobody watching: the next command's first read after the expiry has the values before, logged with the reason")
    func undoneByNextRead() throws {
        let sandbox = Sandbox()
        try sandbox.ok("write", Self.domain, "RateLimit", "-int", "100")
        try sandbox.ok("write", Self.domain, "Mode", "normal")
        try sandbox.ok("write", Self.domain, "Pool", "-int", "8")
        try sandbox.ok("write", Self.domain, "RateLimit", "-int", "50", "--for", "1s", "--reason", "incident")
        try sandbox.ok("merge", Self.domain, "{ Debug = 1; }", "--for=1s")
        try sandbox.ok("delete", Self.domain, "Mode", "--for", "1s")
        try sandbox.ok("write", Self.domain, "Pool", "-int", "16", "--for=1s")
        // Changed again meanwhile: the newer value stays.
        try sandbox.ok("write", Self.domain, "Pool", "-int", "32")
        // Each read is a new process whose first look applies what expired: once the last change expired, the
        // pending reverts are gone.
        let pending = sandbox.file(".\(Self.domain).plist.reverts")
        #expect(
            eventually(timeout: 20) {
                (try? sandbox.ok("read", Self.domain, "Pool")) != nil
                    && !FileManager.default.fileExists(atPath: pending)
            })
        #expect(try sandbox.ok("read", Self.domain, "RateLimit") == "100\n")
        #expect(try sandbox.ok("read", Self.domain, "Mode") == "normal\n")
        #expect(try sandbox.run("read", Self.domain, "Debug").status == 1)
        #expect(try sandbox.ok("read", Self.domain, "Pool") == "32\n")
        let changes = try ChangeLogToolTests.logged(sandbox, Self.domain)
        let reverted = changes.filter { ($0["reason"] as? String)?.hasPrefix("temporary change expired") == true }
        // Pool too when its change expired before the write of 32 began (that write's first look undid it).
        let keys = Set(reverted.compactMap { $0["key"] as? String })
        #expect(keys == ["RateLimit", "Mode", "Debug"] || keys == ["RateLimit", "Mode", "Debug", "Pool"])
        #expect(reverted.contains { $0["reason"] as? String == "temporary change expired: incident" })
    }

    @Test("a watching process applies the revert itself at the expiry; defaults watch prints both changes")
    func undoneByWatcher() throws {
        let sandbox = Sandbox()
        try sandbox.ok("write", Self.domain, "Level", "-int", "1")
        let watch = try sandbox.start("watch", Self.domain, "Level")
        #expect(watch.waitForStderr("Watching \(Self.domain) Level"))
        try sandbox.ok("write", Self.domain, "Level", "-int", "5", "--for", "2s")
        #expect(watch.waitForLine("\(Self.domain) Level = 5"))
        // No other command runs: the watching process's own timer writes the revert.
        #expect(watch.waitForLine("\(Self.domain) Level = 1"))
        #expect(watch.stop(SIGTERM) == 0)
        let latest = try #require(try ChangeLogToolTests.logged(sandbox, Self.domain).first)
        #expect(latest["executable"] as? String == "defaults" && latest["new"] as? Int == 1)
        #expect((latest["reason"] as? String)?.hasPrefix("temporary change expired") == true)
    }

    @Test("--for is checked before anything is written")
    func refusedDurations() throws {
        let sandbox = Sandbox()
        try sandbox.ok("write", Self.domain, "A", "-int", "1")
        for bad in ["", "0s", "30", "m", "1x", "30m2h", "1h1h", "367d", "9999999999s", "-5m", "1.5h"] {
            let result = try sandbox.run("write", Self.domain, "A", "-int", "2", "--for", bad)
            #expect(result.status != 0, "--for \(bad)")
            #expect(result.error.contains("--for"), "--for \(bad): \(result.error)")
        }
        #expect(try sandbox.ok("read", Self.domain, "A") == "1\n")
    }
}

/// The spelling of a temporary change's duration.
@Suite("DurationText: 90s, 30m, 2h, 1d, 1h30m")
struct DurationTextTests {
    @Test("parsed and described in the same spelling")
    func roundTrip() throws {
        let cases: [(String, Int64)] = [
            ("90s", 90), ("30m", 1800), ("2h", 7200), ("1d", 86_400), ("1h30m", 5400),
            ("1d2h3m4s", 93_784), ("366d", 366 * 86_400),
        ]
        for (text, seconds) in cases {
            #expect(try DurationText.parse(text) == .seconds(seconds), "\(text)")
        }
        #expect(DurationText.describe(.seconds(5400)) == "1h30m")
        #expect(DurationText.describe(.seconds(90)) == "1m30s")
        #expect(DurationText.describe(.seconds(93_784)) == "1d2h3m4s")
        #expect(DurationText.describe(.zero) == "0s")
        #expect(DurationText.describe(.seconds(-5)) == "0s")
    }

    @Test("every other text is an error, never a trap")
    func refused() {
        for bad in [
            "", "0s", "30", "s", "1x", "30m2h", "1h1h", "367d", "366d1s", "999999999d", "9999999999s", "١m",
            "1 h", "+5m", "1.5h",
        ] {
            #expect(throws: ToolError.self, "\(bad)") { try DurationText.parse(bad) }
        }
    }
}
