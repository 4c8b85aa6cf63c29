import Foundation
import LiveDefaults
import LiveDefaultsTesting
import Testing

/// Temporary changes (`transaction(for:)`, `defaults write --for`): undone at their expiry in the file, by
/// whichever process has the domain open, or before the first read of the next one that opens it; a key changed
/// meanwhile keeps the newer value; a crash or a power loss anywhere never loses the revert nor applies it twice.
@Suite("Temporary changes that undo themselves")
struct TemporaryChangeTests {
    static let domain = "com.example.temporary"
    static let thirtyMinutes = Duration.seconds(30 * 60)
    static var filePath: String { "/home/user/.config/\(domain).plist" }

    /// A machine whose domain holds RateLimit 100 and Mode "normal", written by `ops`.
    static func machine(seed: UInt64) throws -> (SimulatedMachine, Defaults) {
        let machine = SimulatedMachine(seed: seed)
        let ops = try #require(machine.process("ops").defaults(suiteName: domain))
        ops.set(100, forKey: "RateLimit")
        ops.set("normal", forKey: "Mode")
        try ops.trySynchronize()
        return (machine, ops)
    }

    /// The change the tests make: RateLimit halved, Debug added, Mode removed, for thirty minutes.
    static func makeTemporaryChange(_ defaults: Defaults, reason: String? = "incident 4521") throws {
        try defaults.transaction(for: thirtyMinutes, reason: reason) { transaction in
            transaction.set(50, forKey: "RateLimit")
            transaction.set(true, forKey: "Debug")
            transaction.removeObject(forKey: "Mode")
        }
    }

    /// The log's changes written as reverts (their reason says so), newest first.
    static func reverts(_ defaults: Defaults) -> [LoggedChange] {
        defaults.loggedChanges(inDomain: domain).filter { $0.reason?.hasPrefix("temporary change expired") == true }
    }

    @Test("undone at its expiry in every process that has the domain open, written once; a key changed meanwhile stays")
    func undoneAtExpiry() async throws {
        let (machine, ops) = try Self.machine(seed: 1)
        let server = try #require(machine.process("server").defaults(suiteName: Self.domain))
        #expect(server.integer(forKey: "RateLimit") == 100)
        try Self.makeTemporaryChange(ops)
        await machine.settle()
        #expect(server.integer(forKey: "RateLimit") == 50)
        #expect(server.bool(forKey: "Debug"))
        #expect(server.object(forKey: "Mode") == nil)
        let pending = try server.pendingReverts()
        #expect(pending.count == 1)
        #expect(pending.first?.reason == "incident 4521")
        #expect(pending.first?.keys["RateLimit"]?.before == .integer(100))
        #expect(pending.first?.keys["RateLimit"]?.set == .integer(50))
        #expect(pending.first?.keys["Debug"]?.before == nil)
        #expect(pending.first?.keys["Debug"]?.set == .bool(true))
        #expect(pending.first?.keys["Mode"]?.before == .string("normal"))
        #expect(pending.first?.keys["Mode"]?.set == nil)
        #expect(pending.first.map { $0.expiry.timeIntervalSince($0.made) } == 1800)

        // Someone changes Debug before the expiry: the newer change wins, for that key only.
        server.set(false, forKey: "Debug")
        try server.trySynchronize()
        await machine.advance(by: .seconds(29 * 60))
        #expect(server.integer(forKey: "RateLimit") == 50)
        await machine.advance(by: .seconds(61))
        for defaults in [ops, server] {
            #expect(defaults.integer(forKey: "RateLimit") == 100)
            #expect(defaults.string(forKey: "Mode") == "normal")
            #expect(defaults.object(forKey: "Debug") as? Bool == false)
        }
        // In the file, for every reader.
        let data = try #require(machine.contents(atPath: Self.filePath))
        let file = try PropertyList.decode(data).value
        #expect(file == ["RateLimit": 100, "Mode": "normal", "Debug": false])
        #expect(try server.pendingReverts().isEmpty)
        // Both processes scheduled it; one version undid it, logged with the change's reason.
        let reverts = Self.reverts(server)
        #expect(Set(reverts.map(\.key)) == ["RateLimit", "Mode"])
        #expect(Set(reverts.map(\.version)).count == 1)
        #expect(reverts.first?.reason == "temporary change expired: incident 4521")
    }

    @Test("a domain nobody had open is undone before the first read of the next process that opens it")
    func undoneOnOpen() async throws {
        let (machine, ops) = try Self.machine(seed: 2)
        try Self.makeTemporaryChange(ops, reason: nil)
        machine.process("ops").crash()
        await machine.advance(by: .seconds(31 * 60))
        // Nobody had the domain open: the file still holds the change.
        let stale = try PropertyList.decode(try #require(machine.contents(atPath: Self.filePath))).value
        #expect(stale == ["RateLimit": 50, "Debug": true])
        // The first read of the next process is already the value before.
        let late = try #require(machine.process("late").defaults(suiteName: Self.domain))
        #expect(late.integer(forKey: "RateLimit") == 100)
        #expect(late.string(forKey: "Mode") == "normal")
        #expect(late.object(forKey: "Debug") == nil)
        #expect(Self.reverts(late).first?.reason?.hasPrefix("temporary change expired (version ") == true)
        #expect(try late.pendingReverts().isEmpty)
    }

    @Test("two temporary changes of one key undo in turn; one not yet expired is kept")
    func nested() async throws {
        let (machine, ops) = try Self.machine(seed: 3)
        try ops.transaction(for: .seconds(3600)) { $0.set(50, forKey: "RateLimit") }
        try ops.transaction(for: .seconds(600)) { $0.set(10, forKey: "RateLimit") }
        #expect(try ops.pendingReverts().count == 2)
        await machine.advance(by: .seconds(601))
        #expect(ops.integer(forKey: "RateLimit") == 50)
        #expect(try ops.pendingReverts().count == 1)
        await machine.advance(by: .seconds(3000))
        #expect(ops.integer(forKey: "RateLimit") == 100)
        #expect(try ops.pendingReverts().isEmpty)
    }

    @Test("a crash at any file-system call of the change: after the expiry every reader has the value before")
    func crashDuringChange() async throws {
        try await atEveryFileSystemCall("the change") { call in
            let (machine, _) = try Self.machine(seed: UInt64(100 + call))
            let writer = machine.process("writer")
            let defaults = try #require(writer.defaults(suiteName: Self.domain))
            let acknowledged = writer.crash(atFileSystemCall: call) {
                (try? Self.makeTemporaryChange(defaults)) != nil
            }
            await machine.advance(by: .seconds(31 * 60))
            let reader = try #require(machine.process("reader").defaults(suiteName: Self.domain))
            #expect(reader.integer(forKey: "RateLimit") == 100, "crash at call \(call)")
            #expect(reader.string(forKey: "Mode") == "normal", "crash at call \(call)")
            #expect(try reader.pendingReverts().isEmpty, "crash at call \(call)")
            // At most one version undid it (none when the change never landed).
            #expect(Set(Self.reverts(reader).map(\.version)).count <= 1, "crash at call \(call)")
            return acknowledged
        }
    }

    @Test("a crash at any file-system call of the revert: the next process applies it, once")
    func crashDuringRevert() async throws {
        try await atEveryFileSystemCall("the revert") { call in
            let (machine, ops) = try Self.machine(seed: UInt64(300 + call))
            try Self.makeTemporaryChange(ops)
            machine.process("ops").crash()
            await machine.advance(by: .seconds(31 * 60))
            let first = machine.process("first")
            let reverted = first.crash(atFileSystemCall: call) {
                first.defaults(suiteName: Self.domain)?.integer(forKey: "RateLimit") == 100
            }
            let pendingFile = "/home/user/.config/.\(Self.domain).plist.reverts"
            // The whole revert, its entry dropped, came before the call the crash was set at: every call was met.
            let completed = reverted && machine.contents(atPath: pendingFile) == nil
            await machine.settle()
            let next = try #require(machine.process("next").defaults(suiteName: Self.domain))
            #expect(next.integer(forKey: "RateLimit") == 100, "crash at call \(call)")
            #expect(next.string(forKey: "Mode") == "normal", "crash at call \(call)")
            #expect(next.object(forKey: "Debug") == nil, "crash at call \(call)")
            #expect(try next.pendingReverts().isEmpty, "crash at call \(call)")
            // One revert version whoever wrote it, never two: RateLimit set, halved, back — logged with the change's
            // reason even when its writer stopped between its rename and its entry (the intent it left says why).
            #expect(next.loggedChanges(inDomain: Self.domain, key: "RateLimit").count == 3, "crash at call \(call)")
            #expect(Set(Self.reverts(next).map(\.version)).count == 1, "crash at call \(call)")
            #expect(machine.contents(atPath: pendingFile) == nil, "crash at call \(call)")
            return completed
        }
    }

    @Test("a revert whose write fails (a full disk at any of its calls) is tried again and lands")
    func failedRevertRetried() async throws {
        var failedAtLeastOnce = false
        for call in 1...40 {
            let (machine, ops) = try Self.machine(seed: UInt64(500 + call))
            let serverProcess = machine.process("server")
            let server = try #require(serverProcess.defaults(suiteName: Self.domain))
            #expect(server.integer(forKey: "RateLimit") == 100)
            try ops.transaction(for: .seconds(60)) { $0.set(50, forKey: "RateLimit") }
            await machine.settle()
            machine.process("ops").crash()
            // Only the server has the domain open: its timer's revert meets the fault.
            serverProcess.failingFileSystemCall(call, errno: ENOSPC) { machine.advanceNow(by: .seconds(61)) }
            if server.integer(forKey: "RateLimit") == 50 { failedAtLeastOnce = true }
            await machine.advance(by: .seconds(11))
            #expect(server.integer(forKey: "RateLimit") == 100, "fault at call \(call)")
            #expect(try server.pendingReverts().isEmpty, "fault at call \(call)")
        }
        // Some fault fell on the revert's write itself (else the test would not test the retry).
        #expect(failedAtLeastOnce)
    }

    @Test("a power loss after the acknowledged change keeps its revert")
    func powerLossKeepsRevert() async throws {
        let (machine, ops) = try Self.machine(seed: 4)
        try Self.makeTemporaryChange(ops)
        machine.powerLoss()
        let after = try #require(machine.process("after").defaults(suiteName: Self.domain))
        #expect(after.integer(forKey: "RateLimit") == 50)
        #expect(try after.pendingReverts().count == 1)
        await machine.advance(by: .seconds(31 * 60))
        #expect(after.integer(forKey: "RateLimit") == 100)
    }

    @Test("unreadable pending reverts: reported, left as they are; a temporary change is refused, a plain one lands")
    func unreadablePendingReverts() async throws {
        let (machine, ops) = try Self.machine(seed: 5)
        let pendingFile = "/home/user/.config/.\(Self.domain).plist.reverts"
        machine.write(Data("not a list".utf8), to: pendingFile)
        await machine.settle()
        #expect(throws: DefaultsError.self) { try ops.pendingReverts() }
        let refused = #expect(throws: DefaultsError.self) { try Self.makeTemporaryChange(ops) }
        #expect(refused?.code == .writeFailed)
        #expect(refused?.description.contains("pending reverts") == true)
        #expect(ops.integer(forKey: "RateLimit") == 100)
        try ops.transaction { $0.set(7, forKey: "RateLimit") }
        #expect(ops.integer(forKey: "RateLimit") == 7)
        #expect(machine.contents(atPath: pendingFile) == Data("not a list".utf8))
    }
}
