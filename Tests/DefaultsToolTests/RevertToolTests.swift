import Foundation
import TestProcesses
import Testing

/// `defaults revert DOMAIN KEY [--to VERSION]` as a process: the earlier value written back as a new, attributed
/// change, and every case the log cannot answer refused with nothing written.
@Suite("defaults revert: a key's earlier value, written back", .blockingWork)
struct RevertToolTests {
    static let domain = "com.example.revert"

    @Test("the value before the latest change comes back as a new change, logged with its reason; and revertable")
    func revertLatest() throws {
        let sandbox = Sandbox()
        try sandbox.ok("write", Self.domain, "RateLimit", "-int", "100")
        try sandbox.ok("write", Self.domain, "RateLimit", "-int", "50", "--reason", "incident 4211")
        let output = try sandbox.ok("revert", Self.domain, "RateLimit", "--reason", "incident 4211 over")
        #expect(output.hasPrefix("RateLimit is 100 again (its value before its change in version "), "\(output)")
        #expect(try sandbox.ok("read", Self.domain, "RateLimit") == "100\n")
        let changes = try ChangeLogToolTests.logged(sandbox, Self.domain)
        #expect(changes.count == 3)
        #expect(changes[0]["reason"] as? String == "incident 4211 over" && changes[0]["new"] as? Int == 100)
        #expect(changes[0]["executable"] as? String == "defaults")
        // A revert is a change like any other: reverted, the key holds 50 again; with no reason, the log says
        // which version it went back before.
        try sandbox.ok("revert", Self.domain, "RateLimit")
        #expect(try sandbox.ok("read", Self.domain, "RateLimit") == "50\n")
        let latest = try #require(try ChangeLogToolTests.logged(sandbox, Self.domain).first)
        let undone = try #require(changes[0]["version"] as? String)
        let expected = "defaults revert: RateLimit back to its value before its change in version \(undone)"
        #expect(latest["reason"] as? String == expected)
        // A key created by its latest change is removed again.
        try sandbox.ok("write", Self.domain, "Debug", "-bool", "true")
        try sandbox.ok("revert", Self.domain, "Debug")
        #expect(try sandbox.run("read", Self.domain, "Debug").status == 1)
    }

    @Test("--to VERSION: the key's value in that version; a key absent then is removed; the same value writes nothing")
    func revertToVersion() throws {
        let sandbox = Sandbox()
        try sandbox.ok("write", Self.domain, "Pool", "-int", "10")
        try sandbox.ok("write", Self.domain, "Pool", "-int", "20")
        try sandbox.ok("write", Self.domain, "Other", "x")
        try sandbox.ok("write", Self.domain, "Pool", "-int", "30")
        let changes = try ChangeLogToolTests.logged(sandbox, Self.domain)
        let versions = changes.compactMap { $0["version"] as? String }
        // Newest first: Pool 30, Other x, Pool 20, Pool 10. In Other's version Pool was 20.
        #expect(try sandbox.ok("revert", Self.domain, "Pool", "--to", versions[1]).hasPrefix("Pool is 20 again"))
        #expect(try sandbox.ok("read", Self.domain, "Pool") == "20\n")
        #expect(try sandbox.ok("revert", Self.domain, "Pool", "--to", versions[1]).hasPrefix("Pool already is 20"))
        // Before Other existed, it was absent: reverting it to the first version removes it.
        try sandbox.ok("revert", Self.domain, "Other", "--to", versions[3])
        #expect(try sandbox.run("read", Self.domain, "Other").status == 1)
        #expect(try ChangeLogToolTests.logged(sandbox, Self.domain).count == 6)
    }

    @Test(
        "refused, nothing written: no logged change, an unknown version, a value logged by size, an unknown value, the schema"
    )
    func refusals() throws {
        let sandbox = Sandbox()
        let unchanged = { () throws -> Int in try ChangeLogToolTests.logged(sandbox, Self.domain).count }
        try sandbox.ok("write", Self.domain, "Small", "-int", "1")
        let none = try sandbox.run("revert", Self.domain, "Missing")
        #expect(none.status == 1 && none.error.contains("the change log holds no change of Missing"), "\(none.error)")
        let unknown = try sandbox.run("revert", Self.domain, "Small", "--to", "0123456789abcdef")
        #expect(unknown.status == 1 && unknown.error.contains("holds no version 0123456789abcdef"), "\(unknown.error)")
        let malformed = try sandbox.run("revert", Self.domain, "Small", "--to", "latest")
        #expect(malformed.status != 0 && malformed.error.contains("16 hex digits"), "\(malformed.error)")
        // A value over 1 KiB is logged as its type and size: it cannot be written back.
        try sandbox.ok("write", Self.domain, "Large", String(repeating: "x", count: 2_000))
        try sandbox.ok("write", Self.domain, "Large", "short")
        let large = try sandbox.run("revert", Self.domain, "Large")
        #expect(large.status == 1 && large.error.contains("only as its type and size"), "\(large.error)")
        #expect(try sandbox.ok("read", Self.domain, "Large") == "short\n")
        // Another writer's change seen by no LiveDefaults process: its old value is unknown.
        let count = try unchanged()
        try sandbox.runPython(
            """
            import plistlib
            path = '\(sandbox.file("\(Self.domain).plist"))'
            data = plistlib.load(open(path, 'rb')); data['Small'] = 7
            plistlib.dump(data, open(path + '.new', 'wb')); import os; os.replace(path + '.new', path)
            """)
        #expect(try sandbox.ok("read", Self.domain, "Small") == "7\n")
        #expect(try unchanged() == count + 1)
        // The external change recorded the old value 1 from the log's last version: it can be reverted.
        #expect(try sandbox.ok("revert", Self.domain, "Small").hasPrefix("Small is 1 again"))
        // An old value nobody held (the log's last entry made into an external change whose old value is
        // unknown, as a process that noticed it without the value before records it): refused.
        try sandbox.ok("write", Self.domain, "Small", "-int", "3")
        try sandbox.runPython(
            """
            import json
            path = '\(sandbox.file(".\(Self.domain).plist.log"))'
            lines = open(path).read().splitlines()
            entry = json.loads(lines[-1])
            entry['origin'] = 'external'; del entry['writer']
            entry['changes'][0]['old'] = {'unknown': True}
            lines[-1] = json.dumps(entry)
            open(path, 'w').write('\\n'.join(lines) + '\\n')
            """)
        let nobody = try sandbox.run("revert", Self.domain, "Small")
        #expect(nobody.status == 1 && nobody.error.contains("nobody recorded Small's value"), "\(nobody.error)")
        #expect(try sandbox.ok("read", Self.domain, "Small") == "3\n")
        // The schema refuses the value going back: nothing written; --no-validate writes it.
        let published = try SchemaToolTests().published()
        try published.ok("write", "--no-validate", "com.example.api", "RateLimit", "-int", "0")
        try published.ok("write", "com.example.api", "RateLimit", "-int", "250")
        let refused = try published.run("revert", "com.example.api", "RateLimit")
        #expect(refused.status == 1 && refused.error.contains("is out of range"), "\(refused.error)")
        #expect(try published.ok("read", "com.example.api", "RateLimit") == "250\n")
        #expect(try published.run("revert", "--no-validate", "com.example.api", "RateLimit").status == 0)
        #expect(try published.ok("read", "com.example.api", "RateLimit") == "0\n")
    }
}
