public import Foundation

// What the test targets share: the helper executable (a real second process) and waiting for a condition.

/// Runs the helper executable (built with the tests) and returns its exit status and output.
@discardableResult
public func runHelper(_ arguments: [String], environment: [String: String] = [:]) throws -> (
    status: Int32, output: String
) {
    let process = try helperProcess(arguments, environment: environment)
    let pipe = Pipe()
    process.standardOutput = pipe
    try process.run()
    let output = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: output, as: UTF8.self))
}

/// The helper executable, ready to run with `arguments` and the test's environment plus `environment`.
public func helperProcess(_ arguments: [String], environment: [String: String] = [:]) throws -> Process {
    let process = Process()
    process.executableURL = helperURL
    process.arguments = arguments
    var merged = ProcessInfo.processInfo.environment
    for (key, value) in environment { merged[key] = value }
    process.environment = merged
    return process
}

/// The helper sits beside the test bundle in the build directory.
public let helperURL: URL = builtExecutable(named: "LiveDefaultsTestHelper")

/// An executable of the package (the test target must depend on it, so that it is built), found beside the
/// test bundle in the build directory.
public func builtExecutable(named name: String) -> URL {
    var directory = Bundle.main.bundleURL
    for _ in 0..<4 {
        let candidate = directory.appendingPathComponent(name)
        if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        directory = directory.deletingLastPathComponent()
    }
    let executable = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    return executable.appendingPathComponent(name)
}

/// Waits for a condition with a generous timeout, polling; never a fixed sleep.
public func eventually(timeout: Double = 30, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if condition() { return true }
        usleep(2_000)
    }
    return condition()
}

/// The same in async code: sleeps without blocking a thread of the cooperative pool.
public func eventually(timeout: Double = 30, _ condition: () -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(2))
    }
    return condition()
}
