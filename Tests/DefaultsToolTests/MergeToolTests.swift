import Foundation
import PlistOracle
import TestProcesses
import Testing

@testable import LiveDefaults

/// `defaults merge`: several keys set and removed as one change.
@Suite("defaults merge", .blockingWork)
struct MergeToolTests {
    @Test("merge sets every key of old-style text, removes --delete keys, and keeps every other key")
    func mergeText() throws {
        let sandbox = Sandbox()
        try sandbox.ok("write", "com.example.merge", "Keep", "kept")
        try sandbox.ok("write", "com.example.merge", "Old", "-int", "1")
        #expect(
            try sandbox.ok(
                "merge", "com.example.merge", "{ UpstreamHost = db2; UpstreamPort = 5433; Tags = (a, b); }",
                "--delete", "Old") == "")
        #expect(
            try sandbox.python("com.example.merge", "d")
                == #"{"Keep": "kept", "Tags": ["a", "b"], "UpstreamHost": "db2", "UpstreamPort": "5433"}"#)
        try sandbox.ok("merge", "com.example.merge", "--delete", "Tags", "--delete", "Keep")
        #expect(try sandbox.python("com.example.merge", "sorted(d)") == #"["UpstreamHost", "UpstreamPort"]"#)
    }

    @Test("merge reads a binary or XML file, or standard input")
    func mergeFileAndInput() throws {
        let sandbox = Sandbox()
        let file = sandbox.file("input.plist")
        try sandbox.runPython(
            "import plistlib; plistlib.dump({'Port': 5433, 'On': True}, open('\(file)', 'wb'), fmt=plistlib.FMT_BINARY)"
        )
        try sandbox.ok("merge", "com.example.merge.file", file)
        #expect(try sandbox.python("com.example.merge.file", "d") == #"{"On": true, "Port": 5433}"#)
        let xml = """
            <?xml version="1.0" encoding="UTF-8"?>
            <plist version="1.0"><dict><key>Port</key><integer>6000</integer></dict></plist>
            """
        #expect(try sandbox.ok(["merge", "com.example.merge.file", "-"], input: xml) == "")
        #expect(try sandbox.python("com.example.merge.file", "d") == #"{"On": true, "Port": 6000}"#)
    }

    @Test("merge refuses what is not a dictionary, a missing file, a key both set and deleted, and nothing at all")
    func mergeErrors() throws {
        let sandbox = Sandbox()
        let notDictionary = try sandbox.run(["merge", "com.example.merge.bad", "-"], input: "(a, b)")
        #expect(notDictionary.status == 1 && notDictionary.error.contains("holds a array, not a dictionary"))
        let missing = try sandbox.run("merge", "com.example.merge.bad", sandbox.file("nowhere.plist"))
        #expect(missing.status == 1 && missing.error.contains("cannot read"))
        let unparsable = try sandbox.run("merge", "com.example.merge.bad", "{ A = ; }")
        #expect(unparsable.status == 1 && unparsable.error.contains("cannot parse"))
        let both = try sandbox.run("merge", "com.example.merge.bad", "{ A = 1; }", "--delete", "A")
        #expect(both.status == 1 && both.error.contains("A is both set and deleted"))
        let nothing = try sandbox.run("merge", "com.example.merge.bad")
        #expect(nothing.status != 0 && nothing.error.contains("at least one --delete"))
        #expect(!FileManager.default.fileExists(atPath: sandbox.file("com.example.merge.bad.plist")))
    }

    @Test("merge checks the whole dictionary against the published schema before writing any of it")
    func mergeHonoursSchema() throws {
        let sandbox = Sandbox()
        #expect(try runHelper(["publish-schema", "com.example.api"], environment: sandbox.environment()).status == 0)
        try sandbox.ok("write", "com.example.api", "RateLimit", "-int", "250")
        let refused = try sandbox.run("merge", "com.example.api", "{ RateLimit = 500; Theme = purple; }")
        #expect(refused.status == 1 && refused.error.contains("Theme") && refused.error.contains("nothing written"))
        #expect(try sandbox.ok("read", "com.example.api", "RateLimit") == "250\n", "nothing was written")
        let forced = try sandbox.run(
            "merge", "--no-validate", "com.example.api", "{ RateLimit = 500; Theme = purple; }")
        #expect(forced.status == 0 && forced.error.contains("warning"))
        #expect(try sandbox.ok("read", "com.example.api", "Theme") == "purple\n")
    }

    @Test("A program watching the domain gets a merge as one batch of changes, never half of it")
    func mergeIsOneChange() async throws {
        let sandbox = Sandbox()
        try sandbox.ok("write", "com.example.merge.live", "A", "-int", "0")
        try sandbox.ok("write", "com.example.merge.live", "B", "-int", "0")
        let defaults = try Defaults(
            configuration: .rooted(at: sandbox.path, applicationDomain: "com.example.merge.live"))
        var changes = defaults.changes().makeAsyncIterator()
        try sandbox.ok("merge", "com.example.merge.live", "{ A = 1; B = 1; }")
        let first = try #require(await changes.next())
        let second = try #require(await changes.next())
        #expect(Set([first.key, second.key]) == ["A", "B"] && first.batch == second.batch)
        #expect(first.origin == .external)
        #expect(
            defaults.snapshot(of: DefaultsKey<Int>("A", default: -1), DefaultsKey<Int>("B", default: -1))
                .values == ["A": "1", "B": "1"], "old-style text holds strings")
    }
}
