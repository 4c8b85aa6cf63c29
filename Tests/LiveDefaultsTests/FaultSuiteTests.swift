import Foundation
import LiveDefaultsTesting
import Logging
import Testing

@testable import LiveDefaults

/// Every write path of the library, on the file-system seam: each file-system call it makes failed in turn
/// (EIO, ENOSPC, EINTR, EACCES, EROFS), the writer stopped before each call, and power lost after each, on an
/// ``InMemoryFileSystem`` behind a ``FaultInjectingFileSystem``. No sleeps, no processes: the writer runs on a
/// manual clock, so nothing it schedules runs unless the test says so.
///
/// Invariants checked on every run (Docs/Reliability.md, "Faults"):
/// - the domain's file is always a version someone wrote (the one before, or the one written);
/// - a write reported failed changed nothing a reader can see; one reported done is on disk, and survives
///   every power loss the model allows once acknowledged;
/// - the change log lists the written change exactly when it landed (once a reader has looked);
/// - the next write works.
/// The black-box counterpart, the real `defaults` binary under an LD_PRELOAD fault shim, is
/// `FaultInjectionToolTests`.
@Suite("Every write path on the file-system seam: each call failed, the writer stopped, the power lost")
struct FaultSuiteTests {
    static let home = "/home/tester/.config"
    static let domain = "com.example.faults"
    static let path = "\(home)/\(domain).plist"
    static let faults: [FaultInjectingFileSystem.Fault] = [
        .fail(errno: EIO), .fail(errno: ENOSPC), .fail(errno: EINTR), .fail(errno: EACCES), .fail(errno: EROFS), .stop,
    ]
    /// The power-loss outcomes looked at after each stop (all of them when there are fewer).
    static let outcomesPerStop = 48

    /// What a reader finds at the domain's path.
    enum Version: Equatable, CustomStringConvertible {
        case absent
        case dictionary([String: PropertyList])
        /// Bytes that are no domain (the corrupt file a scenario starts from).
        case bytes(Data)

        var description: String {
            switch self {
            case .absent: "no file"
            case .dictionary(let contents): "\(contents.sorted { $0.key < $1.key })"
            case .bytes(let data): "\(data.count) bytes that are no domain"
            }
        }
    }

    static func version(on fileSystem: InMemoryFileSystem) -> Version {
        guard let data = fileSystem.contents(atPath: path) else { return .absent }
        guard let decoded = try? PropertyList.decode(data), case .dictionary(let contents) = decoded.value else {
            return .bytes(data)
        }
        return .dictionary(contents)
    }

    /// A store of the domain on `fileSystem`, on a clock of its own (so never sharing a file with another
    /// store of the test: each meets the others through the file system, as another process would).
    static func store(on fileSystem: any DefaultsFileSystem) throws -> Defaults {
        var configuration = Defaults.Configuration.rooted(at: home, applicationDomain: domain)
        configuration.fileSystem = fileSystem
        configuration.clock = ManualDefaultsClock()
        // Thousands of runs, most of them reporting a fault on purpose: what they report is checked, not logged.
        configuration.logger = Logger(label: "fault-suite") { _ in SwiftLogNoOpLogHandler() }
        return try Defaults(configuration: configuration)
    }

    /// One write path: the files it starts from, the version before and the one it writes, and the change the
    /// log must list once it landed.
    struct Scenario: Sendable, CustomStringConvertible {
        var name: String
        var prepare: @Sendable (InMemoryFileSystem) throws -> Void
        var before: Version
        var after: Version
        /// Makes the write; true when the library reported it done.
        var act: @Sendable (Defaults) -> Bool
        var loggedKey = "K"
        var loggedValue: LoggedChange.Value = .value("new")

        var description: String { name }
    }

    static let old: [String: PropertyList] = ["A": 1, "K": "old"]

    /// The domain written by the library (so with its change log), as `old`.
    @Sendable static func written(_ fileSystem: InMemoryFileSystem) throws {
        let store = try store(on: fileSystem)
        store.setPersistentDomain(["A": 1, "K": "old"], forName: domain)
        guard store.synchronize() else {
            throw DefaultsError.writeFailed(
                path: path, errno: 0, message: "prepare: \(store.lastError.map { "\($0)" } ?? "")")
        }
    }

    @Sendable static func setAndSynchronize(_ store: Defaults) -> Bool {
        store.set("new", forKey: "K")
        return store.synchronize()
    }

    static let scenarios: [Scenario] = [
        Scenario(
            name: "set + synchronize()", prepare: written, before: .dictionary(old),
            after: .dictionary(["A": 1, "K": "new"]), act: setAndSynchronize),
        Scenario(
            name: "a first write that creates the directories", prepare: { _ in }, before: .absent,
            after: .dictionary(["K": "new"]), act: setAndSynchronize),
        Scenario(
            name: "a transaction", prepare: written, before: .dictionary(old),
            after: .dictionary(["A": 2, "K": "new"]),
            act: { store in
                do {
                    try store.transaction { transaction in
                        let a = transaction.value(forKey: "A")?.integerValue ?? 0
                        transaction.set(.integer(a + 1), forKey: "A")
                        transaction.set("new", forKey: "K")
                    }
                    return true
                } catch {
                    return false
                }
            }),
        Scenario(
            name: "a temporary change (its pending revert written before its version)", prepare: written,
            before: .dictionary(old), after: .dictionary(["A": 1, "K": "new"]),
            act: { store in
                (try? store.transaction(for: .seconds(3600)) { $0.set("new", forKey: "K") }) != nil
            }),
        Scenario(
            name: "a delete", prepare: written, before: .dictionary(old), after: .dictionary(["A": 1]),
            act: { store in
                store.removeObject(forKey: "K")
                return store.synchronize()
            }, loggedValue: .absent),
        Scenario(
            name: "the domain replaced (an import)", prepare: written, before: .dictionary(old),
            after: .dictionary(["K": "new", "C": 3]),
            act: { store in
                store.setPersistentDomain(["K": "new", "C": 3], forName: domain)
                return store.synchronize()
            }),
        Scenario(
            name: "the domain removed", prepare: written, before: .dictionary(old), after: .absent,
            act: { store in
                store.removePersistentDomain(forName: domain)
                return store.synchronize()
            }, loggedValue: .absent),
        Scenario(
            name: "a write through a chain of symbolic links",
            prepare: { fileSystem in
                // A Kubernetes volume: the file is a link into `..data`, itself a link to a dated directory.
                let data = try PropertyList.dictionary(old).encoded(as: .xml)
                try fileSystem.place(data, at: "/srv/volume/..2026_11_28/\(domain).plist")
                try fileSystem.link("/srv/volume/..data", to: "..2026_11_28")
                try fileSystem.link(path, to: "/srv/volume/..data/\(domain).plist")
            }, before: .dictionary(old), after: .dictionary(["A": 1, "K": "new"]), act: setAndSynchronize),
        Scenario(
            name: "a corrupt file kept aside",
            prepare: { fileSystem in try fileSystem.place(Data("<plist><dict><key>".utf8), at: path) },
            before: .bytes(Data("<plist><dict><key>".utf8)), after: .dictionary(["K": "new"]), act: setAndSynchronize),
        Scenario(
            name: "the change log rewritten at its bound",
            prepare: { fileSystem in
                // The log brought to its bound at once: one line of padding (which its readers skip) before the
                // write of "old", so that this write stays within the bound and the act's write of "new" takes the
                // log past it. Each write's growth (its intent and entry) is measured first, on a copy.
                let logPath = ChangeLog.path(forDomainFile: path)
                let store = try store(on: fileSystem)
                store.set(1, forKey: "A")
                _ = store.synchronize()
                let trial = fileSystem.copy()
                let trialStore = try Self.store(on: trial)
                var growth = 0
                for value in ["old", "new"] {
                    let before = try trial.size(atPath: logPath) ?? 0
                    trialStore.set(value, forKey: "K")
                    _ = trialStore.synchronize()
                    growth += (try trial.size(atPath: logPath) ?? 0) - before
                }
                var log = fileSystem.contents(atPath: logPath) ?? Data()
                let padding = ChangeLog.bound(keys: 2) - log.count - growth
                log.append(Data(repeating: UInt8(ascii: "x"), count: padding) + Data("\n".utf8))
                try fileSystem.place(log, at: logPath)
                store.set("old", forKey: "K")
                _ = store.synchronize()
            }, before: .dictionary(old), after: .dictionary(["A": 1, "K": "new"]), act: setAndSynchronize),
    ]

    /// What each scenario starts from, prepared once.
    static let preparedFiles = Lock([String: InMemoryFileSystem]())

    /// A fresh file system holding what `scenario` starts from.
    static func prepared(_ scenario: Scenario) throws -> InMemoryFileSystem {
        if let template = preparedFiles.withLock({ $0[scenario.name] }) { return template.copy() }
        let fileSystem = InMemoryFileSystem()
        try scenario.prepare(fileSystem)
        StorageContext.system.recorder.waitUntilIdle()
        try #require(version(on: fileSystem) == scenario.before, "\(scenario): prepared wrongly")
        preparedFiles.withLock { $0[scenario.name] = fileSystem.copy() }
        return fileSystem.copy()
    }

    /// How many times the change log lists `scenario`'s change, as a new reader of `fileSystem` finds it (having
    /// recorded the version it read, if the log lacked it). A domain found removed is recorded by the next write,
    /// not by a new process's first look (which records nothing of an absent file: Docs/OnDisk.md): the reader
    /// then writes a key first.
    static func loggedCount(_ scenario: Scenario, on fileSystem: InMemoryFileSystem) throws -> Int {
        let reader = try store(on: fileSystem)
        _ = reader.persistentDomain(forName: domain)
        if version(on: fileSystem) == .absent && scenario.before != .absent {
            reader.set("after", forKey: "Next")
            #expect(reader.synchronize(), "\(scenario): the next write after the removal failed")
        }
        return reader.loggedChanges(inDomain: domain).filter {
            $0.key == scenario.loggedKey && $0.newValue == scenario.loggedValue
        }.count
    }

    /// Runs `scenario` once with `fault` at call `call` (nil: none), checks the invariants, and returns the
    /// file system as the write left it with whether the write was reported done, and the file systems a power
    /// loss just after the write could have left (at most `powerLossOutcomes`, taken before any check reads).
    @discardableResult
    static func run(
        _ scenario: Scenario, fault: FaultInjectingFileSystem.Fault?, atCall call: Int, powerLossOutcomes: Int = 0
    ) throws -> (
        fileSystem: InMemoryFileSystem, faulty: FaultInjectingFileSystem, reported: Bool, found: Version,
        outcomes: [InMemoryFileSystem]
    ) {
        let memory = try prepared(scenario)
        let faulty = FaultInjectingFileSystem(wrapping: memory)
        let writer = try store(on: faulty)
        _ = writer.persistentDomain(forName: domain)
        StorageContext.system.recorder.waitUntilIdle()
        if let fault { faulty.arm(fault, atCall: call) } else { faulty.resetCount() }
        let reported = scenario.act(writer)
        StorageContext.system.recorder.waitUntilIdle()
        let outcomes = powerLossOutcomes > 0 ? memory.powerLossOutcomes(limit: powerLossOutcomes) : []
        let label = "\(scenario), \(fault?.description ?? "no fault") at call \(call)"
        let found = version(on: memory)
        #expect(found == scenario.before || found == scenario.after, "\(label): a version nobody wrote: \(found)")
        if fault != .stop {
            if reported {
                #expect(found == scenario.after, "\(label): reported done, but the file holds \(found)")
            } else {
                #expect(found == scenario.before, "\(label): reported failed, but the file changed to \(found)")
            }
        }
        let logged = try loggedCount(scenario, on: memory)
        #expect(
            logged == (found == scenario.after ? 1 : 0),
            "\(label): the log lists the change \(logged) times; calls: \(faulty.calls)")
        if scenario.name.contains("temporary"), found == scenario.after {
            #expect(try holdsRevert(memory), "\(label): the change landed without its revert")
        }
        if scenario.name.contains("symbolic") {
            #expect(
                (try? memory.status(atPath: path, followingLinks: false).kind) == .symbolicLink,
                "\(label): the link was replaced by a file")
        }
        return (memory, faulty, reported, found, outcomes)
    }

    /// Whether the pending reverts on `fileSystem` hold the temporary scenario's: K back to "old".
    static func holdsRevert(_ fileSystem: InMemoryFileSystem) throws -> Bool {
        let pending = try PendingReverts.read(domainFile: path, on: fileSystem).get()
        return pending.entries.contains { $0.keys["K"] == PendingReverts.Entry.Change(before: "old", set: "new") }
    }

    @Test("the seam's fault-free run: each write path is reported done and lands", arguments: scenarios)
    func cleanRun(_ scenario: Scenario) throws {
        let (memory, faulty, reported, found, _) = try Self.run(scenario, fault: nil, atCall: 0)
        #expect(reported)
        #expect(found == scenario.after)
        #expect(faulty.calls.count > 3, "\(faulty.calls)")
        if scenario.name.contains("corrupt") {
            #expect(memory.names(in: Self.home).contains { $0.hasPrefix("\(Self.domain).plist.corrupt-") })
        }
        if scenario.name.contains("bound") {
            let log = try #require(memory.contents(atPath: ChangeLog.path(forDomainFile: Self.path)))
            #expect(
                log.count < ChangeLog.keptSize(bound: ChangeLog.bound(keys: 2)) + 4096,
                "the log was not rewritten: \(log.count) bytes")
        }
    }

    @Test(
        "each call failed with EIO, ENOSPC, EINTR, EACCES, EROFS, or the writer stopped before it", arguments: scenarios
    )
    func everyFault(_ scenario: Scenario) throws {
        let calls = try Self.run(scenario, fault: nil, atCall: 0).faulty.calls.count
        var runs = 0
        for call in 1...calls {
            for fault in Self.faults {
                let (memory, faulty, reported, _, _) = try Self.run(scenario, fault: fault, atCall: call)
                runs += 1
                // The next write works: the failed one, tried again, or a new process's.
                if fault == .stop {
                    let next = try Self.store(on: memory)
                    next.set("after", forKey: "Next")
                    #expect(next.synchronize(), "\(scenario), stop at \(call): the next write failed")
                    #expect(next.string(forKey: "Next") == "after")
                } else if !reported {
                    let writer = try Self.store(on: faulty)
                    #expect(scenario.act(writer), "\(scenario), \(fault) at \(call): the write tried again failed")
                    #expect(Self.version(on: memory) == scenario.after)
                    StorageContext.system.recorder.waitUntilIdle()
                    #expect(try Self.loggedCount(scenario, on: memory) == 1, "\(scenario), \(fault) at \(call)")
                }
            }
        }
        #expect(runs == calls * Self.faults.count)
        FaultSuiteCounts.shared.add(scenario: scenario.name, calls: calls, runs: runs)
    }

    @Test("power lost after each call, and after the write was acknowledged", arguments: scenarios)
    func powerLoss(_ scenario: Scenario) throws {
        let clean = try Self.run(scenario, fault: nil, atCall: 0, powerLossOutcomes: 4096)
        let calls = clean.faulty.calls.count
        // Acknowledged: every outcome holds the new version.
        for (index, outcome) in clean.outcomes.enumerated() {
            #expect(
                Self.version(on: outcome) == scenario.after,
                "\(scenario): acknowledged, then power lost (outcome \(index)): \(Self.version(on: outcome))")
            if scenario.name.contains("temporary") {
                #expect(try Self.holdsRevert(outcome), "\(scenario): power lost (outcome \(index)): its revert lost")
            }
        }
        var outcomes = 0
        for call in 1...calls {
            let stopped = try Self.run(scenario, fault: .stop, atCall: call, powerLossOutcomes: Self.outcomesPerStop)
            for outcome in stopped.outcomes {
                outcomes += 1
                let found = Self.version(on: outcome)
                #expect(
                    found == scenario.before || found == scenario.after,
                    "\(scenario): stopped at call \(call), power lost: \(found)")
                if scenario.name.contains("temporary"), found == scenario.after {
                    #expect(
                        try Self.holdsRevert(outcome), "\(scenario): stopped at call \(call), power lost: no revert")
                }
                // The log is appended without a flush (Docs/Reliability.md): a power loss may take its unflushed
                // lines, and with a log that lost all of them there is nothing to compare the version with (the
                // reader records it as a checkpoint). It never lists a change that did not land; with its lines
                // kept, it lists the one that did.
                let logKept = !(outcome.contents(atPath: ChangeLog.path(forDomainFile: Self.path))?.isEmpty ?? true)
                let logged = try Self.loggedCount(scenario, on: outcome)
                let expected = found == scenario.after ? 1 : 0
                #expect(
                    logKept ? logged == expected : logged <= expected,
                    "\(scenario): stopped at call \(call), power lost: the log lists the change \(logged) times")
            }
        }
        FaultSuiteCounts.shared.add(scenario: scenario.name, powerLossOutcomes: outcomes)
    }
}

/// The counts the fault suite reached, printed when the process ends (for the closing notes and
/// Docs/Reliability.md).
final class FaultSuiteCounts: Sendable {
    static let shared = FaultSuiteCounts()
    private let counts = Lock([String: (calls: Int, runs: Int, outcomes: Int)]())

    func add(scenario: String, calls: Int = 0, runs: Int = 0, powerLossOutcomes: Int = 0) {
        let total = counts.withLock { counts in
            var entry = counts[scenario] ?? (0, 0, 0)
            entry.calls = max(entry.calls, calls)
            entry.runs += runs
            entry.outcomes += powerLossOutcomes
            counts[scenario] = entry
            return counts.values.reduce((0, 0, 0)) { ($0.0 + $1.calls, $0.1 + $1.runs, $0.2 + $1.outcomes) }
        }
        print("fault suite so far: \(total.0) calls, \(total.1) faulted runs, \(total.2) power-loss outcomes")
    }
}
