import Foundation
import LiveDefaults
import LiveDefaultsTesting
import LiveDefaultsService
import PlistOracle
import ServiceLifecycle
import TestProcesses
import Testing

/// DefaultsService in a ServiceGroup: on graceful shutdown the pending changes are on disk and the streams
/// have ended, so loops over them end and the group returns.
@Suite("DefaultsService")
struct ServiceTests {
    /// A service that follows a key until graceful shutdown (as a reconfiguring task in a server does).
    struct Follower: Service {
        let defaults: Defaults
        let seen: Counter

        func run() async throws {
            for await _ in defaults.updates(forKey: "Level").cancelOnGracefulShutdown() { seen.add() }
        }
    }

    /// A count several tasks add to (NSLock: a lock ThreadSanitizer sees).
    final class Counter: Sendable {
        private let value = Observed(0)
        func add() { value.update { $0 += 1 } }
        var count: Int { value.current }
        /// Whether the count reached `least` (looked at as it changes; a minute at most).
        func reaches(_ least: Int) async -> Bool { await value.wait(timeout: .seconds(60)) { $0 >= least } }
    }

    @Test("graceful shutdown flushes pending writes and ends every stream, also outside the group")
    func gracefulShutdown() async throws {
        let sandbox = Sandbox()
        let defaults = try sandbox.store("com.example.service")
        defer { sandbox.remove(after: defaults) }
        let seen = Counter()
        // DefaultsService first: the group shuts services down in reverse order, the follower first.
        let group = ServiceGroup(services: [DefaultsService(defaults), Follower(defaults: defaults, seen: seen)])
        // A stream read by a task that is no service (an HTTP handler streaming settings, say).
        let subscription = defaults.changes().makeAsyncIterator()  // subscribed now, not when the task runs
        let handler = Task {
            var values = 0
            var changes = subscription
            while await changes.next() != nil { values += 1 }
            return values
        }
        let running = Task { try await group.run() }
        #expect(await seen.reaches(1), "the follower got the current value")
        defaults.set("debug", forKey: "Level")
        #expect(await seen.reaches(2))
        // Pending in memory, not yet written: the shutdown must write it.
        defaults.set("last words", forKey: "Pending")
        await group.triggerGracefulShutdown()
        try await running.value
        #expect(defaults.streamsFinished)
        let changes = await handler.value
        #expect(changes >= 2, "the handler's loop saw the changes, then ended")
        #expect(
            try pythonPlist(sandbox.file("com.example.service.plist"), expression: "d['Pending']") == #""last words""#)
        // A stream asked for after the shutdown ends at once, after its current value.
        var after: [PropertyList?] = []
        for await value in defaults.updates(forKey: "Level") { after.append(value) }
        #expect(after == ["debug"])
        // Every stream has ended, and each subscription with it.
        #expect(defaults.activeObserverCount == 0)
    }

    @Test("a cancelled group still flushes and ends the streams")
    func cancellation() async throws {
        let sandbox = Sandbox()
        let defaults = try sandbox.store("com.example.service.cancel")
        defer { sandbox.remove(after: defaults) }
        let running = Task { try await DefaultsService(defaults).run() }
        defaults.set(1, forKey: "Pending")
        running.cancel()
        try await running.value
        #expect(defaults.streamsFinished)
        #expect(try pythonPlist(sandbox.file("com.example.service.cancel.plist"), expression: "d['Pending']") == "1")
    }

    @Test("a write that cannot be flushed is the service's error, after every store was shut down")
    func flushFailure() async throws {
        let sandbox = Sandbox()
        // The store's directory is a file: no write can succeed.
        try Data().write(to: URL(fileURLWithPath: sandbox.file("blocked")))
        let broken = try Defaults(
            configuration: .rooted(at: sandbox.file("blocked"), applicationDomain: "com.example.service.broken"))
        let healthy = try sandbox.store("com.example.service.healthy")
        defer { sandbox.remove(after: healthy) }
        broken.set(1, forKey: "Lost")
        healthy.set(2, forKey: "Kept")
        let service = DefaultsService(broken, healthy)
        let running = Task { try await service.run() }
        running.cancel()
        await #expect(throws: DefaultsError.self) { try await running.value }
        #expect(broken.streamsFinished && healthy.streamsFinished)
        #expect(try pythonPlist(sandbox.file("com.example.service.healthy.plist"), expression: "d['Kept']") == "2")
    }
}
