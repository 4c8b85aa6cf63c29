import Foundation
import LiveDefaultsTesting
import TestProcesses
import Testing

@testable import LiveDefaults

/// A domain file replaced by unlink + create (`install`, `cp --remove-destination`, `git checkout`, a tool that
/// writes a new inode) is one change, never every key removed and back.
@Suite("Replacement is not removal", .blockingWork)
struct ReplacementTests {
    static let domain = "com.example.replaced"

    /// A version of the domain: `Keep` never changes, `Version` is the round.
    static func version(_ round: Int) throws -> String {
        try SearchListTests.xml(["Keep": "same", "Version": .integer(round)])
    }

    /// Every event the store's file tells its observers, as they come (no stream coalesces them away).
    final class FileEvents: Sendable {
        let removals = Lock<[String]>([])
        let versions = Lock<[Int]>([])

        init(_ file: DomainFile) {
            _ = file.addObserver { [self] event in
                guard case .changed(let deltas, _) = event else { return }
                for delta in deltas {
                    if delta.new == nil { removals.withLock { $0.append(delta.key) } }
                    if delta.key == "Version", case .integer(let round)? = delta.new {
                        versions.withLock { $0.append(round) }
                    }
                }
            }
        }
    }

    /// Replaces the domain file `rounds` times with `replace` (given the round and the new version's
    /// contents), waits for each version to arrive, and checks that no key was ever reported removed.
    ///
    /// With `timesTheGap`, `replace` is the whole time the file is gone or empty (an unlink and a write in this
    /// process): a round in which that took longer than the settle interval (a test process descheduled on a
    /// loaded machine) is a removal by the library's own rule, and its removals are excused — the removal comes
    /// before the new version, so by the time the round's version arrives they are recorded. At least half of
    /// the rounds must be short for the test to mean anything.
    func replaceRepeatedly(
        rounds: Int = 20, timesTheGap: Bool = false, _ directory: TemporaryDirectory,
        _ replace: (Int, String) throws -> Void
    ) async throws {
        let path = directory.file("\(Self.domain).plist")
        try directory.write("\(Self.domain).plist", try Self.version(0))
        let defaults = try directory.store(Self.domain)
        let events = FileEvents(defaults.file(forDomain: Self.domain, layer: .currentUser))
        let changes = Recorder(defaults.changes())
        var removed: [String] = []
        var slowRounds = 0
        for round in 1...rounds {
            let start = ContinuousClock.now
            try replace(round, path)
            let slow = timesTheGap && ContinuousClock.now - start >= DomainFile.removalSettleInterval
            #expect(await waitForValue(defaults, "Version") { $0 == .integer(round) })
            let reported = events.removals.withLock { removals in
                defer { removals.removeAll() }
                return removals
            }
            if slow { slowRounds += 1 } else { removed += reported }
        }
        // A removal would arrive within the settle interval after the last replacement: wait past it.
        try await Task.sleep(for: .milliseconds(200))
        removed += events.removals.withLock { $0 }
        #expect(removed.isEmpty, "keys reported removed: \(removed)")
        #expect(slowRounds <= rounds / 2, "\(slowRounds) of \(rounds) replacements outlasted the settle interval")
        if slowRounds == 0 { #expect(changes.all.allSatisfy { $0.newValue != nil && $0.key == "Version" }) }
        #expect(Set(events.versions.withLock { $0 }) == Set(1...rounds), "every version read")
        #expect(defaults.string(forKey: "Keep") == "same")
    }

    static func run(_ arguments: [String], in directory: String? = nil) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        let result = try runToEnd(process, errors: .merged)
        #expect(result.status == 0, "\(arguments.joined(separator: " ")): \(result.output)")
    }

    @Test("20 of 20 `install -m 600 new.plist <domain file>`: no key reported removed")
    func install() async throws {
        let directory = TemporaryDirectory()
        let source = directory.file("new.plist.source")
        try await replaceRepeatedly(directory) { round, path in
            try Self.version(round).write(toFile: source, atomically: false, encoding: .utf8)
            try Self.run(["install", "-m", "600", source, path])
        }
    }

    @Test("20 of 20 unlink + create (a new inode written in place): no key reported removed")
    func unlinkAndCreate() async throws {
        let directory = TemporaryDirectory()
        try await replaceRepeatedly(timesTheGap: true, directory) { round, path in
            try FileManager.default.removeItem(atPath: path)
            try Self.version(round).write(toFile: path, atomically: false, encoding: .utf8)
        }
    }

    @Test("20 of 20 `cp --remove-destination`: no key reported removed")
    func copyRemovingDestination() async throws {
        let directory = TemporaryDirectory()
        let source = directory.file("new.plist.source")
        try await replaceRepeatedly(directory) { round, path in
            try Self.version(round).write(toFile: source, atomically: false, encoding: .utf8)
            try Self.run(["cp", "--remove-destination", source, path])
        }
    }

    @Test("20 of 20 `git checkout` of the domain file: no key reported removed")
    func gitCheckout() async throws {
        let directory = TemporaryDirectory()
        let name = "\(Self.domain).plist"
        let git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
        try Self.run(["git", "init", "-q", directory.path])
        // Commits 1 … 20 of the file, tagged v1 … v20.
        for round in 1...20 {
            try directory.write(name, try Self.version(round))
            try Self.run(git + ["add", name], in: directory.path)
            try Self.run(git + ["commit", "-q", "-m", "v\(round)"], in: directory.path)
            try Self.run(["git", "tag", "v\(round)"], in: directory.path)
        }
        try await replaceRepeatedly(directory) { round, _ in
            try Self.run(["git", "checkout", "-q", "v\(round)", "--", name], in: directory.path)
        }
    }

    @Test("A file that stays gone is removed after the settle interval, on the store's clock")
    func removalAfterSettle() async throws {
        let directory = TemporaryDirectory()
        try directory.write("\(Self.domain).plist", try Self.version(1))
        let clock = ManualDefaultsClock()
        let defaults = try directory.store(Self.domain, clock: clock)
        let changes = Recorder(defaults.changes())
        try FileManager.default.removeItem(atPath: directory.file("\(Self.domain).plist"))
        #expect(await eventually { clock.pendingDelays.contains(DomainFile.removalSettleInterval) })
        #expect(defaults.string(forKey: "Keep") == "same", "not removed before the settle interval")
        clock.advance(by: DomainFile.removalSettleInterval)
        #expect(await waitForValue(defaults, "Keep") { $0 == nil })
        #expect(await changes.waitFor { $0.key == "Version" && $0.newValue == nil && $0.origin == .external })
    }

    @Test("A file replaced with the same contents by unlink + create: no change at all")
    func identicalReplacement() async throws {
        let directory = TemporaryDirectory()
        let path = directory.file("\(Self.domain).plist")
        try directory.write("\(Self.domain).plist", try Self.version(1))
        let defaults = try directory.store(Self.domain)
        let events = FileEvents(defaults.file(forDomain: Self.domain, layer: .currentUser))
        try FileManager.default.removeItem(atPath: path)
        try Self.version(1).write(toFile: path, atomically: false, encoding: .utf8)
        // Then a real change, so that the test knows the watcher has seen everything before it.
        try FileManager.default.removeItem(atPath: path)
        try Self.version(2).write(toFile: path, atomically: false, encoding: .utf8)
        #expect(await waitForValue(defaults, "Version") { $0 == .integer(2) })
        try await Task.sleep(for: .milliseconds(200))
        #expect(events.removals.withLock { $0 }.isEmpty)
        #expect(events.versions.withLock { $0 } == [2])
    }
}
