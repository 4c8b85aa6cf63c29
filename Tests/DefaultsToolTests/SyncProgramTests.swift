import Foundation
import TestProcesses
import Testing

/// `defaults sync` is a separate program, `defaults-sync`, that `defaults` runs (the fleet's HTTP stack stays out
/// of `defaults`). What it does against etcd is tested in LiveDefaultsFleetTests; here, how it is found.
@Suite("defaults sync runs defaults-sync", .blockingWork)
struct SyncProgramTests {
    @Test("the verb's options and --help are defaults-sync's, found beside defaults")
    func handsOver() throws {
        let sandbox = Sandbox()
        let help = try sandbox.run("sync", "--help")
        #expect(help.status == 0, "\(help.error)")
        #expect(help.output.contains("defaults sync"))
        #expect(help.output.contains("--etcd"))
        #expect(help.output.contains("--heartbeat"))
        // A missing required option is reported by defaults-sync's own parser.
        let missing = try sandbox.run("sync", "com.example.app")
        #expect(missing.status != 0)
        #expect(missing.error.contains("--etcd"))
        // `defaults --help` still lists the verb.
        #expect(try sandbox.ok("--help").contains("sync"))
    }

    @Test("history and rollback are handed over too, each to its own subcommand of defaults-sync")
    func fleetVerbs() throws {
        let sandbox = Sandbox()
        let history = try sandbox.run("history", "--help")
        #expect(history.status == 0, "\(history.error)")
        #expect(history.output.contains("--limit") && history.output.contains("--etcd"))
        let rollback = try sandbox.run("rollback", "--help")
        #expect(rollback.status == 0, "\(rollback.error)")
        #expect(rollback.output.contains("--to-revision") && rollback.output.contains("--no-validate"))
        // A domain named like a verb is still a domain to sync: `defaults sync history` names the sync verb.
        let named = try sandbox.run("sync", "history")
        #expect(named.status != 0)
        #expect(named.error.contains("--etcd"), "\(named.error)")
        let list = try sandbox.ok("--help")
        #expect(list.contains("history") && list.contains("rollback"))
    }

    @Test("without defaults-sync beside it or on PATH: exit 1 and a message saying how to get it")
    func missingProgram() throws {
        let sandbox = Sandbox()
        let alone = sandbox.file("bin")
        try FileManager.default.createDirectory(atPath: alone, withIntermediateDirectories: true)
        let copy = URL(fileURLWithPath: alone + "/defaults")
        try Sandbox.copyExecutable(toolURL, to: copy.path)
        let result = try Sandbox.execute(
            copy, ["sync", "com.example.app", "--etcd", "http://127.0.0.1:1"],
            environment: sandbox.environment(["PATH": sandbox.file("empty-path")]))
        #expect(result.status == 1)
        #expect(result.error.hasPrefix("defaults: `defaults sync` runs the program defaults-sync"))
        #expect(result.error.contains("beside \(alone)/defaults"))
        #expect(result.error.contains("--traits Fleet"))
        // The other verbs do not need it.
        let write = try Sandbox.execute(
            copy, ["write", "com.example.app", "Key", "value"], environment: sandbox.environment())
        #expect(write.status == 0, "\(write.error)")
    }

    @Test("found on PATH when it is not beside defaults")
    func foundOnPath() throws {
        let sandbox = Sandbox()
        let alone = sandbox.file("bin")
        let tools = sandbox.file("tools")
        for directory in [alone, tools] {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }
        try Sandbox.copyExecutable(toolURL, to: alone + "/defaults")
        let sync = toolURL.deletingLastPathComponent().appendingPathComponent("defaults-sync")
        try FileManager.default.createSymbolicLink(atPath: tools + "/defaults-sync", withDestinationPath: sync.path)
        let result = try Sandbox.execute(
            URL(fileURLWithPath: alone + "/defaults"), ["sync", "--help"],
            environment: sandbox.environment(["PATH": tools]))
        #expect(result.status == 0, "\(result.error)")
        #expect(result.output.contains("--etcd"))
    }
}
