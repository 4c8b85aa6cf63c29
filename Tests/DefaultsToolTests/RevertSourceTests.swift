import DefaultsToolSupport
import Foundation
import LiveDefaults
import LiveDefaultsTesting
import Testing

/// Where `defaults revert` takes a key's earlier value from (``RevertSource``), on a simulated machine: the value
/// before the key's latest change, or its value in a version the change log names.
@Suite("defaults revert's value, from the change log")
struct RevertSourceTests {
    static let domain = "com.example.revert"

    @Test("before the latest change, and in each version: set, changed, untouched, removed, not yet there")
    func values() async throws {
        let machine = SimulatedMachine(seed: 69)
        let defaults = try #require(machine.process("ops").defaults(suiteName: Self.domain))
        var versions: [DomainVersion] = []
        func commit(_ body: (DefaultsTransaction) -> Void) throws {
            try defaults.transaction { body($0) }
            versions.append(try #require(defaults.versionOnDisk(inDomain: Self.domain)))
        }
        try commit { $0.set(1, forKey: "A") }
        try commit {
            $0.set(2, forKey: "A")
            $0.set("b1", forKey: "B")
        }
        try commit { $0.set("b2", forKey: "B") }
        try commit { $0.removeObject(forKey: "A") }
        await machine.settle()
        let changes = defaults.loggedChanges(inDomain: Self.domain, limit: .max)
        func source(_ key: String, _ index: Int?) throws -> RevertSource {
            try RevertSource(changes: changes, key: key, at: index.map { versions[$0] })
        }

        // Before the latest change: A was removed in the last version, B changed in the third.
        #expect(try source("A", nil).value == .value(2) && source("A", nil).version == versions[3])
        #expect(try source("B", nil).value == .value("b1") && source("B", nil).version == versions[2])
        #expect(try source("A", nil).when == "before its change in version \(versions[3])")
        // In a version: what the key's last change up to it set.
        #expect(try (0..<4).map { try source("A", $0).value } == [.value(1), .value(2), .value(2), .absent])
        #expect(try (0..<4).map { try source("B", $0).value } == [.absent, .value("b1"), .value("b2"), .value("b2")])
        #expect(try source("B", 0).when == "in version \(versions[0])")
        // A key the log holds no change of: nothing to revert to, and unchanged since any version.
        #expect(throws: RevertSource.Problem.noChange(key: "C")) { try source("C", nil) }
        #expect(try source("C", 1).value == nil)
        // A version not in the log.
        let unknown = try #require(DomainVersion("0123456789abcdef"))
        #expect(throws: RevertSource.Problem.versionNotLogged(unknown)) {
            try RevertSource(changes: changes, key: "A", at: unknown)
        }
    }
}
