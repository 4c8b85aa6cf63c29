import Foundation
import LiveDefaults
import LiveDefaultsTesting
import Testing

/// Why a change was made: a transaction's `reason` is recorded with its version in the domain's change log,
/// and every process reading the log sees it, as one line of bounded length.
@Suite("A reason on a change, recorded in the change log")
struct ChangeReasonTests {
    static let domain = "com.example.reasons"

    @Test("a transaction's reason is the reason of its changes, in the log another process reads; a set has none")
    func reasonLogged() async throws {
        let machine = SimulatedMachine(seed: 69)
        let writer = try #require(machine.process("ops").defaults(suiteName: Self.domain))
        let reader = try #require(machine.process("server").defaults(suiteName: Self.domain))
        writer.set(100, forKey: "RateLimit")
        try writer.trySynchronize()
        try writer.transaction(reason: "incident 4211: halve the rate limit") { transaction in
            transaction.set(50, forKey: "RateLimit")
            transaction.set(true, forKey: "Throttled")
        }
        await machine.settle()
        let changes = reader.loggedChanges(inDomain: Self.domain)
        #expect(changes.map(\.key) == ["Throttled", "RateLimit", "RateLimit"])
        #expect(changes.prefix(2).allSatisfy { $0.reason == "incident 4211: halve the rate limit" })
        #expect(changes[2].reason == nil)
        #expect(reader.integer(forKey: "RateLimit") == 50)
    }

    @Test("an edit made inside a reason's attribution keeps it until the background writer writes it, later")
    func reasonKeptByEdits() async throws {
        let machine = SimulatedMachine(seed: 71)
        let defaults = try #require(machine.process("defaults").defaults(suiteName: Self.domain))
        // The edits are made inside the attribution; the machine's background writer writes them after it ended.
        Defaults.attributingWrites(reason: "rename") {
            defaults.set(5, forKey: "New")
            defaults.removeObject(forKey: "Old")
        }
        await machine.settle()
        defaults.set(6, forKey: "New")
        await machine.settle()
        defaults.setPersistentDomain(["Whole": 1], forName: Self.domain)
        Defaults.attributingWrites(reason: "replaced") {
            defaults.setPersistentDomain(["Whole": 2], forName: Self.domain)
        }
        await machine.settle()
        let changes = defaults.loggedChanges(inDomain: Self.domain)
        #expect(changes.map(\.key) == ["Whole", "New", "New", "New"])
        #expect(changes.map(\.reason) == ["replaced", "replaced", nil, "rename"])
    }

    @Test("a reason is one line: control characters become spaces, the space around it goes, a long one is cut")
    func reasonBounded() async throws {
        let machine = SimulatedMachine(seed: 70)
        let defaults = try #require(machine.process("ops").defaults(suiteName: Self.domain))
        try defaults.transaction(reason: "  first line\nsecond\u{1B}[31m line\t ") { $0.set(1, forKey: "A") }
        #expect(defaults.loggedChanges(key: "A").first?.reason == "first line second [31m line")
        // 999 bytes of ASCII then a 4-byte character: cut before the character, never inside it.
        let long = String(repeating: "x", count: 999) + "😀" + String(repeating: "y", count: 10)
        try defaults.transaction(reason: long) { $0.set(2, forKey: "A") }
        #expect(defaults.loggedChanges(key: "A").first?.reason == String(repeating: "x", count: 999))
        // Nothing but space: no reason.
        try defaults.transaction(reason: " \n ") { $0.set(3, forKey: "A") }
        #expect(defaults.loggedChanges(key: "A").first?.reason == nil)
        #expect(defaults.loggedChanges(key: "A").count == 3)
    }

    @Test("a writer stopped at any file-system call of its change: a version that landed is logged with its reason")
    func reasonOfStoppedWriter() async throws {
        var call = 1
        while true {
            let machine = SimulatedMachine(seed: UInt64(500 + call))
            let before = try #require(machine.process("before").defaults(suiteName: Self.domain))
            try before.transaction { $0.set(100, forKey: "RateLimit") }
            let writer = machine.process("ops")
            let defaults = try #require(writer.defaults(suiteName: Self.domain))
            let acknowledged = writer.crash(atFileSystemCall: call) {
                (try? defaults.transaction(reason: "incident 4211") { $0.set(50, forKey: "RateLimit") }) != nil
            }
            await machine.settle()
            let reader = try #require(machine.process("reader").defaults(suiteName: Self.domain))
            let changes = reader.loggedChanges(inDomain: Self.domain)
            if reader.integer(forKey: "RateLimit") == 50 {
                // Landed. The process is killed when its change returns, before its records queue appended the
                // entry: the reader records the version from the intent the writer left, and says why.
                #expect(changes.first?.reason == "incident 4211", "stopped at call \(call)")
                #expect(changes.first?.origin == .local, "stopped at call \(call)")
            } else {
                #expect(changes.map(\.reason) == [nil], "stopped at call \(call)")
            }
            if acknowledged { break }
            call += 1
            try #require(call < 200)
        }
    }
}
