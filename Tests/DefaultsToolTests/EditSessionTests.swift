import DefaultsToolSupport
import Foundation
import LiveDefaultsTesting
import Testing

@testable import LiveDefaults

/// `defaults edit`'s logic (``EditSession``) on a simulated machine: the command's store in one process, a
/// running server in another, the editor a script of rounds. The command itself, with a shell script as its
/// editor, is in EditToolTests.
@Suite("defaults edit, on a simulated machine")
struct EditSessionTests {
    static let domain = "com.example.edit"
    static let schema = DomainSchema(
        domain: domain,
        keys: [
            KeySchema(
                name: "RateLimit", type: .integer, defaultValue: 100, summary: "Requests per minute per client.",
                minimum: 1, maximum: 10_000),
            KeySchema(name: "Theme", type: .string, choices: ["light", "dark"]),
            KeySchema(name: "ApiKey", type: .string, isSecret: true),
            KeySchema(name: "LogLevel", type: .string, defaultValue: "info"),
        ])
    static let date = Date(timeIntervalSince1970: 1_706_691_900)
    static let start: [String: PropertyList] = [
        "RateLimit": 100, "Theme": "dark", "Ratio": 0.25, "Enabled": true, "Since": .date(date),
        "Blob": .data(Data([1, 2, 255])), "Hosts": ["a", 2, ["deep": false]], "Limits": ["read": 1.5, "tags": []],
        "Name": "42",
    ]

    let machine = SimulatedMachine(seed: 68)

    /// The command's store: watching nothing, as the command opens it.
    func tool() throws -> Defaults {
        var configuration = machine.process("defaults").configuration(applicationDomain: Self.domain)
        configuration.watching = .off
        return try machine.process("defaults").defaults(configuration: configuration)
    }

    /// A running program's store of the domain.
    func server() throws -> Defaults { try #require(machine.process("server").defaults(suiteName: Self.domain)) }

    var path: String { "\(machine.userDirectory)/\(Self.domain).plist" }

    /// The domain as `values`, written by the server.
    func prepare(_ values: [String: PropertyList] = start) async throws -> Defaults {
        let server = try server()
        try server.transaction { transaction in
            for (key, value) in values { transaction.set(value, forKey: key) }
        }
        await machine.settle()
        return server
    }

    func session(showSecrets: Bool = false) throws -> EditSession {
        try EditSession(
            defaults: tool(), domain: Self.domain,
            header: EditSession.header(domain: Self.domain, path: path), schema: Self.schema, showSecrets: showSecrets)
    }

    @Test("a changed value is written; every other value keeps its type, and its bytes on disk")
    func changedValueKeepsTheRest() async throws {
        let server = try await prepare()
        let before = try #require(machine.contents(atPath: path))
        var session = try session()
        let editor = ScriptedEditor([.replace("RateLimit = 100;", with: "RateLimit = 250;")])
        #expect(try session.run(editor: editor.edit) == .applied(changed: ["RateLimit"]))
        var expected = Self.start
        expected["RateLimit"] = 250
        let after = try #require(machine.contents(atPath: path))
        #expect(try PropertyList.decode(after).value == .dictionary(expected))
        // The file is the writer's encoding of the new version: what did not change is byte for byte as before.
        #expect(before == (try PropertyList.dictionary(Self.start).encoded()))
        #expect(after == (try PropertyList.dictionary(expected).encoded()))
        await machine.settle()
        #expect(server.integer(forKey: "RateLimit") == 250, "a running program sees the edit")
        let shown = try #require(editor.shown.first)
        #expect(shown.contains("// defaults edit com.example.edit"))
        #expect(
            shown.contains(
                "    // Requests per minute per client. An integer in 1…10000 (default 100)\n    RateLimit = 100;"))
        #expect(shown.contains("    // LogLevel = \"info\";"), "a declared key that is not set, commented out")
    }

    @Test("saved unchanged: nothing written, no change logged; the editor failing or an emptied text: nothing written")
    func nothingWritten() async throws {
        _ = try await prepare()
        let before = try #require(machine.contents(atPath: path))
        let logged = try tool().loggedChanges(inDomain: Self.domain).count
        var session = try session()
        #expect(try session.run(editor: ScriptedEditor([.same]).edit) == .unchanged)
        session = try self.session()
        let failing = ScriptedEditor([.fail])
        guard case .aborted(let reason) = try session.run(editor: failing.edit) else {
            Issue.record("not aborted"); return
        }
        #expect(reason.contains("the editor exited with an error"))
        session = try self.session()
        let emptying = ScriptedEditor([.text("// only a comment\n")])
        guard case .aborted(let emptied) = try session.run(editor: emptying.edit) else {
            Issue.record("not aborted"); return
        }
        #expect(emptied.contains("emptied"))
        #expect(machine.contents(atPath: path) == before)
        #expect(try tool().loggedChanges(inDomain: Self.domain).count == logged)
    }

    @Test("a syntax error opens the editor again with it noted at its line; fixed, the edit applies")
    func syntaxErrorFixed() async throws {
        _ = try await prepare()
        var session = try session()
        let editor = ScriptedEditor([
            .replace("RateLimit = 100;", with: "RateLimit = 300"),
            .replace("RateLimit = 300\n", with: "RateLimit = 300;\n"),
        ])
        #expect(try session.run(editor: editor.edit) == .applied(changed: ["RateLimit"]))
        #expect(editor.shown.count == 2)
        let second = editor.shown[1]
        #expect(second.hasPrefix("//! Not applied:\n//!   expected ; (marked below)\n"), "\(second)")
        #expect(second.contains("    //! the line below: expected ;\n    Ratio = "), "the key after the missing ;")
        #expect(try tool().integer(forKey: "RateLimit") == 300)
    }

    @Test("a problem saved again unchanged aborts, and nothing is written")
    func problemSavedAgainAborts() async throws {
        _ = try await prepare()
        let before = try #require(machine.contents(atPath: path))
        var session = try session()
        let editor = ScriptedEditor([.replace("Theme = \"dark\";", with: "Theme = dark"), .same])
        guard case .aborted(let reason) = try session.run(editor: editor.edit) else {
            Issue.record("not aborted"); return
        }
        #expect(reason.contains("saved again unchanged (line "), "\(reason)")
        #expect(machine.contents(atPath: path) == before)
    }

    @Test("the schema's refusals are noted at their keys (out of range, not a choice, a typo'd key); fixed, it applies")
    func schemaRefusal() async throws {
        _ = try await prepare()
        var session = try session()
        let editor = ScriptedEditor([
            .replace("RateLimit = 100;", with: "RateLimit = 20000;\n    RateLimt = 5;")
                .then(.replace("Theme = \"dark\";", with: "Theme = \"blue\";")),
            .replace("RateLimit = 20000;", with: "RateLimit = 5000;")
                .then(.replace("    RateLimt = 5;\n", with: ""))
                .then(.replace("Theme = \"blue\";", with: "Theme = \"light\";")),
        ])
        #expect(try session.run(editor: editor.edit) == .applied(changed: ["RateLimit", "Theme"]))
        let second = try #require(editor.shown.last)
        #expect(second.contains("//! RateLimt is not a key of com.example.edit; did you mean RateLimit?"), "\(second)")
        #expect(
            second.contains(
                "    //! key \"RateLimit\" accepts an integer in 1…10000; the value (integer 20000) is out of range\n"
                    + "    RateLimit = 20000;"), "\(second)")
        #expect(second.contains("one of: light, dark"), "\(second)")
        let tool = try tool()
        #expect(tool.integer(forKey: "RateLimit") == 5000 && tool.string(forKey: "Theme") == "light")
        #expect(tool.object(forKey: "RateLimt") == nil)
    }

    @Test("without validation, what the schema refuses is written, with a warning")
    func noValidate() async throws {
        _ = try await prepare()
        var session = try session()
        session.validates = false
        let editor = ScriptedEditor([.replace("RateLimit = 100;", with: "RateLimit = 20000;")])
        #expect(try session.run(editor: editor.edit) == .applied(changed: ["RateLimit"]))
        #expect(session.warnings.count == 1 && session.warnings[0].contains("out of range"))
        #expect(try tool().integer(forKey: "RateLimit") == 20000)
    }

    @Test("another writer's change to other keys while the editor is open is kept")
    func otherKeyChangedMeanwhile() async throws {
        let server = try await prepare()
        var session = try session()
        let editor = ScriptedEditor([
            .replace("RateLimit = 100;", with: "RateLimit = 250;").meanwhile {
                server.set("light", forKey: "Theme")
                server.set(1, forKey: "Added")
                #expect(server.synchronize())
            }
        ])
        #expect(try session.run(editor: editor.edit) == .applied(changed: ["RateLimit"]))
        let tool = try tool()
        #expect(tool.integer(forKey: "RateLimit") == 250)
        #expect(tool.string(forKey: "Theme") == "light" && tool.integer(forKey: "Added") == 1, "theirs kept")
    }

    @Test("the same key changed meanwhile: both values shown, nothing written; the next save applies")
    func sameKeyChangedMeanwhile() async throws {
        let server = try await prepare()
        var session = try session()
        let editor = ScriptedEditor([
            .replace("RateLimit = 100;", with: "RateLimit = 250;").meanwhile {
                server.set(500, forKey: "RateLimit")
                #expect(server.synchronize())
            },
            .same,
        ])
        #expect(try session.run(editor: editor.edit) == .applied(changed: ["RateLimit"]))
        let second = try #require(editor.shown.last)
        #expect(second.contains("//!   RateLimit: now 500 (you were shown 100)"), "\(second)")
        #expect(second.contains("    //! another writer changed this while you edited"), "\(second)")
        #expect(second.contains("RateLimit = 250;"), "the person's value is kept in the text")
        #expect(try tool().integer(forKey: "RateLimit") == 250)
    }

    @Test("removing a line removes the key; uncommenting a declared key sets it")
    func removeAndAdd() async throws {
        _ = try await prepare()
        var session = try session()
        let editor = ScriptedEditor([
            .replace("    Ratio = 0.25;\n", with: "").then(
                .replace("// LogLevel = \"info\";", with: "LogLevel = \"debug\";"))
        ])
        #expect(try session.run(editor: editor.edit) == .applied(changed: ["LogLevel", "Ratio"]))
        let tool = try tool()
        #expect(tool.object(forKey: "Ratio") == nil && tool.string(forKey: "LogLevel") == "debug")
    }

    @Test("the change log names the edit: its reason, and only the keys it changed")
    func logged() async throws {
        _ = try await prepare()
        var session = try session()
        let editor = ScriptedEditor([.replace("Theme = \"dark\";", with: "Theme = \"light\";")])
        #expect(try session.run(editor: editor.edit) == .applied(changed: ["Theme"]))
        let latest = try #require(try tool().loggedChanges(inDomain: Self.domain).first)
        #expect(latest.key == "Theme" && latest.reason == "defaults edit")
        #expect(latest.oldValue == .value("dark") && latest.newValue == .value("light"))
        #expect(try tool().loggedChanges(inDomain: Self.domain).filter { $0.reason == "defaults edit" }.count == 1)
    }

    @Test("a secret is not shown and is kept; shown when asked, it can be edited")
    func secrets() async throws {
        var values = Self.start
        values["ApiKey"] = "s3cr3t"
        _ = try await prepare(values)
        var session = try session()
        let editor = ScriptedEditor([.replace("RateLimit = 100;", with: "RateLimit = 7;")])
        #expect(try session.run(editor: editor.edit) == .applied(changed: ["RateLimit"]))
        #expect(editor.shown.allSatisfy { !$0.contains("s3cr3t") })
        #expect(try tool().string(forKey: "ApiKey") == "s3cr3t")
        var shown = try self.session(showSecrets: true)
        let revealing = ScriptedEditor([.replace("ApiKey = \"s3cr3t\";", with: "ApiKey = \"rotated\";")])
        #expect(try shown.run(editor: revealing.edit) == .applied(changed: ["ApiKey"]))
        #expect(try tool().string(forKey: "ApiKey") == "rotated")
    }

    @Test("refused by a running program and put back: offered again with the reason; saved unchanged, it aborts")
    func offeredAgain() async throws {
        _ = try await prepare()
        var session = try session()
        let editor = ScriptedEditor([.replace("RateLimit = 100;", with: "RateLimit = 9;"), .same])
        #expect(try session.run(editor: editor.edit) == .applied(changed: ["RateLimit"]))
        let tool = try tool()
        // What the command does on a refusal: put the version before back, then offer the edit again.
        let written = try #require(tool.persistentDomainValues(forName: Self.domain, layer: .currentUser))
        let before = session.versionBefore(written: written)
        #expect(before == Self.start)
        try tool.transaction(inDomain: Self.domain) { transaction in transaction.set(100, forKey: "RateLimit") }
        session.offerAgain(saying: ["7 server refused v1: too low"])
        guard case .aborted = try session.run(editor: editor.edit) else { Issue.record("not aborted"); return }
        let again = try #require(editor.shown.last)
        #expect(again.hasPrefix("//! Applied, then refused by a running program"), "\(again)")
        #expect(again.contains("//! 7 server refused v1: too low") && again.contains("RateLimit = 9;"))
    }
}

/// An editor that plays rounds: each gets the text shown and gives the text saved (nil: the editor failed).
final class ScriptedEditor {
    struct Round {
        var edit: (String) -> String?
        var sideEffect: () -> Void = {}

        static func replace(_ old: String, with new: String) -> Round {
            Round { text in
                #expect(text.contains(old), "the text shown has \(old)")
                return text.replacingOccurrences(of: old, with: new)
            }
        }
        static var same: Round { Round { $0 } }
        static var fail: Round { Round { _ in nil } }
        static func text(_ text: String) -> Round { Round { _ in text } }

        /// This round, then `next` on what it saved.
        func then(_ next: Round) -> Round {
            Round { text in edit(text).flatMap(next.edit) }
        }

        /// This round, with `body` run while the editor is open (another writer).
        func meanwhile(_ body: @escaping () -> Void) -> Round {
            Round(edit: edit, sideEffect: body)
        }
    }

    private var rounds: [Round]
    private(set) var shown: [String] = []

    init(_ rounds: [Round]) {
        self.rounds = rounds
    }

    func edit(_ text: String) -> String? {
        shown.append(text)
        guard !rounds.isEmpty else {
            Issue.record("the editor opened more often than scripted")
            return nil
        }
        let round = rounds.removeFirst()
        round.sideEffect()
        return round.edit(text)
    }
}
