import Foundation
import TestProcesses
import Testing

/// `defaults edit` as a person runs it, with a shell script as `$EDITOR`: the temporary file, the editor's exit
/// status, its rounds, and another process writing while it is open. The session's logic is covered case by
/// case on a simulated machine (EditSessionTests); these show the command's own part.
@Suite("defaults edit: the command, with a shell script as its editor", .blockingWork)
struct EditToolTests {
    static let domain = "com.example.edit"
    let sandbox = Sandbox()

    /// The domain with one key of each type, written by the command.
    func prepare() throws {
        try sandbox.ok("write", Self.domain, "RateLimit", "-int", "100")
        try sandbox.ok("write", Self.domain, "Theme", "-string", "dark")
        try sandbox.ok("write", Self.domain, "Ratio", "-float", "0.25")
        try sandbox.ok("write", Self.domain, "Enabled", "-bool", "YES")
        try sandbox.ok("write", Self.domain, "Since", "-date", "2024-01-31T09:05:00Z")
        try sandbox.ok("write", Self.domain, "Blob", "-data", "0102ff")
        try sandbox.ok("write", Self.domain, "Hosts", "-array", "a", "-int", "2")
        try sandbox.ok("write", Self.domain, "Limits", "-dict", "read", "-float", "1.5", "on", "-bool", "NO")
        try sandbox.ok("write", Self.domain, "Name", "-string", "42")
    }

    var path: String { sandbox.file("\(Self.domain).plist") }

    func edit(_ rounds: [String], _ arguments: [String] = []) throws -> Sandbox.Result {
        try sandbox.run(["edit", Self.domain] + arguments, environment: try sandbox.scriptedEditor(rounds))
    }

    @Test("a changed value lands; every other value keeps its type and its bytes; the file was private and is gone")
    func changedValue() throws {
        try prepare()
        let before = try #require(FileManager.default.contents(atPath: path))
        let result = try edit([
            """
            stat -c %a "$1" > "$STATE/mode"; stat -c %a "$(dirname "$1")" > "$STATE/directory-mode"
            echo "$1" > "$STATE/path"
            sed -i 's/^    RateLimit = 100;$/    RateLimit = 250;/' "$1"
            """
        ])
        #expect(result.status == 0, "\(result.error)")
        #expect(result.output.contains("com.example.edit: changed RateLimit"), "\(result.output)")
        let after = try #require(FileManager.default.contents(atPath: path))
        let expected = String(decoding: before, as: UTF8.self).replacingOccurrences(
            of: "<integer>100</integer>", with: "<integer>250</integer>")
        #expect(String(decoding: after, as: UTF8.self) == expected, "only the changed value's bytes differ")
        let types = try sandbox.python(Self.domain, "{k: type(v).__name__ for k, v in d.items()}")
        #expect(
            types == """
                {"Blob": "bytes", "Enabled": "bool", "Hosts": "list", "Limits": "dict", "Name": "str", \
                "RateLimit": "int", "Ratio": "float", "Since": "datetime", "Theme": "str"}
                """)
        #expect(try sandbox.scriptState("mode") == "600" && sandbox.scriptState("directory-mode") == "700")
        let edited = try sandbox.scriptState("path")
        #expect(edited.hasPrefix(sandbox.file("tmp/")) && edited.hasSuffix("/com.example.edit.txt"), "\(edited)")
        #expect(!FileManager.default.fileExists(atPath: (edited as NSString).deletingLastPathComponent))
        let shown = try sandbox.scriptShown(1)
        #expect(shown.contains("// defaults edit com.example.edit\n// File: \(path)\n"))
        #expect(shown.contains("    Enabled = true;\n") && shown.contains("    Name = \"42\";\n"))
        let log = try sandbox.ok("log", Self.domain, "--json", "--limit", "1")
        #expect(log.contains("\"reason\" : \"defaults edit\"") && log.contains("\"key\" : \"RateLimit\""), "\(log)")
    }

    @Test(
        "saved unchanged: no changes, nothing written; the editor failing or the text emptied: exit 1, nothing written")
    func nothingWritten() throws {
        try prepare()
        let before = try #require(FileManager.default.contents(atPath: path))
        let log = try sandbox.ok("log", Self.domain, "--json")
        var result = try edit([":"])
        #expect(result.status == 0 && result.output == "no changes\n", "\(result.output)\(result.error)")
        result = try edit(["exit 1"])
        #expect(result.status == 1 && result.error.contains("the editor exited with an error: nothing was changed"))
        result = try edit([": > \"$1\""])
        #expect(result.status == 1 && result.error.contains("emptied"), "\(result.error)")
        #expect(FileManager.default.contents(atPath: path) == before)
        #expect(try sandbox.ok("log", Self.domain, "--json") == log, "no change logged")
    }

    @Test("a syntax error reopens the editor with it noted; fixed at the second opening, the edit lands")
    func syntaxErrorFixed() throws {
        try prepare()
        let result = try edit([
            "sed -i 's/^    RateLimit = 100;$/    RateLimit = 300/' \"$1\"",
            """
            grep -q '^//! Not applied:' "$1" || exit 2
            grep -q '//! the line below: expected ;' "$1" || exit 2
            sed -i 's/^    RateLimit = 300$/    RateLimit = 300;/' "$1"
            """,
        ])
        #expect(result.status == 0, "\(result.error)")
        #expect(try sandbox.ok("read", Self.domain, "RateLimit") == "300\n")
    }

    @Test(
        "a schema's refusal reopens the editor with it noted at the key; saved again unchanged, exit 1 and nothing written"
    )
    func schemaRefusal() throws {
        let run = try runHelper(["publish-schema", "com.example.api"], environment: sandbox.environment())
        #expect(run.status == 0)
        try sandbox.ok("write", "com.example.api", "RateLimit", "-int", "250")
        let result = try sandbox.run(
            ["edit", "com.example.api"],
            environment: try sandbox.scriptedEditor([
                "sed -i 's/^    RateLimit = 250;$/    RateLimit = 0;/' \"$1\"",
                """
                grep -qF '//! key "RateLimit" accepts an integer in 1…100000; the value (integer 0) is out of range' "$1" \
                    || exit 2
                """,
            ]))
        #expect(result.status == 1, "\(result.output)\(result.error)")
        #expect(result.error.contains("saved again unchanged"), "\(result.error)")
        #expect(try sandbox.ok("read", "com.example.api", "RateLimit") == "250\n")
        #expect(try sandbox.scriptShown(1).contains("// Requests per minute per client"), "the schema beside the key")
    }

    @Test("another process's change while the editor is open: other keys kept; the same key shown, the next save lands")
    func otherWriterMeanwhile() throws {
        try prepare()
        var result = try edit([
            """
            "$DEFAULTS_TOOL" write com.example.edit Theme light || exit 2
            sed -i 's/^    RateLimit = 100;$/    RateLimit = 250;/' "$1"
            """
        ])
        #expect(result.status == 0, "\(result.error)")
        #expect(try sandbox.ok("read", Self.domain, "Theme") == "light\n", "the other writer's change is kept")
        #expect(try sandbox.ok("read", Self.domain, "RateLimit") == "250\n")
        result = try edit([
            """
            "$DEFAULTS_TOOL" write com.example.edit RateLimit -int 500 || exit 2
            sed -i 's/^    RateLimit = 250;$/    RateLimit = 260;/' "$1"
            """,
            "grep -q '//!   RateLimit: now 500 (you were shown 250)' \"$1\" || exit 2",
        ])
        #expect(result.status == 0, "\(result.error)")
        #expect(try sandbox.ok("read", Self.domain, "RateLimit") == "260\n")
    }

    @Test("-currentHost and a path edit their own file, as the other verbs do")
    func hostAndPath() throws {
        try sandbox.ok("write", Self.domain, "Key", "-int", "1")
        try sandbox.ok("-currentHost", "write", Self.domain, "Key", "-int", "10")
        var result = try sandbox.run(
            ["-currentHost", "edit", Self.domain],
            environment: try sandbox.scriptedEditor(["sed -i 's/^    Key = 10;$/    Key = 11;/' \"$1\""]))
        #expect(result.status == 0, "\(result.error)")
        #expect(try sandbox.ok("-currentHost", "read", Self.domain, "Key") == "11\n")
        #expect(try sandbox.ok("read", Self.domain, "Key") == "1\n", "the user's file is not the host's")
        let file = sandbox.file("elsewhere/settings.plist")
        try FileManager.default.createDirectory(atPath: sandbox.file("elsewhere"), withIntermediateDirectories: true)
        try sandbox.ok("write", file, "Key", "-int", "5")
        result = try sandbox.run(
            ["edit", file], environment: try sandbox.scriptedEditor(["sed -i 's/^    Key = 5;$/    Key = 6;/' \"$1\""]))
        #expect(result.status == 0, "\(result.error)")
        #expect(try sandbox.ok("read", file, "Key") == "6\n")
    }

    @Test("--help says which editor is used and how to abort")
    func help() throws {
        // As one line: the help is wrapped to the terminal's width.
        let help = try sandbox.ok("edit", "--help").split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(help.contains("$VISUAL, else $EDITOR, else vi"))
        #expect(help.contains("To abort, quit the editor with an error (vi: :cq)"))
    }
}

extension Sandbox {
    /// The environment of a `defaults edit` whose editor is a shell script of rounds: the Nth opening keeps what
    /// it was shown (``scriptShown(_:)``), then runs `rounds[N - 1]` (shell, `"$1"` the file, `$STATE` a
    /// directory of its own, `$DEFAULTS_TOOL` the command); an opening past the rounds exits 3.
    func scriptedEditor(_ rounds: [String]) throws -> [String: String] {
        let state = file("editor")
        try? FileManager.default.removeItem(atPath: state)
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: file("tmp"), withIntermediateDirectories: true)
        for (index, round) in rounds.enumerated() {
            try Data(round.utf8).write(to: URL(fileURLWithPath: "\(state)/round-\(index + 1).sh"))
        }
        let script = "\(state)/editor"
        try Data(
            """
            #!/bin/sh
            n=$(cat "$STATE/count" 2>/dev/null || echo 0); n=$((n + 1)); echo "$n" > "$STATE/count"
            cp "$1" "$STATE/shown-$n.txt"
            [ -f "$STATE/round-$n.sh" ] || exit 3
            . "$STATE/round-$n.sh"

            """.utf8
        ).write(to: URL(fileURLWithPath: script))
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: script)
        return [
            "EDITOR": script, "VISUAL": "", "STATE": state, "TMPDIR": file("tmp"), "DEFAULTS_TOOL": toolURL.path,
        ]
    }

    /// What the scripted editor was shown at its `round`th opening.
    func scriptShown(_ round: Int) throws -> String {
        try String(contentsOfFile: file("editor/shown-\(round).txt"), encoding: .utf8)
    }

    /// A file the scripted editor's rounds wrote in `$STATE`, without its line break.
    func scriptState(_ name: String) throws -> String {
        try String(contentsOfFile: file("editor/\(name)"), encoding: .utf8).trimmingCharacters(in: .newlines)
    }
}
