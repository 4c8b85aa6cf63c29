import Foundation
import PlistOracle
import TestProcesses
import Testing

/// Runs the built `defaults` binary, with its own XDG_CONFIG_HOME, and checks files with Python's plistlib.
@Suite("The defaults command", .blockingWork)
struct DefaultsToolTests {
    // MARK: read, read-type, domains, find

    @Test("read prints a key bare, a domain as old-style text, every domain, and JSON")
    func read() throws {
        let sandbox = Sandbox()
        try sandbox.ok("write", "com.example.app", "Name", "Ada Lovelace")
        try sandbox.ok("write", "com.example.app", "Count", "-int", "42")
        try sandbox.ok("write", "com.example.other", "X", "-bool", "YES")
        #expect(try sandbox.ok("read", "com.example.app", "Name") == "Ada Lovelace\n")
        #expect(try sandbox.ok("read", "com.example.app", "Count") == "42\n")
        #expect(try sandbox.ok("read", "com.example.app") == "{\n    Count = 42;\n    Name = \"Ada Lovelace\";\n}\n")
        let all = try sandbox.ok("read")
        #expect(all.contains("com.example.app = {") && all.contains("com.example.other = {") && all.contains("X = 1;"))
        #expect(
            try sandbox.ok("read", "com.example.app", "--json")
                == "{\n  \"Count\" : 42,\n  \"Name\" : \"Ada Lovelace\"\n}\n")
        #expect(try sandbox.ok("read", "com.example.other", "X", "--json") == "true\n")
    }

    @Test("read-type names every type")
    func readType() throws {
        let sandbox = Sandbox()
        let cases: [(String, [String])] = [
            ("string", ["-string", "s"]), ("integer", ["-int", "1"]), ("float", ["-float", "1.5"]),
            ("boolean", ["-bool", "true"]), ("date", ["-date", "2024-01-31 09:05:00 +0000"]),
            ("data", ["-data", "00ff"]),
            ("array", ["-array", "a"]), ("dictionary", ["-dict", "k", "v"]),
        ]
        for (type, value) in cases {
            try sandbox.ok(["write", "com.example.types", type] + value)
            #expect(try sandbox.ok("read-type", "com.example.types", type) == "Type is \(type)\n")
        }
    }

    @Test("domains lists domains; find searches names, keys and values")
    func domainsAndFind() throws {
        let sandbox = Sandbox()
        try sandbox.ok("write", "com.example.b", "Color", "blue")
        try sandbox.ok("write", "com.example.a", "Shape", "circle")
        try sandbox.ok("write", "-g", "Language", "en")
        #expect(try sandbox.ok("domains") == "NSGlobalDomain, com.example.a, com.example.b\n")
        #expect(try sandbox.ok("find", "BLUE") == "Found 1 keys in domain 'com.example.b': {\n    Color = blue;\n}\n")
        #expect(try sandbox.ok("find", "example.a").contains("Shape = circle;"))
        #expect(
            try sandbox.ok("find", "nothing-like-this") == "No domain, key, nor value containing 'nothing-like-this'\n")
    }

    // MARK: write

    @Test("Every type flag writes its type, checked with plistlib")
    func writeTypes() throws {
        let sandbox = Sandbox()
        let domain = "com.example.write"
        try sandbox.ok("write", domain, "S", "-string", "-looks-like-a-flag")
        try sandbox.ok("write", domain, "I", "-int", "-5")
        try sandbox.ok("write", domain, "I2", "-integer", "7")
        try sandbox.ok("write", domain, "F", "-float", "2.5")
        try sandbox.ok("write", domain, "B1", "-bool", "YES")
        try sandbox.ok("write", domain, "B2", "-boolean", "false")
        try sandbox.ok("write", domain, "B3", "-bool", "1")
        try sandbox.ok("write", domain, "B4", "-bool", "No")
        try sandbox.ok("write", domain, "D", "-date", "2024-01-31 09:05:00 +0000")
        try sandbox.ok("write", domain, "D2", "-date", "2024-01-31T09:05:00Z")
        try sandbox.ok("write", domain, "X", "-data", "0aff")
        try sandbox.ok("write", domain, "A", "-array", "a", "-int", "2", "(x, y)")
        try sandbox.ok("write", domain, "A", "-array-add", "b")
        try sandbox.ok("write", domain, "M", "-dict", "k", "v", "n", "-float", "0.5")
        try sandbox.ok("write", domain, "M", "-dict-add", "k", "w", "z", "-bool", "true")
        try sandbox.ok("write", domain, "Bare", "42")
        try sandbox.ok("write", domain, "Words", "A B")
        try sandbox.ok("write", domain, "List", "(1, \"two words\")")
        try sandbox.ok("write", domain, "Dict", "{ a = 1; b = (x); }")
        let python = try sandbox.python(domain, "{k: [type(v).__name__, v] for k, v in d.items()}")
        #expect(
            python == """
                {"A": ["list", ["a", 2, ["x", "y"], "b"]], "B1": ["bool", true], "B2": ["bool", false], \
                "B3": ["bool", true], "B4": ["bool", false], "Bare": ["str", "42"], \
                "D": ["datetime", "2024-01-31 09:05:00"], "D2": ["datetime", "2024-01-31 09:05:00"], \
                "Dict": ["dict", {"a": "1", "b": ["x"]}], "F": ["float", 2.5], "I": ["int", -5], "I2": ["int", 7], \
                "List": ["list", ["1", "two words"]], "M": ["dict", {"k": "w", "n": 0.5, "z": true}], \
                "S": ["str", "-looks-like-a-flag"], "Words": ["str", "A B"], "X": ["bytes", "b'\\\\n\\\\xff'"]}
                """)
    }

    @Test("write with a dictionary replaces the domain; write returns with the value on disk")
    func writeDomain() throws {
        let sandbox = Sandbox()
        try sandbox.ok("write", "com.example.replace", "Old", "1")
        try sandbox.ok("write", "com.example.replace", "{ New = 2; Other = (a); }")
        // No waiting: the file is complete when the command returns.
        #expect(try sandbox.python("com.example.replace", "d") == #"{"New": "2", "Other": ["a"]}"#)
    }

    @Test("Bad values for their type flag are refused, nothing is written")
    func badValues() throws {
        let sandbox = Sandbox()
        try sandbox.ok("write", "com.example.bad", "Keep", "1")
        for (flag, value, message) in [
            ("-int", "abc", "-int needs an integer, not \"abc\""), ("-float", "x", "-float needs a number"),
            ("-bool", "maybe", "-bool needs YES, NO, TRUE, FALSE, 1 or 0"), ("-data", "abc", "-data needs hexadecimal"),
            ("-date", "soon", "-date needs a date"),
        ] {
            let result = try sandbox.run("write", "com.example.bad", "Key", flag, value)
            #expect(result.status != 0)
            #expect(result.error.hasPrefix("defaults: ") && result.error.contains(message), "\(result.error)")
        }
        let unparseable = try sandbox.run("write", "com.example.bad", "Key", "(1,")
        #expect(unparseable.status != 0 && unparseable.error.contains("cannot parse"))
        let missing = try sandbox.run("write", "com.example.bad", "Key", "-int")
        #expect(missing.status != 0 && missing.error.contains("-int needs a value"))
        #expect(try sandbox.python("com.example.bad", "d") == #"{"Keep": "1"}"#)
    }

    // MARK: rename, delete, import, export

    @Test("rename and delete, with their errors")
    func renameAndDelete() throws {
        let sandbox = Sandbox()
        try sandbox.ok("write", "com.example.edit", "A", "-int", "1")
        try sandbox.ok("write", "com.example.edit", "B", "-int", "2")
        try sandbox.ok("rename", "com.example.edit", "A", "C")
        // Renamed to itself: the key keeps its value.
        try sandbox.ok("rename", "com.example.edit", "C", "C")
        #expect(try sandbox.python("com.example.edit", "d") == #"{"B": 2, "C": 1}"#)
        let missingKey = try sandbox.run("rename", "com.example.edit", "Nope", "D")
        #expect(
            missingKey.status != 0 && missingKey.error.contains("Key Nope does not exist in domain com.example.edit"))
        try sandbox.ok("delete", "com.example.edit", "B")
        #expect(try sandbox.python("com.example.edit", "d") == #"{"C": 1}"#)
        let deleteMissing = try sandbox.run("delete", "com.example.edit", "B")
        #expect(deleteMissing.status != 0 && deleteMissing.error.contains("Key B does not exist"))
        try sandbox.ok("delete", "com.example.edit")
        #expect(!FileManager.default.fileExists(atPath: sandbox.file("com.example.edit.plist")))
        let noDomain = try sandbox.run("delete", "com.example.edit")
        #expect(noDomain.status != 0 && noDomain.error == "defaults: Domain (com.example.edit) not found.\n")
    }

    @Test("import from a file or standard input; export to a file or standard output, XML or JSON")
    func importExport() throws {
        let sandbox = Sandbox()
        let binary = sandbox.file("input.plist")
        try sandbox.runPython(
            "import plistlib; plistlib.dump({'A': 1, 'B': [True]}, open('\(binary)', 'wb'), fmt=plistlib.FMT_BINARY)")
        try sandbox.ok("import", "com.example.imported", binary)
        #expect(try sandbox.python("com.example.imported", "d") == #"{"A": 1, "B": [true]}"#)
        try sandbox.ok(["import", "com.example.stdin", "-"], input: "{ Piped = yes; }")
        #expect(try sandbox.python("com.example.stdin", "d") == #"{"Piped": "yes"}"#)
        let xml = try sandbox.ok("export", "com.example.imported", "-")
        #expect(xml.hasPrefix("<?xml version=\"1.0\" encoding=\"UTF-8\"?>") && xml.contains("<key>A</key>"))
        let exported = sandbox.file("exported.plist")
        try sandbox.ok("export", "com.example.imported", exported)
        #expect(try pythonPlist(exported) == #"{"A": 1, "B": [true]}"#)
        #expect(
            try sandbox.ok("export", "com.example.imported", "-", "--json")
                == "{\n  \"A\" : 1,\n  \"B\" : [\n    true\n  ]\n}\n")
        let notPlist = sandbox.file("garbage.txt")
        try Data("{ unterminated".utf8).write(to: URL(fileURLWithPath: notPlist))
        let failed = try sandbox.run("import", "com.example.imported", notPlist)
        #expect(failed.status != 0 && failed.error.contains("garbage.txt is not a property list"))
    }

    // MARK: domain and host selectors

    @Test("-g, -globalDomain and NSGlobalDomain; a path to a plist file")
    func domainSelectors() throws {
        let sandbox = Sandbox()
        try sandbox.ok("write", "-g", "A", "1")
        try sandbox.ok("write", "-globalDomain", "B", "2")
        try sandbox.ok("write", "NSGlobalDomain", "C", "3")
        #expect(try pythonPlist(sandbox.file(".GlobalPreferences.plist")) == #"{"A": "1", "B": "2", "C": "3"}"#)
        #expect(try sandbox.ok("read", "-g", "B") == "2\n")
        let elsewhere = sandbox.file("elsewhere")
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
        try sandbox.ok("write", elsewhere + "/custom.plist", "K", "v")
        #expect(try pythonPlist(elsewhere + "/custom.plist") == #"{"K": "v"}"#)
        #expect(try sandbox.ok("read", elsewhere + "/custom", "K") == "v\n")
    }

    @Test("-currentHost and -host write the per-host (ByHost) file")
    func hostSelectors() throws {
        let sandbox = Sandbox()
        try sandbox.ok("-currentHost", "write", "com.example.host", "Here", "1")
        #expect(try pythonPlist(sandbox.file("ByHost/com.example.host..plist")) == #"{"Here": "1"}"#)
        try sandbox.ok("-host", "build7", "write", "com.example.host", "There", "2")
        #expect(try pythonPlist(sandbox.file("ByHost/com.example.host.build7.plist")) == #"{"There": "2"}"#)
        #expect(try sandbox.ok("-host", "build7", "read", "com.example.host", "There") == "2\n")
        #expect(try sandbox.run("read", "com.example.host").status != 0, "the user file was never written")
    }

    // MARK: errors

    @Test("Errors name what went wrong and exit non-zero: missing, invalid, forced, corrupt, permission")
    func errors() throws {
        let sandbox = Sandbox()
        let missingDomain = try sandbox.run("read", "com.example.none")
        #expect(
            missingDomain.status == 1 && missingDomain.error == "defaults: Domain com.example.none does not exist\n")
        try sandbox.ok("write", "com.example.there", "A", "1")
        let missingKey = try sandbox.run("read", "com.example.there", "B")
        #expect(
            missingKey.status == 1
                && missingKey.error == "defaults: The domain/default pair of (com.example.there, B) does not exist\n")
        for name in [".hidden", String(repeating: "x", count: 201)] {
            let invalid = try sandbox.run("write", name, "A", "1")
            #expect(invalid.status == 1 && invalid.error.contains("invalid domain name"))
        }

        // Forced by an administrator.
        let managed = sandbox.file("managed")
        try FileManager.default.createDirectory(atPath: managed, withIntermediateDirectories: true)
        try sandbox.runPython(
            "import plistlib; plistlib.dump({'Locked': 1}, open('\(managed)/com.example.there.plist', 'wb'))")
        let forced = try sandbox.run(
            ["write", "com.example.there", "Locked", "2"], environment: ["LIVEDEFAULTS_MANAGED_DIRECTORY": managed])
        #expect(
            forced.status == 1 && forced.error.contains("\"Locked\"")
                && forced.error.contains("managed by an administrator"))

        // A corrupt file is reported with its path and left exactly as it was.
        let corruptPath = sandbox.file("com.example.corrupt.plist")
        try Data("<plist><dict><key>A</key>".utf8).write(to: URL(fileURLWithPath: corruptPath))
        for arguments in [["read", "com.example.corrupt"], ["write", "com.example.corrupt", "B", "1"]] {
            let corrupt = try sandbox.run(arguments)
            #expect(
                corrupt.status == 1 && corrupt.error.contains(corruptPath)
                    && corrupt.error.split(separator: "\n").count == 1)
        }
        #expect(try String(contentsOfFile: corruptPath, encoding: .utf8) == "<plist><dict><key>A</key>")
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: sandbox.path).allSatisfy { !$0.contains("corrupt-") })

        // No permission: another user's private directory.
        let privateDirectory = sandbox.file("private")
        try FileManager.default.createDirectory(atPath: privateDirectory, withIntermediateDirectories: true)
        try sandbox.ok(["write", "com.example.secret", "A", "1"], environment: ["XDG_CONFIG_HOME": privateDirectory])
        chmod(privateDirectory, 0o700)
        guard let denied = try sandbox.runAsAnotherUser(["read", "com.example.secret"], home: privateDirectory) else {
            return
        }
        #expect(
            denied.status == 1 && denied.error.contains(privateDirectory) && denied.error.contains("ermission denied"))
    }

    // MARK: watch

    @Test("watch prints one line per change, whoever makes it, flushed at once; JSON Lines; SIGTERM ends it cleanly")
    func watch() throws {
        let sandbox = Sandbox()
        try sandbox.ok("write", "com.example.watched", "Existing", "1")
        let text = try sandbox.start("watch", "com.example.watched")
        let json = try sandbox.start("watch", "com.example.watched", "Level", "--json")
        #expect(text.waitForStderr("Watching com.example.watched"))
        #expect(json.waitForStderr("Watching com.example.watched Level"))
        try sandbox.ok("write", "com.example.watched", "Level", "-int", "3")
        #expect(text.waitForLine("com.example.watched Level = 3"))
        #expect(json.waitForLine(#"{"domain":"com.example.watched","key":"Level","value":3}"#))
        // A change by someone else: Python rewrites the file.
        try sandbox.runPython(
            """
            import plistlib, os
            p = '\(sandbox.file("com.example.watched.plist"))'
            d = plistlib.load(open(p, 'rb')); d['Level'] = [1, 'x']; del d['Existing']
            plistlib.dump(d, open(p + '.tmp', 'wb')); os.rename(p + '.tmp', p)
            """)
        #expect(text.waitForLine("com.example.watched Level = ( 1, x )"))
        #expect(text.waitForLine("com.example.watched Existing removed"))
        #expect(json.waitForLine(#"{"domain":"com.example.watched","key":"Level","value":[1,"x"]}"#))
        try sandbox.ok("delete", "com.example.watched", "Level")
        #expect(json.waitForLine(#"{"domain":"com.example.watched","key":"Level","value":null}"#))
        #expect(text.stop(SIGTERM) == 0)
        #expect(json.stop(SIGINT) == 0)
    }

    // MARK: help

    @Test("help and completion scripts")
    func help() throws {
        let sandbox = Sandbox()
        let help = try sandbox.ok("help")
        for verb in ["read", "read-type", "write", "rename", "delete", "domains", "find", "import", "export", "watch"] {
            #expect(help.contains(verb), "help lists \(verb)")
        }
        #expect(try sandbox.ok("help", "write").contains("-array-add"))
        #expect(try sandbox.ok("--generate-completion-script", "bash").contains("_defaults"))
    }
}
