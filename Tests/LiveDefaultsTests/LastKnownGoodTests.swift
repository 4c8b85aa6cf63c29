import Foundation
import Logging
import PlistOracle
import TestProcesses
import Testing

@testable import LiveDefaults

/// One bad save never takes a running program's settings away: a store keeps serving the last good version
/// of a file that turns unreadable, and a local write merges onto it.
@Suite("Last known good: a file that breaks under a running store", .blockingWork)
struct LastKnownGoodTests {
    static let domain = "com.example.lkg"
    static let broken = "<?xml version=\"1.0\"?><plist><dict><key>RateLimit</key><integer>50</integer>"

    struct Running {
        let directory = TemporaryDirectory()
        let errors = Lock<[DefaultsError]>([])
        let log = LogRecorder()
        let defaults: Defaults
        var path: String { directory.file("\(LastKnownGoodTests.domain).plist") }

        init() throws {
            try directory.write(
                "\(LastKnownGoodTests.domain).plist", try SearchListTests.xml(["RateLimit": 100, "Banner": "hello"]))
            var configuration = Defaults.Configuration.rooted(
                at: directory.path, applicationDomain: LastKnownGoodTests.domain)
            configuration.errorHandler = { [errors] error in errors.withLock { $0.append(error) } }
            configuration.logger = log.logger
            defaults = try Defaults(configuration: configuration)
        }

        /// Another process saves `text` as the file (temp file + rename, as editors do).
        func save(_ text: String) throws {
            try PersistenceTests.python(
                """
                import os
                p = '\(path)'
                open(p + '.tmp', 'wb').write(\(WatcherTests.pythonBytes(text)))
                os.rename(p + '.tmp', p)
                """)
        }
    }

    @Test("A typo keeps every value, reports once (handler, lastError, notice naming file and error)")
    func typoKeepsValues() async throws {
        let running = try Running()
        #expect(running.defaults.integer(forKey: "RateLimit") == 100)
        let changes = Recorder(running.defaults.changes())
        try running.save(Self.broken)
        #expect(await eventually { !running.errors.withLock { $0 }.isEmpty })
        let reported = running.errors.withLock { $0 }
        #expect(reported.count == 1)
        #expect(reported.first?.code == .corruptFile)
        #expect(reported.first?.keepsLastKnownGood == true)
        #expect(reported.first?.path == running.path)
        #expect(running.defaults.lastError == reported.first)
        let notices = running.log.entries.filter { $0.level == .notice }
        #expect(notices.count == 1)
        #expect(
            notices.first.map { $0.message.contains(running.path) && $0.message.contains("last known good") } == true)
        #expect(
            notices.first?.message.contains("missing </dict>") == true,
            "the parse error is named: \(notices.first?.message ?? "")")
        // Still serving the last good version.
        #expect(running.defaults.integer(forKey: "RateLimit") == 100)
        #expect(running.defaults.string(forKey: "Banner") == "hello")
        // Touching the broken file again (same bytes, new inode) reports nothing more.
        try running.save(Self.broken + " ")
        try running.save(Self.broken)
        running.defaults.synchronize()
        #expect(running.defaults.integer(forKey: "RateLimit") == 100)
        // The fixed file is an ordinary change: only the key that differs is reported.
        try running.save(try SearchListTests.xml(["RateLimit": 50, "Banner": "hello"]))
        #expect(await waitForValue(running.defaults, "RateLimit") { $0 == 50 })
        let seen = changes.all
        #expect(!seen.contains { $0.key == "Banner" }, "Banner never changed: \(seen)")
        #expect(!seen.contains { $0.key == "RateLimit" && $0.newValue == nil }, "never reported removed: \(seen)")
    }

    @Test("A file that turns into an array is served from the last good version too")
    func notADictionaryKeepsValues() async throws {
        let running = try Running()
        #expect(running.defaults.string(forKey: "Banner") == "hello")
        try running.save(try PersistenceTests.xml(["a", "list"]))
        #expect(await eventually { !running.errors.withLock { $0 }.isEmpty })
        #expect(running.errors.withLock { $0 }.first?.code == .notADictionary)
        #expect(running.errors.withLock { $0 }.first?.keepsLastKnownGood == true)
        #expect(running.defaults.string(forKey: "Banner") == "hello")
    }

    @Test("A local write while the file is broken merges onto the last good version: no key lost from disk")
    func writeMergesOntoLastGood() async throws {
        let running = try Running()
        #expect(running.defaults.integer(forKey: "RateLimit") == 100)
        try running.save(Self.broken)
        #expect(await eventually { !running.errors.withLock { $0 }.isEmpty })
        running.defaults.set("added", forKey: "Extra")
        #expect(running.defaults.synchronize())
        #expect(try pythonPlist(running.path) == #"{"Banner": "hello", "Extra": "added", "RateLimit": 100}"#)
        let kept = try FileManager.default.contentsOfDirectory(atPath: running.directory.path)
            .filter { $0.hasPrefix("\(Self.domain).plist.corrupt-") }
        #expect(kept.count == 1)
        #expect(try String(contentsOfFile: running.directory.file(kept[0]), encoding: .utf8) == Self.broken)
        // A second process that opens the domain now reads all three keys.
        let other = try running.directory.store(Self.domain)
        #expect(other.integer(forKey: "RateLimit") == 100 && other.string(forKey: "Extra") == "added")
    }

    @Test("A write by another process that had read the good version keeps the other keys too")
    func writeByAnotherProcess() async throws {
        let running = try Running()
        // The helper opens the good file, then waits; the file breaks; the helper writes one key.
        let process = try helperProcess(
            ["write-after-input", running.directory.path, Self.domain, "FromHelper", "yes"])
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        _ = output.fileHandleForReading.availableData  // "ready": it has read the good version
        try running.save(Self.broken)
        try input.fileHandleForWriting.write(contentsOf: Data("go\n".utf8))
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect(
            try pythonPlist(running.path) == #"{"Banner": "hello", "FromHelper": "yes", "RateLimit": 100}"#)
    }

    @Test("A process that opens an already broken file has no good version: the layer reads as empty")
    func brokenFromTheStart() throws {
        let directory = TemporaryDirectory()
        try directory.write("\(Self.domain).plist", Self.broken)
        let errors = Lock<[DefaultsError]>([])
        var configuration = Defaults.Configuration.rooted(at: directory.path, applicationDomain: Self.domain)
        configuration.errorHandler = { error in errors.withLock { $0.append(error) } }
        let defaults = try Defaults(configuration: configuration)
        #expect(defaults.object(forKey: "RateLimit") == nil)
        #expect(errors.withLock { $0 }.first?.keepsLastKnownGood == false)
        #expect("\(errors.withLock { $0 }.first!)".contains("reads as empty"))
    }
}
