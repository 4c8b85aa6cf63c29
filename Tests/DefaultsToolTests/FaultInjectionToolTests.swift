import Foundation
import TestProcesses
import Testing

@testable import LiveDefaults

/// `defaults write`, `delete`, `merge` and `import` run as a black box under an LD_PRELOAD fault injector (Tests/FaultShim, built
/// here with the system's C compiler) that fails one file-system call of the run in turn, with EIO (that call),
/// or ENOSPC (that call and every later one of its kind), or kills the process just before it. After each run,
/// whatever the fault:
/// - the domain's file is a version someone wrote: absent, the old one or the new one, never torn;
/// - the command's exit status is 0 exactly when the change is on disk;
/// - the change log lists the change exactly when it landed, attributed to `defaults` even when the process
///   died between its rename and its entry (or as external, when a failure that persists left the log
///   unwritable to the writer), and never a change that did not land;
/// - the next write works.
@Suite("Faults injected into the defaults command: the exit status and the log tell the truth", .blockingWork)
struct FaultInjectionToolTests {
    /// The compiled shim, built once per test process; nil (with the reason) when it cannot be used here.
    static let shim: Result<String, ShimUnavailable> = buildShim()

    struct ShimUnavailable: Error, CustomStringConvertible {
        var description: String
        /// Unavailable because a sanitizer's runtime is in the process (the test is skipped), not for want of a
        /// compiler (the test fails).
        var sanitized = false
    }

    static func buildShim() -> Result<String, ShimUnavailable> {
        // A sanitizer's runtime, linked into the executable, intercepts these calls before any preloaded library.
        if dlsym(nil, "__tsan_init") != nil || CommandLine.arguments.first?.contains("tsan") == true {
            return .failure(
                ShimUnavailable(description: "ThreadSanitizer's runtime intercepts the calls first", sanitized: true))
        }
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("FaultShim/fault-shim.c").path
        let output = NSTemporaryDirectory() + "fault-shim-\(UUID().uuidString).so"
        for compiler in ["/usr/bin/cc", "/usr/bin/gcc", "/usr/bin/clang"]
        where FileManager.default.isExecutableFile(atPath: compiler) {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: compiler)
            process.arguments = ["-shared", "-fPIC", "-O1", "-o", output, source, "-ldl"]
            guard (try? process.run()) != nil else { continue }
            process.waitUntilExit()
            if process.terminationStatus == 0 { return .success(output) }
        }
        return .failure(ShimUnavailable(description: "no C compiler built \(source)"))
    }

    /// One way of changing a domain, tried under every fault.
    struct Scenario: Sendable, CustomStringConvertible {
        var description: String
        /// The domain as the command is given it (a name, or a path whose directories may not exist yet).
        var domain: @Sendable (Sandbox) -> String
        /// The file the domain's values land in (through a link, the file it resolves to).
        var file: @Sendable (Sandbox) -> String
        /// Run (without faults) before the faulted command: the file as it was.
        var setup: @Sendable (Sandbox, String) throws -> Void
        /// The faulted command's arguments, given the domain.
        var command: @Sendable (Sandbox, String) -> [String]
        /// `Key`'s value once the change landed (nil: absent).
        var landed: PropertyList?
        /// How many changes of `Key` the log lists before the faulted command.
        var loggedBefore: Int
    }

    static let named = "com.example.faults"

    /// `Key` = 1 and `Other` = 5, written by the command.
    static func twoKeys(_ sandbox: Sandbox, _ domain: String) throws {
        try sandbox.ok(["write", domain, "Key", "1"])
        try sandbox.ok(["write", domain, "Other", "5"])
    }

    static let scenarios: [Scenario] = [
        Scenario(
            description: "write over an existing file", domain: { _ in named }, file: { $0.file("\(named).plist") },
            setup: twoKeys, command: { ["write", $1, "Key", "-int", "2"] }, landed: .integer(2), loggedBefore: 1),
        Scenario(
            description: "first write, creating the directories", domain: { $0.file("fresh/nested/com.example.first") },
            file: { $0.file("fresh/nested/com.example.first.plist") }, setup: { _, _ in },
            command: { ["write", $1, "Key", "-int", "2"] }, landed: .integer(2), loggedBefore: 0),
        Scenario(
            description: "delete a key", domain: { _ in named }, file: { $0.file("\(named).plist") }, setup: twoKeys,
            command: { ["delete", $1, "Key"] }, landed: nil, loggedBefore: 1),
        Scenario(
            description: "merge (a transaction)", domain: { _ in named }, file: { $0.file("\(named).plist") },
            setup: twoKeys, command: { ["merge", $1, "{ Key = 2; Third = 3; }"] }, landed: "2", loggedBefore: 1),
        Scenario(
            description: "import (the whole domain replaced)", domain: { _ in named },
            file: { $0.file("\(named).plist") },
            setup: { sandbox, domain in
                try twoKeys(sandbox, domain)
                let data = try PropertyList.dictionary(["Key": 2, "Other": "5"]).encoded(as: .xml)
                try data.write(to: URL(fileURLWithPath: sandbox.file("import.plist")))
            },
            command: { ["import", $1, $0.file("import.plist")] }, landed: .integer(2), loggedBefore: 1),
        Scenario(
            description: "write through a chain of symbolic links", domain: { _ in named },
            file: { $0.file("volume/data/\(named).plist") },
            setup: { sandbox, domain in
                try FileManager.default.createDirectory(
                    atPath: sandbox.file("volume/data"), withIntermediateDirectories: true)
                try FileManager.default.createSymbolicLink(
                    atPath: sandbox.file("volume/current"), withDestinationPath: "data")
                try FileManager.default.createSymbolicLink(
                    atPath: sandbox.file("\(named).plist"), withDestinationPath: "volume/current/\(named).plist")
                try twoKeys(sandbox, domain)
            },
            command: { ["write", $1, "Key", "-int", "2"] }, landed: .integer(2), loggedBefore: 1),
    ]

    /// The value of `Key` in the file (nil: absent or no file); fails the test when the file is not a whole
    /// dictionary.
    static func key(in file: String, _ context: String) -> PropertyList?? {
        guard let data = FileManager.default.contents(atPath: file) else { return .some(nil) }
        guard case .dictionary(let contents)? = try? PropertyList.decode(data).value else {
            Issue.record("\(context): the file is torn or not a dictionary: \(String(decoding: data, as: UTF8.self))")
            return nil
        }
        return .some(contents["Key"])
    }

    /// The calls the faulted command makes on the sandbox's files, as the shim counts them.
    static func trace(_ scenario: Scenario, shim: String) throws -> [String] {
        let sandbox = try prepared(scenario)
        let trace = NSTemporaryDirectory() + "fault-trace-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: trace) }
        let result = try sandbox.run(
            command(scenario, sandbox),
            environment: ["LD_PRELOAD": shim, "FAULT_PATH": sandbox.path, "FAULT_TRACE": trace])
        #expect(result.status == 0, "\(scenario): \(result.error)")
        let text = (try? String(contentsOfFile: trace, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").map { String($0.split(separator: " ").dropFirst().first ?? "") }
    }

    /// A sandbox with the scenario's setup done: made once per scenario (its setup runs the command, a process
    /// each time) and copied into every run's own sandbox, links as links, so that a hundred faulted runs do not
    /// each start two more processes before their own.
    static func prepared(_ scenario: Scenario) throws -> Sandbox {
        let template = try Self.template(scenario)
        let sandbox = Sandbox()
        for name in try FileManager.default.contentsOfDirectory(atPath: template.path) {
            try FileManager.default.copyItem(atPath: template.file(name), toPath: sandbox.file(name))
        }
        return sandbox
    }

    private static let templates = Lock<[String: Sandbox]>([:])

    private static func template(_ scenario: Scenario) throws -> Sandbox {
        if let made = templates.withLock({ $0[scenario.description] }) { return made }
        let sandbox = Sandbox()
        try scenario.setup(sandbox, scenario.domain(sandbox))
        // A scenario's cases run one after another: made twice at most by a race, either is the same setup.
        return templates.withLock { templates in
            if let made = templates[scenario.description] { return made }
            templates[scenario.description] = sandbox
            return sandbox
        }
    }

    static func command(_ scenario: Scenario, _ sandbox: Sandbox) -> [String] {
        scenario.command(sandbox, scenario.domain(sandbox))
    }

    @Test("every call of a change failed (EIO, ENOSPC) or the process killed before it", arguments: scenarios)
    func everyCall(_ scenario: Scenario) throws {
        let shim: String
        switch Self.shim {
        case .success(let path): shim = path
        case .failure(let reason) where reason.sanitized:
            print("skipped: \(reason)")
            return
        case .failure(let reason):
            // Scripts/install-dependencies installs a compiler: its absence is a broken set-up, not a pass.
            Issue.record("the fault shim could not be built: \(reason)")
            return
        }
        let calls = try Self.trace(scenario, shim: shim)
        // A run makes a few dozen calls on the sandbox (reads, the lock, the log's lines, the temp file, the
        // flush, the rename); fewer means the shim did not see them.
        #expect(calls.count >= 8, "\(scenario): the shim counted \(calls)")
        // Durable when it says so: the directory is flushed after the rename (else a power loss may undo it).
        let rename = calls.firstIndex(of: "rename") ?? calls.endIndex
        #expect(calls[rename...].contains("fsync"), "\(scenario): no fsync of the directory after the rename: \(calls)")
        var runs = 0
        var landedRuns = 0
        var refusedRuns = 0
        for (index, call) in calls.enumerated() {
            // EIO once (a retry may land), ENOSPC from this call on for every later call of its kind (a disk
            // that stays full: the command must give up and say so), and a kill just before the call.
            var faults: [(mode: String, errno: Int32, sticky: Bool)] = [("errno", EIO, false), ("kill", 0, false)]
            if call == "write" || call == "fdatasync" || call == "rename" || call == "open" {
                faults.append(("errno", ENOSPC, true))
            }
            for fault in faults {
                let context =
                    "\(scenario), call \(index + 1) (\(call)), \(fault.mode) \(fault.errno)\(fault.sticky ? " from then on" : "")"
                let sandbox = try Self.prepared(scenario)
                let file = scenario.file(sandbox)
                let before = Self.key(in: file, context)
                let result = try sandbox.run(
                    Self.command(scenario, sandbox),
                    environment: [
                        "LD_PRELOAD": shim, "FAULT_PATH": sandbox.path, "FAULT_NTH": String(index + 1),
                        "FAULT_MODE": fault.mode, "FAULT_ERRNO": String(fault.errno),
                        "FAULT_STICKY": fault.sticky ? "1" : "0",
                    ])
                runs += 1
                // Nothing traps: only the injected kill ends a run by a signal.
                if fault.mode != "kill" { #expect(!result.signaled, "\(context): \(result)") }
                guard let after = Self.key(in: file, context) else { continue }
                let landed = after == scenario.landed
                #expect(landed || after == before ?? nil, "\(context): the file holds neither version: \(after as Any)")
                if landed { landedRuns += 1 }
                if !result.signaled && result.status != 0 { refusedRuns += 1 }
                if !result.signaled {
                    #expect(
                        (result.status == 0) == landed,
                        "\(context): exit \(result.status), landed \(landed): \(result.error)")
                }
                // The log: the change exactly when it landed, by defaults; never a change nobody made.
                let changes = try ChangeLogToolTests.logged(sandbox, scenario.domain(sandbox))
                let ofKey = changes.filter { $0["key"] as? String == "Key" }
                #expect(
                    ofKey.count == scenario.loggedBefore + (landed ? 1 : 0),
                    "\(context): the log lists \(ofKey) (landed \(landed))")
                // Named as its writer: a fault that passes, or a kill, leaves the writer's intent or its entry. A
                // failure that persists may leave the log unwritable to it (its intent and its entry both fail
                // while the data lands): the version is then recorded as external by the next reader, which is
                // all a reader can know.
                if !fault.sticky {
                    #expect(!changes.contains { $0["origin"] as? String == "external" }, "\(context): \(changes)")
                    if landed, let newest = ofKey.first {
                        #expect(newest["executable"] as? String == "defaults", "\(context): \(newest)")
                    }
                }
                // The next write works.
                try sandbox.ok(["write", scenario.domain(sandbox), "Key", "-int", "3"])
                #expect(Self.key(in: file, context) == .some(.integer(3)), "\(context)")
            }
        }
        print(
            "\(scenario): \(calls.count) calls, \(runs) faulted runs: \(landedRuns) landed, \(refusedRuns) reported "
                + "failed (nothing changed)")
        // Both outcomes happen: a fault the retries outlast, and one they do not.
        #expect(landedRuns > 0 && refusedRuns > 0, "\(scenario)")
    }
}
