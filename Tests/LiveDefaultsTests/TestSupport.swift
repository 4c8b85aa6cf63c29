import Foundation
import Testing

@testable import LiveDefaults

/// A fresh temporary directory per test, removed when the test process exits.
///
/// Not in `deinit`: Swift may release a local right after its last use, which in a test is often
/// `directory.store()`, long before the test is done with the files.
final class TemporaryDirectory: Sendable {
    let path: String

    private static let created = Lock<[String]>([])

    init() {
        let path = NSTemporaryDirectory() + "livedefaults-tests-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        self.path = path
        let first = Self.created.withLock { created in
            created.append(path)
            return created.count == 1
        }
        if first {
            atexit {
                // Pending writes first, or the writer's own exit handler would recreate the directories.
                BackgroundWriter.shared.writeAll()
                for path in TemporaryDirectory.created.withLock({ $0 }) {
                    try? FileManager.default.removeItem(atPath: path)
                }
            }
        }
    }

    func store(
        _ domain: String = "com.example.test", arguments: [String] = [], languages: [String] = [],
        clock: any DefaultsClock = SystemDefaultsClock.shared
    ) throws -> Defaults {
        var configuration = Defaults.Configuration.rooted(at: path, applicationDomain: domain, arguments: arguments)
        configuration.languages = languages
        configuration.clock = clock
        return try Defaults(configuration: configuration)
    }

    func file(_ name: String) -> String { "\(path)/\(name)" }

    func write(_ name: String, _ contents: String) throws {
        try Data(contents.utf8).write(to: URL(fileURLWithPath: file(name)))
    }
}

/// Runs the helper executable (built with the tests) and returns its exit status and output.
@discardableResult
func runHelper(_ arguments: [String], environment: [String: String] = [:]) throws -> (status: Int32, output: String) {
    let process = try helperProcess(arguments, environment: environment)
    let pipe = Pipe()
    process.standardOutput = pipe
    try process.run()
    let output = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: output, as: UTF8.self))
}

func helperProcess(_ arguments: [String], environment: [String: String] = [:]) throws -> Process {
    let process = Process()
    process.executableURL = helperURL
    process.arguments = arguments
    var merged = ProcessInfo.processInfo.environment
    for (key, value) in environment { merged[key] = value }
    process.environment = merged
    return process
}

/// The helper sits beside the test bundle in the build directory.
let helperURL: URL = {
    var directory = Bundle.main.bundleURL
    for _ in 0..<4 {
        let candidate = directory.appendingPathComponent("LiveDefaultsTestHelper")
        if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        directory = directory.deletingLastPathComponent()
    }
    let executable = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    return executable.appendingPathComponent("LiveDefaultsTestHelper")
}()

/// Waits for a condition with a generous timeout, polling; never a fixed sleep.
func eventually(timeout: Double = 30, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if condition() { return true }
        usleep(2_000)
    }
    return condition()
}

/// The same in async code: sleeps without blocking a thread of the cooperative pool.
func eventually(timeout: Double = 30, _ condition: () -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(2))
    }
    return condition()
}
