import Foundation
import Logging
import LiveDefaultsTesting
import Testing

@testable import LiveDefaults

/// One bad save never takes a running program's settings away: a store keeps serving the last good version
/// of a file that turns unreadable, and a local write merges onto it. On the simulated machine: another
/// program's save is an editor's rename there, and the running store has read it once the machine settles.
@Suite("Last known good: a file that breaks under a running store")
struct LastKnownGoodTests {
    static let domain = "com.example.lkg"
    static let broken = "<?xml version=\"1.0\"?><plist><dict><key>RateLimit</key><integer>50</integer>"

    struct Running {
        let machine = SimulatedMachine(seed: 64)
        let errors = Lock<[DefaultsError]>([])
        let log = LogRecorder()
        let defaults: Defaults
        var path: String { machine.path(ofDomain: LastKnownGoodTests.domain) }

        init() throws {
            machine.write(
                try PropertyList.dictionary(["RateLimit": 100, "Banner": "hello"]).encoded(),
                to: machine.path(ofDomain: LastKnownGoodTests.domain))
            machine.settleNow()
            var configuration = machine.process("server").configuration(applicationDomain: LastKnownGoodTests.domain)
            configuration.errorHandler = { [errors] error in errors.withLock { $0.append(error) } }
            configuration.logger = log.logger
            defaults = try machine.process("server").defaults(configuration: configuration)
        }

        /// Another program saves `text` as the file (temporary file + rename, as editors do); the machine settles
        /// and the store's reports are delivered.
        func save(_ text: String) async {
            machine.write(Data(text.utf8), to: path, as: .editor)
            await machine.settle()
            defaults.reportsDelivered()
        }

        /// The file's keys and values on the machine's disk.
        var disk: [String: PropertyList] {
            guard let data = machine.contents(atPath: path),
                case .dictionary(let contents) = try? PropertyList.decode(data).value
            else { return [:] }
            return contents
        }
    }

    @Test("A typo keeps every value, reports once (handler, lastError, notice naming file and error)")
    func typoKeepsValues() async throws {
        let running = try Running()
        #expect(running.defaults.integer(forKey: "RateLimit") == 100)
        let changes = Recorder(running.defaults.changes())
        await running.save(Self.broken)
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
        // Each broken version saved is reported once, and read again it is not reported again.
        await running.save(Self.broken + " ")
        await running.save(Self.broken)
        #expect(running.errors.withLock { $0 }.count == 3)
        running.defaults.synchronize()
        #expect(running.errors.withLock { $0 }.count == 3, "the same version read again: no new report")
        #expect(running.defaults.integer(forKey: "RateLimit") == 100)
        // The fixed file is an ordinary change: only the key that differs is reported.
        await running.save(try SearchListTests.xml(["RateLimit": 50, "Banner": "hello"]))
        #expect(running.defaults.integer(forKey: "RateLimit") == 50)
        #expect(await changes.waitFor { $0.key == "RateLimit" && $0.newValue == 50 })
        let seen = changes.all
        #expect(!seen.contains { $0.key == "Banner" }, "Banner never changed: \(seen)")
        #expect(!seen.contains { $0.key == "RateLimit" && $0.newValue == nil }, "never reported removed: \(seen)")
    }

    @Test("A file that turns into an array is served from the last good version too")
    func notADictionaryKeepsValues() async throws {
        let running = try Running()
        #expect(running.defaults.string(forKey: "Banner") == "hello")
        await running.save(try PersistenceTests.xml(["a", "list"]))
        #expect(running.errors.withLock { $0 }.first?.code == .notADictionary)
        #expect(running.errors.withLock { $0 }.first?.keepsLastKnownGood == true)
        #expect(running.defaults.string(forKey: "Banner") == "hello")
    }

    @Test("A local write while the file is broken merges onto the last good version: no key lost from disk")
    func writeMergesOntoLastGood() async throws {
        let running = try Running()
        #expect(running.defaults.integer(forKey: "RateLimit") == 100)
        await running.save(Self.broken)
        #expect(!running.errors.withLock { $0 }.isEmpty)
        running.defaults.set("added", forKey: "Extra")
        #expect(running.defaults.synchronize())
        #expect(running.disk == ["Banner": "hello", "Extra": "added", "RateLimit": 100])
        let kept = running.machine.names(in: running.machine.userDirectory)
            .filter { $0.hasPrefix("\(Self.domain).plist.corrupt-") }
        #expect(kept.count == 1)
        #expect(
            kept.first.flatMap { running.machine.contents(atPath: "\(running.machine.userDirectory)/\($0)") }
                == Data(Self.broken.utf8))
        // A second process that opens the domain now reads all three keys.
        let other = try #require(running.machine.process("other").defaults(suiteName: Self.domain))
        #expect(other.integer(forKey: "RateLimit") == 100 && other.string(forKey: "Extra") == "added")
    }

    @Test("A write by another process that had read the good version keeps the other keys too")
    func writeByAnotherProcess() async throws {
        let running = try Running()
        // The other process opens the good file; the file breaks; the other process writes one key.
        let other = try #require(running.machine.process("helper").defaults(suiteName: Self.domain))
        #expect(other.integer(forKey: "RateLimit") == 100)
        await running.save(Self.broken)
        other.set("yes", forKey: "FromHelper")
        #expect(other.synchronize())
        #expect(running.disk == ["Banner": "hello", "FromHelper": "yes", "RateLimit": 100])
    }

    @Test("A process that opens an already broken file has no good version: the layer reads as empty")
    func brokenFromTheStart() async throws {
        let machine = SimulatedMachine(seed: 65)
        machine.write(Data(Self.broken.utf8), to: machine.path(ofDomain: Self.domain))
        await machine.settle()
        let errors = Lock<[DefaultsError]>([])
        var configuration = machine.process("late").configuration(applicationDomain: Self.domain)
        configuration.errorHandler = { error in errors.withLock { $0.append(error) } }
        let defaults = try machine.process("late").defaults(configuration: configuration)
        #expect(defaults.object(forKey: "RateLimit") == nil)
        #expect(errors.withLock { $0 }.first?.keepsLastKnownGood == false)
        #expect("\(errors.withLock { $0 }.first.map { "\($0)" } ?? "")".contains("reads as empty"))
    }
}
