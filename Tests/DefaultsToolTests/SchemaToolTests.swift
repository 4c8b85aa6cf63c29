import Foundation
import TestProcesses
import Testing

@testable import LiveDefaults

/// The `defaults` command against a schema published by a real program (the helper's `publish-schema`,
/// which declares RateLimit 1…100000, Theme light/dark/system, a secret APIToken, Ratio 0…1, and more).
@Suite("The defaults command honours published schemas", .blockingWork)
struct SchemaToolTests {
    /// A sandbox whose data directory holds the schema of `com.example.api`, published by another process.
    func published() throws -> Sandbox {
        let sandbox = Sandbox()
        let run = try runHelper(["publish-schema", "com.example.api"], environment: sandbox.environment())
        #expect(run.status == 0)
        #expect(run.output.contains(sandbox.file("data/livedefaults/schemas/com.example.api.plist")))
        return sandbox
    }

    @Test("write refuses a wrong type, an out-of-range value and a value not among the choices; nothing is written")
    func writeRefuses() throws {
        let sandbox = try published()
        try sandbox.ok("write", "com.example.api", "RateLimit", "-int", "250")
        let cases: [([String], String)] = [
            (["RateLimit", "-string", "fifty"], #"key "RateLimit" accepts an integer in 1…100000"#),
            (["RateLimit", "-int", "0"], "is out of range"),
            (["RateLimit", "100001"], "(string 100001) is of another type"),  // a bare value is a string
            (["Theme", "-string", "blue"], "a string, one of: light, dark, system"),
            (["Ratio", "-float", "1.5"], "a real number in 0.0…1.0"),
            (["Verbose", "-string", "yes"], "a Boolean"),
        ]
        for (words, expected) in cases {
            let result = try sandbox.run(["write", "com.example.api"] + words)
            #expect(result.status == 1, "\(words)")
            #expect(result.error.contains(expected), "\(words): \(result.error)")
            #expect(result.error.contains("nothing written"))
        }
        #expect(try sandbox.ok("read", "com.example.api", "RateLimit") == "250\n", "the file kept its value")
        #expect(try sandbox.run("read", "com.example.api", "Theme").status == 1)
        // A whole domain with one bad value: refused whole.
        let whole = try sandbox.run("write", "com.example.api", "{ RateLimit = 5; Theme = blue; }")
        #expect(whole.status == 1 && whole.error.contains("Theme"))
        #expect(try sandbox.ok("read", "com.example.api", "RateLimit") == "250\n")
        // Valid values are written.
        try sandbox.ok("write", "com.example.api", "Theme", "-string", "dark")
        try sandbox.ok("write", "com.example.api", "Ratio", "-int", "1")
        // --no-validate, before the domain or last: written, with a warning.
        for words in [
            ["write", "--no-validate", "com.example.api", "RateLimit", "-string", "fifty"],
            ["write", "com.example.api", "RateLimit", "-int", "0", "--no-validate"],
        ] {
            let forced = try sandbox.run(words)
            #expect(forced.status == 0, "\(forced.error)")
            #expect(forced.error.contains("warning") && forced.error.contains("RateLimit"))
        }
        #expect(try sandbox.ok("read", "com.example.api", "RateLimit") == "0\n")
    }

    @Test(
        "a key the schema does not declare is refused by write, merge and import, naming the key meant; --no-validate writes it; doctor lists it"
    )
    func undeclaredKeys() throws {
        let sandbox = try published()
        let typo = try sandbox.run("write", "com.example.api", "RateLimt", "-int", "50")
        #expect(typo.status == 1)
        #expect(
            typo.error.contains("nothing written: RateLimt is not a key of com.example.api; did you mean RateLimit?"),
            "\(typo.error)")
        #expect(try sandbox.run("read", "com.example.api", "RateLimt").status == 1, "nothing written")
        // Letter case alone, and a key near no declared one.
        let caseOnly = try sandbox.run("write", "com.example.api", "ratelimit", "-int", "50")
        #expect(caseOnly.status == 1 && caseOnly.error.contains("did you mean RateLimit?"), "\(caseOnly.error)")
        let far = try sandbox.run("write", "com.example.api", "Completely", "-int", "1")
        #expect(far.status == 1, "\(far.error)")
        #expect(
            far.error.contains("Completely is not a key of com.example.api (its published schema does not declare it)"))
        // merge and import refuse it too, writing none of their keys.
        let merge = try sandbox.run("merge", "com.example.api", "{ Theme = dark; Thme = light; }")
        #expect(merge.status == 1 && merge.error.contains("Thme is not a key of com.example.api; did you mean Theme?"))
        let imported = try sandbox.run(
            ["import", "com.example.api", "-"], input: "{ RateLimit = 5; RateLimt = 6; }")
        #expect(imported.status == 1 && imported.error.contains("did you mean RateLimit?"), "\(imported.error)")
        #expect(try sandbox.run("read", "com.example.api", "Theme").status == 1, "nothing of the merge written")
        #expect(try sandbox.run("read", "com.example.api", "RateLimit").status == 1, "nothing of the import written")
        // --no-validate writes it, with the warning.
        let forced = try sandbox.run("write", "--no-validate", "com.example.api", "RateLimt", "-int", "50")
        #expect(
            forced.status == 0 && forced.error.contains("warning") && forced.error.contains("did you mean RateLimit?"))
        #expect(try sandbox.ok("read", "com.example.api", "RateLimt") == "50\n")
        // doctor lists it, with the key meant, and says something is wrong.
        let doctor = try sandbox.run("doctor", "com.example.api")
        #expect(doctor.status == 1, "\(doctor.output)")
        #expect(doctor.output.contains("RateLimt (did you mean RateLimit?): in "), "\(doctor.output)")
        #expect(doctor.output.contains("RateLimt is not a key of com.example.api; did you mean RateLimit?"))
        let json = try sandbox.run("doctor", "com.example.api", "--json")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any])
        let undeclared = try #require(object["undeclaredKeys"] as? [[String: Any]])
        #expect(undeclared.count == 1 && undeclared.first?["key"] as? String == "RateLimt")
        #expect(undeclared.first?["suggestion"] as? String == "RateLimit")
        // A declared key's write goes through.
        try sandbox.ok("write", "com.example.api", "RateLimit", "-int", "50")
    }

    @Test("import checks the whole file before writing any of it")
    func importChecksWholeFile() throws {
        let sandbox = try published()
        try sandbox.ok("write", "com.example.api", "RateLimit", "-int", "250")
        let input = """
            <?xml version="1.0" encoding="UTF-8"?>
            <plist version="1.0"><dict>
            <key>Banner</key><string>Hello</string>
            <key>RateLimit</key><integer>500</integer>
            <key>Theme</key><string>purple</string>
            </dict></plist>
            """
        let refused = try sandbox.run(["import", "com.example.api", "-"], input: input)
        #expect(refused.status == 1)
        #expect(refused.error.contains("Theme") && refused.error.contains("one of: light, dark, system"))
        #expect(try sandbox.ok("read", "com.example.api", "RateLimit") == "250\n", "nothing of the file was written")
        #expect(try sandbox.run("read", "com.example.api", "Banner").status == 1)
        let forced = try sandbox.run(["import", "--no-validate", "com.example.api", "-"], input: input)
        #expect(forced.status == 0 && forced.error.contains("warning"))
        #expect(try sandbox.ok("read", "com.example.api", "Theme") == "purple\n")
    }

    @Test(
        "schema prints the published schema; --json-schema is JSON Schema that Python's jsonschema accepts and checks")
    func jsonSchema() throws {
        let sandbox = try published()
        let text = try sandbox.ok("schema", "com.example.api")
        #expect(text.contains("RateLimit") && text.contains("Maximum = 100000;") && text.contains("FormatVersion"))
        let missing = try sandbox.run("schema", "com.example.nothing")
        #expect(missing.status == 1 && missing.error.contains("no schema is published for com.example.nothing"))

        let schemaPath = sandbox.file("api.schema.json")
        try sandbox.ok("schema", "com.example.api", "--json-schema").write(
            toFile: schemaPath, atomically: true, encoding: .utf8)
        try sandbox.ok("write", "com.example.api", "RateLimit", "-int", "250")
        try sandbox.ok("write", "com.example.api", "Theme", "-string", "dark")
        try sandbox.ok("write", "com.example.api", "APIToken", "-string", "s3cret")
        try sandbox.ok("write", "com.example.api", "LastSync", "-date", "2026-11-25 10:00:00 +0000")
        try sandbox.ok("write", "com.example.api", "Hosts", "-array", "a", "b")
        try sandbox.ok("write", "com.example.api", "Limits", "-dict", "perMinute", "-int", "5", "burst", "-int", "2")
        let good = sandbox.file("good.json")
        try sandbox.ok("export", "com.example.api", good, "--json", "--show-secrets")
        #expect(try validate(schemaPath, good) == "valid")
        try sandbox.ok("write", "--no-validate", "com.example.api", "RateLimit", "-int", "0")
        let bad = sandbox.file("bad.json")
        try sandbox.ok("export", "com.example.api", bad, "--json", "--show-secrets")
        let verdict = try validate(schemaPath, bad)
        #expect(verdict.hasPrefix("invalid") && verdict.contains("RateLimit"), "\(verdict)")
        try sandbox.ok("write", "--no-validate", "com.example.api", "RateLimit", "-int", "7")
        try sandbox.ok("write", "--no-validate", "com.example.api", "Theme", "-string", "blue")
        try sandbox.ok("export", "com.example.api", bad, "--json", "--show-secrets")
        #expect(try validate(schemaPath, bad).contains("Theme"))
    }

    /// Python's jsonschema (PyPI): checks the schema against draft 2020-12's metaschema, then validates the
    /// instance; prints "valid", or "invalid <path>: <message>".
    func validate(_ schema: String, _ instance: String) throws -> String {
        let script = """
            import json, sys, jsonschema
            schema = json.load(open(sys.argv[1]))
            jsonschema.Draft202012Validator.check_schema(schema)
            errors = list(jsonschema.Draft202012Validator(schema).iter_errors(json.load(open(sys.argv[2]))))
            print("valid" if not errors else "invalid " + "; ".join(
                "/".join(map(str, e.absolute_path)) + ": " + e.message for e in errors))
            """
        let result = try Sandbox.execute(
            URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", script, schema, instance],
            environment: ProcessInfo.processInfo.environment)
        #expect(result.status == 0, "\(result.error)")
        return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test("describe: type, default, range or choices, summary, secret, the value in effect and its file")
    func describe() throws {
        let sandbox = try published()
        try sandbox.ok("write", "com.example.api", "RateLimit", "-int", "250")
        try sandbox.ok("write", "com.example.api", "APIToken", "-string", "s3cret")
        let one = try sandbox.ok("describe", "com.example.api", "RateLimit")
        #expect(one.contains("RateLimit: Requests per minute per client."))
        #expect(one.contains("  type: integer\n  default: 100\n  range: 1…100000"))
        #expect(
            one.contains("  value: 250 (from com.example.api currentUser, \(sandbox.file("com.example.api.plist")))"))
        let all = try sandbox.ok("describe", "com.example.api")
        #expect(all.contains("Theme: The colour scheme of the pages.\n  type: string\n  default: system"))
        #expect(all.contains("  choices: light, dark, system"))
        #expect(all.contains("  value: system (the default: no file holds the key)"))
        #expect(all.contains("APIToken: The token sent to the upstream API.") && all.contains("  secret: yes"))
        #expect(all.contains("  value: <secret> (from com.example.api") && !all.contains("s3cret"))
        #expect(all.contains("LastSync: When the settings were last synchronised.\n  type: date\n  default: none"))
        #expect(all.contains("Limits: Burst limits.\n  type: dictionary"))
        #expect(try sandbox.ok("describe", "--show-secrets", "com.example.api", "APIToken").contains("value: s3cret"))
        try sandbox.ok("write", "--no-validate", "com.example.api", "RateLimit", "-int", "0")
        #expect(
            try sandbox.ok("describe", "com.example.api", "RateLimit").contains(
                "the schema refuses it (outOfRange): programs read their last valid value"))
        let unknown = try sandbox.run("describe", "com.example.api", "Nope")
        #expect(unknown.status == 1 && unknown.error.contains("declares no key Nope"))
        // A temporary value: when it ends and what it returns to; a secret one masked.
        try sandbox.ok("write", "com.example.api", "RateLimit", "-int", "50", "--for", "2h", "--reason", "incident")
        try sandbox.ok("write", "com.example.api", "APIToken", "-string", "t3mp", "--for", "2h")
        let temporary = try sandbox.ok("describe", "com.example.api")
        #expect(temporary.contains("  value: 50 (from com.example.api currentUser"))
        #expect(temporary.contains("\n  temporary: RateLimit is temporary (incident): at "), "\(temporary)")
        #expect(temporary.contains("it returns to 0 unless changed again"), "\(temporary)")
        #expect(temporary.contains("\n  temporary: APIToken is temporary: at ") && !temporary.contains("s3cret"))
        #expect(!temporary.contains("t3mp"))
    }

    @Test("reset removes the user's value and prints what shows now: another layer's value or the default")
    func reset() throws {
        let sandbox = try published()
        try sandbox.ok("write", "com.example.api", "RateLimit", "-int", "250")
        #expect(
            try sandbox.ok("reset", "com.example.api", "RateLimit")
                == "RateLimit now reads 100 (the default: no file holds the key)\n")
        #expect(try sandbox.run("read", "com.example.api", "RateLimit").status == 1, "gone from the file")
        try sandbox.ok("write", "com.example.api", "RateLimit", "-int", "250")
        try sandbox.ok("write", "-g", "RateLimit", "-int", "5")
        let global = try sandbox.ok("reset", "com.example.api", "RateLimit")
        #expect(global.hasPrefix("RateLimit now reads 5 (from NSGlobalDomain currentUser"), "\(global)")
        let again = try sandbox.ok("reset", "com.example.api", "RateLimit")
        #expect(again.contains("RateLimit had no value in") && again.contains("now reads 5"))
        try sandbox.ok("write", "com.example.api", "APIToken", "-string", "s3cret")
        #expect(try sandbox.ok("reset", "com.example.api", "APIToken").contains("now reads <secret> (the default"))
    }

    @Test("read and export print <secret> for secret keys unless --show-secrets")
    func secrets() throws {
        let sandbox = try published()
        try sandbox.ok("write", "com.example.api", "APIToken", "-string", "s3cret")
        try sandbox.ok("write", "com.example.api", "Banner", "-string", "Hello")
        #expect(try sandbox.ok("read", "com.example.api", "APIToken") == "<secret>\n")
        #expect(try sandbox.ok("read", "--show-secrets", "com.example.api", "APIToken") == "s3cret\n")
        let domain = try sandbox.ok("read", "com.example.api")
        #expect(domain.contains("<secret>") && domain.contains("Hello") && !domain.contains("s3cret"))
        let everything = try sandbox.ok("read")
        #expect(everything.contains("<secret>") && !everything.contains("s3cret"))
        let exported = try sandbox.ok("export", "com.example.api", "-", "--json")
        #expect(exported.contains("\"<secret>\"") && !exported.contains("s3cret"))
        #expect(try sandbox.ok("export", "com.example.api", "-", "--show-secrets").contains("s3cret"))
        let watch = try sandbox.start("watch", "com.example.api")
        let shown = try sandbox.start("watch", "--show-secrets", "com.example.api", "APIToken")
        #expect(watch.waitForStderr("Watching com.example.api"))
        #expect(shown.waitForStderr("Watching com.example.api APIToken"))
        try sandbox.ok("write", "com.example.api", "APIToken", "-string", "n3w")
        try sandbox.ok("write", "com.example.api", "Banner", "-string", "Bye")
        #expect(watch.waitForLine("com.example.api APIToken = <secret>"))
        #expect(watch.waitForLine("com.example.api Banner = Bye"))
        #expect(shown.waitForLine("com.example.api APIToken = n3w"))
        #expect(watch.stop(SIGTERM) == 0)
        #expect(shown.stop(SIGTERM) == 0)
        #expect(!watch.lines.contains { $0.contains("n3w") })
    }
}
