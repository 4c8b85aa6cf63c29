import Foundation
import LiveDefaultsTesting
import Logging
import TestProcesses
import Testing

@testable import LiveDefaults

/// What a store makes of other processes' writes, on the simulated machine: a file removed, a change delivered
/// once and with its origin, a shadowed change silent, a notification, a hundred observers. The kernel's own
/// behaviour (its events for each way of writing, an overflow, a rewrite that keeps the stamp) stays in
/// WatcherTests, on real files.
/// `.blockingWork`: a settle runs the machine on the test's thread.
@Suite("Watcher on the simulated machine: other processes' writes, delivered once", .blockingWork)
struct WatcherMachineTests {
    static let domain = "com.example.watched"

    @Test("Unlinking a domain file removes its keys")
    func unlink() async throws {
        let machine = SimulatedMachine(seed: 31)
        try await machine.save(["Doomed": 1], toDomain: Self.domain)
        let defaults = try #require(machine.process("app").defaults(suiteName: Self.domain))
        defaults.register(defaults: ["Doomed": 0] as [String: PropertyList])
        #expect(defaults.integer(forKey: "Doomed") == 1)
        let changes = Recorder(defaults.changes())
        try machine.fileSystem.unlink(machine.path(ofDomain: Self.domain))
        await machine.settle()
        #expect(defaults.integer(forKey: "Doomed") == 0)
        #expect(
            await changes.waitFor {
                $0.key == "Doomed" && $0.oldValue == 1 && $0.newValue == 0 && $0.origin == .external
            })
    }

    @Test("This process's own writes are reported once, as local, never again as external")
    func ownWritesOnce() async throws {
        let machine = SimulatedMachine(seed: 32)
        let app = machine.process("app")
        let defaults = try #require(app.defaults(suiteName: Self.domain))
        let other = try #require(app.defaults(suiteName: Self.domain))
        let changes = Recorder(defaults.changes())
        let otherChanges = Recorder(other.changes())
        defaults.set("mine", forKey: "Own")
        #expect(defaults.synchronize())
        await machine.settle()
        // A write from another process afterwards is the sentinel: everything before it has been delivered.
        let writer = try #require(machine.process("writer").defaults(suiteName: Self.domain))
        writer.set(0, forKey: "Sentinel0")
        #expect(writer.synchronize())
        await machine.settle()
        #expect(await changes.waitFor { $0.key == "Sentinel0" && $0.origin == .external })
        #expect(await otherChanges.waitFor { $0.key == "Sentinel0" })
        #expect(
            changes.all.filter { $0.key == "Own" } == [
                KeyChange(domain: Self.domain, key: "Own", oldValue: nil, newValue: "mine", origin: .local)
            ])
        #expect(otherChanges.all.filter { $0.key == "Own" }.map(\.origin) == [.local])
    }

    @Test("Only effective changes: a shadowed write is silent, removing the shadow reveals the lower value")
    func shadowing() async throws {
        let machine = SimulatedMachine(seed: 33)
        let defaults = try #require(machine.process("app").defaults(suiteName: Self.domain))
        defaults.set("application", forKey: "Key")
        let changes = Recorder(defaults.changes())
        let updates = Recorder(defaults.updates(forKey: "Key", emitCurrentValue: false))
        // Another program writes the global domain, which the application domain shadows; then the sentinel.
        try await machine.save(["Key": "global"], toDomain: ".GlobalPreferences")
        let writer = try #require(machine.process("writer").defaults(suiteName: Self.domain))
        writer.set(0, forKey: "Sentinel0")
        #expect(writer.synchronize())
        await machine.settle()
        #expect(await changes.waitFor { $0.key == "Sentinel0" })
        #expect(changes.all.filter { $0.key == "Key" }.isEmpty)
        #expect(updates.all.isEmpty)
        defaults.removeObject(forKey: "Key")
        #expect(await updates.waitFor { $0 == "global" })
        // The two streams are delivered apart: a later change in `changes` says every change before it arrived.
        defaults.set(true, forKey: "After")
        #expect(await changes.waitFor { $0.key == "After" })
        #expect(
            changes.all.filter { $0.key == "Key" } == [
                KeyChange(domain: Self.domain, key: "Key", oldValue: "application", newValue: "global", origin: .local)
            ])
    }

    @Test("didChangeNotification is posted for another process's change too")
    func externalNotification() async throws {
        let machine = SimulatedMachine(seed: 34)
        let defaults = try #require(machine.process("app").defaults(suiteName: Self.domain))
        let count = Observed(0)
        let observer = NotificationCenter.default.addObserver(
            forName: Defaults.didChangeNotification, object: defaults, queue: nil
        ) { _ in count.update { $0 += 1 } }
        defer { NotificationCenter.default.removeObserver(observer) }
        let writer = try #require(machine.process("writer").defaults(suiteName: Self.domain))
        writer.set(1, forKey: "N")
        #expect(writer.synchronize())
        // The post waits on the store's clock: the settle lets it pass, and it is posted on the settling thread.
        await machine.settle()
        #expect(count.current == 1)
    }

    @Test("100 observers of one key all end on the final value another process writes")
    func hundredObservers() async throws {
        let machine = SimulatedMachine(seed: 35)
        let defaults = try #require(machine.process("app").defaults(suiteName: Self.domain))
        let writer = try #require(machine.process("writer").defaults(suiteName: Self.domain))
        let final = 50
        let subscribed = Observed(0)
        try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<100 {
                group.addTask {
                    // The stream's first element is the value now: this observer is subscribed.
                    await withTimeout {
                        for await value in defaults.updates(forKey: "Counter") {
                            if value == nil { subscribed.update { $0 += 1 } }
                            if value == .integer(final) { return true }
                        }
                        return false
                    } ?? false
                }
            }
            #expect(await subscribed.wait { $0 == 100 })
            #expect(defaults.activeObserverCount == 100)
            for value in 1...final {
                writer.set(value, forKey: "Counter")
                #expect(writer.synchronize())
                await machine.settle()
            }
            var successes = 0
            for try await success in group where success { successes += 1 }
            #expect(successes == 100)
        }
        // Each observer's iterator went with its task, and its subscription with it.
        #expect(defaults.activeObserverCount == 0)
    }

    /// A source of events with no instance to give: the user's inotify instances used up (EMFILE), as a build
    /// without inotify has none.
    struct NoInstances: FileEventSource {
        func open() -> Result<Int32, SystemError> { .failure(SystemError(errno: EMFILE, operation: "inotify_init1")) }
        func close(_ instance: Int32) {}
        func addWatch(_ instance: Int32, directory path: String) -> Result<Int32, SystemError> {
            .failure(SystemError(errno: EBADF, operation: "inotify_add_watch"))
        }
        func removeWatch(_ instance: Int32, _ watch: Int32) {}
        func readEvents(_ instance: Int32, _ body: (Inotify.Event) -> Void) {}
    }

    @Test("Without an inotify instance every directory is polled, the reason said once, and other writes arrive")
    func noInotifyInstance() async throws {
        let memory = InMemoryFileSystem()
        let clock = ManualDefaultsClock()
        // A process's context whose watcher has the real process's loop (a thread of its own), on events that
        // refuse an instance.
        let context = ProcessContext(
            fileSystem: memory, clock: clock,
            platform: WatcherPlatform(events: NoInstances(), makeRunLoop: WatcherPlatform.system.makeRunLoop))
        let watcher = context.watcher
        let log = LogRecorder()
        var configuration = Defaults.Configuration.rooted(at: "/prefs", applicationDomain: Self.domain)
        configuration.context = context
        configuration.logger = log.logger
        let defaults = try Defaults(configuration: configuration)
        let other = try Defaults(configuration: configuration)
        let path = configuration.locations.path(forDomain: Self.domain, layer: .currentUser)
        let status = watcher.status(ofPath: path)
        #expect(status.isPolled)
        #expect(status.pollReason == systemErrorText(EMFILE), "\(status)")
        #expect(watcher.polledDirectories.contains("/prefs"))
        let warnings = log.entries.filter { $0.level == .warning && $0.message.contains("cannot watch") }
        #expect(warnings.count == 1, "\(log.entries)")
        #expect(warnings.first?.message.contains(systemErrorText(EMFILE)) == true)

        // The watcher's thread makes its first poll after the registration, and schedules the next on the clock:
        // let that pass (a second settle), or the advance below could come before the next poll is scheduled.
        watcher.settle()
        // Another program's save (a whole file renamed over) is seen at the next poll, on the process's clock.
        try memory.place(Data(#"{ "Key" = "written"; }"#.utf8), at: "/prefs/saved.tmp")
        try memory.rename("/prefs/saved.tmp", to: path)
        #expect(defaults.string(forKey: "Key") == nil)
        clock.advanceAndWait(by: .milliseconds(100))
        #expect(await waitForValue(defaults, "Key") { $0 == "written" })
        // So is a store's write beside it, and the reason is not said again.
        other.set(2, forKey: "Count")
        #expect(other.synchronize())
        watcher.settle()
        clock.advanceAndWait(by: .milliseconds(100))
        #expect(await waitForValue(defaults, "Count") { $0 == 2 })
        #expect(log.entries.filter { $0.message.contains("cannot watch") }.count == 1, "\(log.entries)")
    }
}
