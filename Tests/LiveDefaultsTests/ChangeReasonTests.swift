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
        try await atEveryFileSystemCall("the change") { call in
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
            return acknowledged
        }
    }
}

/// The reasons the fleet agent sends with the values it pushes (`Defaults.reasons(forValues:ofVersion:inDomain:)`):
/// each key's value has the reason of the version that set it, never one of a version that did not.
@Suite("Why a key holds its value, as the change log says")
struct ChangeReasonLookupTests {
    static let domain = "com.example.reason-lookup"
    static let path = "/home/user/.config/\(domain).plist"

    /// The reasons `defaults` finds for its own values of `keys`, in the version it holds.
    static func reasons(_ defaults: Defaults, _ keys: [String]) -> [String: String] {
        let contents = defaults.persistentDomainValues(forName: domain) ?? [:]
        return defaults.reasons(
            forValues: Dictionary(uniqueKeysWithValues: keys.map { ($0, contents[$0]) }),
            ofVersion: defaults.heldVersion(inDomain: domain), inDomain: domain)
    }

    @Test("each key's value has the reason of the latest version that set it; a version without one gives none")
    func logged() async throws {
        let machine = SimulatedMachine(seed: 80)
        let ops = try #require(machine.process("ops").defaults(suiteName: Self.domain))
        try ops.transaction(reason: "first") {
            $0.set(1, forKey: "A"); $0.set(1, forKey: "B")
        }
        try ops.transaction(reason: "second") {
            $0.set(2, forKey: "B"); $0.removeObject(forKey: "A")
        }
        try ops.transaction { $0.set(3, forKey: "C") }
        await machine.settle()
        let agent = try #require(machine.process("agent").defaults(suiteName: Self.domain))
        #expect(Self.reasons(agent, ["A", "B", "C", "Never"]) == ["A": "second", "B": "second"])
        // A value its version did not set (the caller's values are not that version's) has none.
        #expect(
            agent.reasons(
                forValues: ["B": 7, "A": nil], ofVersion: agent.heldVersion(inDomain: Self.domain),
                inDomain: Self.domain) == ["A": "second"])
    }

    @Test("a version renamed into place whose entry is not written yet: its intent's reason, for the keys it set")
    func announced() async throws {
        // The writer stopped at each call of its transaction in turn, until one stop leaves its version in place and
        // the log ending with its intent (the call that appends its entry).
        try await atEveryFileSystemCall("a stop that leaves the version in place before its entry") { call in
            let machine = SimulatedMachine(seed: UInt64(600 + call))
            let ops = try #require(machine.process("ops").defaults(suiteName: Self.domain))
            try ops.transaction(reason: "before") {
                $0.set(1, forKey: "A"); $0.set(1, forKey: "B")
            }
            await machine.settle()
            let writer = machine.process("writer")
            let defaults = try #require(writer.defaults(suiteName: Self.domain))
            let returned = writer.crash(atFileSystemCall: call) {
                do {
                    try defaults.transaction(reason: "incident") {
                        $0.set(2, forKey: "B"); $0.set(2, forKey: "New")
                    }
                    return true
                } catch { return false }
            }
            let log = machine.contents(atPath: "/home/user/.config/.\(Self.domain).plist.log") ?? Data()
            let lastLine = String(decoding: log, as: UTF8.self).split(separator: "\n").last ?? ""
            if lastLine.hasPrefix("{\"intent\""), returned {
                let agent = try #require(machine.process("agent").defaults(suiteName: Self.domain))
                #expect(agent.integer(forKey: "New") == 2)
                #expect(Self.reasons(agent, ["A", "B", "New"]) == ["A": "before", "B": "incident", "New": "incident"])
                // Once the agent's records queue logged the version from the intent, the entry says the same.
                await machine.settle()
                #expect(agent.loggedChanges(inDomain: Self.domain).first?.reason == "incident")
                #expect(Self.reasons(agent, ["A", "B", "New"]) == ["A": "before", "B": "incident", "New": "incident"])
                return true
            }
            return false
        }
    }

    @Test("a version no LiveDefaults writer made: the keys it changed have no reason, the others keep theirs")
    func external() async throws {
        let machine = SimulatedMachine(seed: 82)
        let ops = try #require(machine.process("ops").defaults(suiteName: Self.domain))
        try ops.transaction(reason: "set up") {
            $0.set(1, forKey: "A"); $0.set(1, forKey: "B")
        }
        await machine.settle()
        // Nobody has the domain open when an editor changes B: the log does not know its version yet.
        machine.process("ops").crash()
        machine.write(try PropertyList.dictionary(["A": 1, "B": 5]).encoded(as: .xml), to: Self.path, as: .editor)
        await machine.settle()
        let agent = try #require(machine.process("agent").defaults(suiteName: Self.domain))
        #expect(agent.integer(forKey: "B") == 5)
        #expect(Self.reasons(agent, ["A", "B"]) == ["A": "set up"])
        // Recorded since (by the agent, as external): the same.
        await machine.settle()
        #expect(Self.reasons(agent, ["A", "B"]) == ["A": "set up"])
    }

    @Test("a key last changed far back in a long log is found past the log's end")
    func longLog() async throws {
        let machine = SimulatedMachine(seed: 83)
        let ops = try #require(machine.process("ops").defaults(suiteName: Self.domain))
        try ops.transaction(reason: "long ago") { $0.set(1, forKey: "Old") }
        let padding = String(repeating: "x", count: 900)
        for index in 0..<100 {
            try ops.transaction(reason: "busy \(index)") { $0.set("\(padding)\(index)", forKey: "Busy") }
        }
        await machine.settle()
        let log = try #require(machine.contents(atPath: "/home/user/.config/.\(Self.domain).plist.log"))
        #expect(log.count > 8 * (8 << 10))
        let agent = try #require(machine.process("agent").defaults(suiteName: Self.domain))
        #expect(Self.reasons(agent, ["Old", "Busy"]) == ["Old": "long ago", "Busy": "busy 99"])
    }
}
