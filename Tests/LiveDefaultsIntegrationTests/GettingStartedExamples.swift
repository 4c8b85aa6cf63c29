import Configuration
import Foundation
import LiveDefaults
import LiveDefaultsConfiguration
import LiveDefaultsService
import LiveDefaultsTesting
import ServiceLifecycle
import TestProcesses
import Testing
import UnixSignals  // `.sigterm` (this target enables MemberImportVisibility)

// The integration sections of Docs/GettingStarted.md (and the DocC catalog's copy), and its testing section,
// compiled and run here: `docsShowThisCode` fails when a line of their code is not in this file, in the same order.

/// A stand-in for the reader's rate limiter.
final class Limiter: Sendable {
    private let limits = Observed<[Int]>([])
    var stopped: Bool { !limits.current.isEmpty }
    func setLimit(_ limit: Int) { limits.update { $0.append(limit) } }
    var received: [Int] { limits.current }
    /// Whether a limit was set within 20 s, looked at as limits are set.
    func receivesALimit() async -> Bool { await limits.wait(timeout: .seconds(20)) { !$0.isEmpty } }
}

/// What the guide's configuration example does, with `limiter` standing in for the reader's own.
func configurationExample(limiter: Limiter) async throws -> (port: Int, name: String) {
    let defaults = Defaults.standard  // or Defaults(suiteName: "com.example.server")
    let config = ConfigReader(provider: LiveDefaultsProvider(defaults: defaults))
    let port = config.int(forKey: "http.port", default: 8080)  // {"http": {"port": 8080}}, or a key "http.port"
    let name = config.string(forKey: "name", default: "server")

    // The value now, then every change, from this process or another, until the closure returns.
    try await config.watchInt(forKey: "http.rateLimit", default: 100) { updates in
        for await limit in updates {
            limiter.setLimit(limit)
            if limiter.stopped { break }
        }
    }
    return (port, name)
}

/// The log levels the guide's reconfigurer applied.
let appliedLevels = Limiter()

func apply(_ level: PropertyList?) {
    appliedLevels.setLimit(level == nil ? 0 : 1)
}

struct Reconfigurer: Service {
    let defaults: Defaults
    func run() async throws {
        for await level in defaults.updates(forKey: "LogLevel").cancelOnGracefulShutdown() {
            apply(level)
        }
    }
}

/// The guide's service example, compiled but not run here: a `ServiceGroup` that traps signals in the
/// test process (libdispatch signal sources) stalled every other async test of the run, with no thread
/// blocked (seen with swift-testing on Linux). The test runs the same group without the signals; the built
/// ConfigDaemon and LiveServer, which trap them, are sent real SIGTERMs by their tests.
func serviceExample() async throws {
    let defaults = Defaults.standard  // or Defaults(suiteName: "com.example.server")
    let group = ServiceGroup(
        services: [DefaultsService(defaults), Reconfigurer(defaults: defaults)],
        gracefulShutdownSignals: [.sigterm, .sigint])
    try await group.run()  // SIGTERM: the loop ends, pending writes reach the disk
}

/// The guide's testing example: a store on a manual clock, whose write reaches the disk when told.
func testingExample(directory: String) throws -> Defaults {
    let clock = ManualDefaultsClock()
    var configuration = Defaults.Configuration.rooted(at: directory, applicationDomain: "MyServer")
    configuration.clock = clock
    let defaults = try Defaults(configuration: configuration)
    defaults.set(1, forKey: "Limit")  // the write to disk now waits for the clock
    clock.advanceAndWait(by: .milliseconds(1))  // ... and is on disk when this returns
    return defaults
}

/// The guide's simulated-machine example: another process's change, an editor's save, a crash, half an hour.
func machineExample() async throws {
    let machine = SimulatedMachine(seed: 42)
    let server = machine.process("server").defaults(suiteName: "com.example.server")!
    let ops = machine.process("ops").defaults(suiteName: "com.example.server")!

    ops.set(500, forKey: "RateLimit")  // another process's change ...
    await machine.settle()  // ... written, seen by the server's watcher, delivered
    #expect(server.integer(forKey: "RateLimit") == 500)

    let file = machine.process("server").userDirectory + "/com.example.server.plist"
    let edited = try PropertyListSerialization.data(fromPropertyList: ["RateLimit": 800], format: .xml, options: 0)
    machine.write(edited, to: file, as: .editor)  // a person's save: temporary file, rename over
    await machine.settle()
    #expect(server.integer(forKey: "RateLimit") == 800)

    ops.set(900, forKey: "RateLimit")
    machine.process("ops").crash()  // killed before its writer wrote: the change is gone
    await machine.settle()
    #expect(server.integer(forKey: "RateLimit") == 800)

    await machine.advance(by: .seconds(30 * 60))  // half an hour, in microseconds of wall time
}

@Suite("Getting started: swift-configuration and services", .serialized)
struct GettingStartedExamples {
    /// `Defaults.standard` uses the current user's directory: this test process's is a temporary one.
    static let home: String = {
        let path = NSTemporaryDirectory() + "livedefaults-guide-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        setenv("XDG_CONFIG_HOME", path, 1)
        // Removed when the test process exits (the tests of the suite may run in any order).
        atexit { try? FileManager.default.removeItem(atPath: GettingStartedExamples.home) }
        return path
    }()

    @Test("the guide's code is this file's code")
    func docsShowThisCode() throws {
        // Compared with runs of white space made one space: the formatter aligns comments differently.
        func squeezed(_ text: some StringProtocol) -> String {
            text.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        }
        let here = squeezed(try String(contentsOfFile: #filePath, encoding: .utf8))
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        for guide in ["Docs/GettingStarted.md", "Sources/LiveDefaults/LiveDefaults.docc/GettingStarted.md"] {
            let text = try String(contentsOfFile: root.appendingPathComponent(guide).path, encoding: .utf8)
            for heading in [
                "Using LiveDefaults with swift-configuration", "In a server: services and shutdown",
                "Testing code that uses settings", "Testing code that reacts to live settings",
            ] where guide.hasPrefix("Docs/") || !heading.hasPrefix("Testing") {
                guard let section = text.components(separatedBy: heading).dropFirst().first else {
                    Issue.record("\(guide) has no section \"\(heading)\"")
                    continue
                }
                let blocks = section.components(separatedBy: "```swift\n").dropFirst()
                let code = try #require(blocks.first?.components(separatedBy: "```").first, "\(guide): \(heading)")
                var remaining = here[...]
                for line in code.split(separator: "\n").map(squeezed) where !line.isEmpty {
                    guard let found = remaining.range(of: line) else {
                        Issue.record("\(guide), \(heading): not in the tested code, in order: \(line)")
                        break
                    }
                    remaining = remaining[found.upperBound...]
                }
            }
        }
    }

    @Test("the configuration example reads and watches, live")
    func configuration() async throws {
        _ = Self.home
        let defaults = Defaults.standard
        defaults.set(["port": 9000] as PropertyList, forKey: "http")
        defaults.set(250, forKey: "http.rateLimit")
        let limiter = Limiter()
        let (port, name) = try await configurationExample(limiter: limiter)
        #expect(port == 9000)
        #expect(name == "server")
        #expect(limiter.received == [250])
        #expect(defaults.synchronize())
    }

    @Test("the testing example's write waits for its clock, then reaches the disk")
    func testing() throws {
        let directory = NSTemporaryDirectory() + "livedefaults-guide-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let defaults = try testingExample(directory: directory)
        let file = defaults.configuration.locations.path(forDomain: "MyServer", layer: .currentUser)
        #expect(defaults.integer(forKey: "Limit") == 1)
        // Written by the background writer once the clock moved, before advanceAndWait returned: no synchronize().
        #expect(FileManager.default.fileExists(atPath: file))
        let stored = try PropertyList.decode(Data(contentsOf: URL(fileURLWithPath: file))).value
        #expect(stored.dictionaryValue?["Limit"] == 1)
    }

    @Test("the simulated machine's example runs as the guide says, with no real file and no sleep")
    func machine() async throws {
        try await machineExample()
    }

    @Test("the service example's group shuts down gracefully: its loop ended, its writes on disk")
    func service() async throws {
        _ = Self.home
        let defaults = Defaults.standard
        defaults.set("debug", forKey: "LogLevel")
        let group = ServiceGroup(services: [DefaultsService(defaults), Reconfigurer(defaults: defaults)])
        let running = Task { try await group.run() }
        #expect(await appliedLevels.receivesALimit())
        defaults.set("written at shutdown", forKey: "Pending")
        await group.triggerGracefulShutdown()
        try await running.value
        #expect(defaults.streamsFinished)
        let file = defaults.configuration.locations.path(
            forDomain: defaults.configuration.applicationDomain, layer: .currentUser)
        let stored = try PropertyList.decode(Data(contentsOf: URL(fileURLWithPath: file))).value
        #expect(stored.dictionaryValue?["Pending"] == "written at shutdown")
    }
}
