import ArgumentParser
import DefaultsToolSupport
import Foundation
import Testing

@testable import DefaultsTool
@testable import LiveDefaults

/// `--wait`'s roll back of a refused version (``WaitOptions/putBack(_:over:in:reason:)``), on a domain given by
/// its path in the test's own directory: one change, logged with its reason, and never over a change another
/// writer made after the version it rolls back.
@Suite("--wait rolls back a refused version, never over another writer's change")
struct RollBackTests {
    let directory = Sandbox()
    var path: String { directory.file("com.example.rollback.plist") }

    func store() throws -> ToolStore {
        try DomainTarget(path, host: HostOptions.parse([])).store()
    }

    @Test("the version before comes back whole, as one change logged with the reason")
    func rollsBack() throws {
        let tool = try store()
        try tool.replace(with: ["MinPool": 5, "MaxPool": 40, "Banner": "kept"])
        try tool.commit()
        let before = try #require(try tool.contents())
        try tool.replace(with: ["MinPool": 10, "MaxPool": 60])
        try tool.commit()
        let refused = tool.defaults.heldVersion(inDomain: tool.target.name, layer: tool.target.layer)
        _ = try WaitOptions.putBack(before, over: refused, in: tool, reason: "rolled back: 42 server refused it")
        #expect(try store().contents() == before)
        let log = ChangeLog.read(at: ChangeLog.path(forDomainFile: path))
        #expect(log.entries.last?.reason == "rolled back: 42 server refused it")
        #expect(Set(log.entries.last?.changes.map(\.key) ?? []) == ["MinPool", "MaxPool", "Banner"])
        #expect(log.entries.dropLast().allSatisfy { $0.reason == nil }, "only the roll back has a reason")
    }

    @Test("a change another writer made after the refused version: nothing is written")
    func neverOverAnotherChange() throws {
        let tool = try store()
        try tool.replace(with: ["MinPool": 5, "MaxPool": 40])
        try tool.commit()
        let before = try #require(try tool.contents())
        try tool.set(60, forKey: "MaxPool")
        try tool.commit()
        let refused = tool.defaults.heldVersion(inDomain: tool.target.name, layer: tool.target.layer)
        // Another process changes the domain after the refused version was written.
        let other = DomainFile(path: path)
        try other.set(45, forKey: "MaxPool")
        try other.commit()
        let error = #expect(throws: ToolError.self) {
            _ = try WaitOptions.putBack(before, over: refused, in: tool, reason: "rolled back: test")
        }
        #expect(
            error?.description.contains("changed while it was being rolled back") == true,
            "\(String(describing: error))")
        #expect(try store().contents() == ["MinPool": 5, "MaxPool": 45], "the other writer's change stands")
    }
}
