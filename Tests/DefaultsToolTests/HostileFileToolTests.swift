import Foundation
import TestProcesses
import Testing

/// `defaults read`, `read-type`, `export` and `write` on every hostile file in `Fuzz/Regressions/`, as the
/// domain and as the global domain: each ends with status 0 or with one `defaults:` line and status 1, never
/// by a signal.
@Suite("The defaults command on hostile files", .blockingWork)
struct HostileFileToolTests {
    static let regressionDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz/Regressions")

    static let files: [String] = {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: regressionDirectory.path)) ?? []
        return names.filter { !$0.hasPrefix(".") }.sorted()
    }()

    @Test("every verb ends with a status, never a signal", arguments: files)
    func hostileFile(_ name: String) throws {
        let sandbox = Sandbox()
        let data = try Data(contentsOf: Self.regressionDirectory.appendingPathComponent(name))
        try data.write(to: URL(fileURLWithPath: sandbox.file("com.example.hostile.plist")))
        try data.write(to: URL(fileURLWithPath: sandbox.file(".GlobalPreferences.plist")))
        let runs: [[String]] = [
            ["read"], ["read", "com.example.hostile"], ["read", "com.example.hostile", "--json"],
            ["read", "-g"], ["read", "com.example.hostile", "When"], ["read-type", "com.example.hostile", "When"],
            ["export", "com.example.hostile", "-"], ["export", "com.example.hostile", "-", "--json"],
            ["find", "other"], ["write", "com.example.hostile", "Added", "-int", "1"],
        ]
        for arguments in runs {
            let result = try sandbox.run(arguments)
            #expect(
                result.status == 0 || result.status == 1,
                "defaults \(arguments.joined(separator: " ")) on \(name): \(result.error)")
            if result.status == 1 {
                #expect(result.error.hasPrefix("defaults: ") && result.error.split(separator: "\n").count == 1)
            }
        }
    }

    @Test("a date beyond any calendar prints, as text and JSON")
    func nanDate() throws {
        let sandbox = Sandbox()
        let data = try Data(contentsOf: Self.regressionDirectory.appendingPathComponent("binary-date-nan.plist"))
        try data.write(to: URL(fileURLWithPath: sandbox.file("com.example.nan.plist")))
        #expect(try sandbox.ok("read", "com.example.nan", "When") == "\"nan seconds since 1970\"\n")
        #expect(try sandbox.ok("read", "com.example.nan", "When", "--json") == "\"nan seconds since 1970\"\n")
        #expect(try sandbox.ok("read", "com.example.nan", "Kept") == "the other keys\n")
        let far = try Data(contentsOf: Self.regressionDirectory.appendingPathComponent("binary-date-year-50000.plist"))
        try far.write(to: URL(fileURLWithPath: sandbox.file("com.example.far.plist")))
        #expect(try sandbox.ok("read", "com.example.far", "When").hasPrefix("\"+50009-06-10 05:20:00 +0000"))
        // Exporting as XML cannot hold it: one line naming the key.
        let export = try sandbox.run(["export", "com.example.far", "-"])
        #expect(export.status == 1 && export.error.contains("When"))
        // Binary files stay binary, so the domain stays writable.
        try sandbox.ok("write", "com.example.far", "Added", "-int", "1")
        #expect(try sandbox.ok("read", "com.example.far", "Added") == "1\n")
    }
}
