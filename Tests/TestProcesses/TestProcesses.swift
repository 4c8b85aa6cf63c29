public import Foundation

// What the test targets share: the helper executable (a real second process) and waiting for a condition.

/// Runs the helper executable (built with the tests) and returns its exit status and output.
@discardableResult
public func runHelper(_ arguments: [String], environment: [String: String] = [:]) throws -> (
    status: Int32, output: String
) {
    // The helper's standard error stays the test's, where its messages show.
    let result = try runToEnd(try helperProcess(arguments, environment: environment), errors: .inherited)
    return (result.status, result.output)
}

/// What a process printed and how it ended.
public struct ProcessOutput: Sendable {
    /// Its exit status.
    public var status: Int32
    /// Its standard output (and standard error, when merged).
    public var output: String
    /// Its standard error, when kept apart; empty otherwise.
    public var errors: String
}

/// Where a process's standard error goes while ``runToEnd(_:errors:)`` collects its output.
public enum ErrorOutput: Sendable {
    /// To this process's standard error.
    case inherited
    /// Into the same pipe as standard output.
    case merged
    /// Into a pipe of its own, returned as ``ProcessOutput/errors``.
    case separate
}

/// Runs a prepared process to its end and collects what it printed. A separate standard error is read on a
/// thread of its own, so that neither pipe can fill up and stall the child.
public func runToEnd(_ process: Process, errors: ErrorOutput) throws -> ProcessOutput {
    let output = Pipe()
    let errorPipe = Pipe()
    process.standardOutput = output
    switch errors {
    case .inherited: break
    case .merged: process.standardError = output
    case .separate: process.standardError = errorPipe
    }
    try process.run()
    let errorText = Locked(Data())
    let done = DispatchSemaphore(value: 0)
    if errors == .separate {
        Thread {
            errorText.set(errorPipe.fileHandleForReading.readDataToEndOfFile())
            done.signal()
        }.start()
    }
    let text = output.fileHandleForReading.readDataToEndOfFile()
    if errors == .separate { done.wait() }
    process.waitUntilExit()
    return ProcessOutput(
        status: process.terminationStatus, output: String(decoding: text, as: UTF8.self),
        errors: String(decoding: errorText.get(), as: UTF8.self))
}

/// A value behind an `NSLock` (ThreadSanitizer sees it), handed between two threads.
private final class Locked<Value: Sendable>: @unchecked Sendable {
    // @unchecked: `value` is only touched under `lock`.
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func set(_ newValue: Value) { lock.withLock { value = newValue } }
    func get() -> Value { lock.withLock { value } }
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

/// Whether the library under test has inotify: false in a build with LIVEDEFAULTS_POLLING_ONLY (what another
/// platform would run).
public let inotifyIsCompiledIn: Bool = {
    #if os(Linux) && !LIVEDEFAULTS_POLLING_ONLY
        true
    #else
        false
    #endif
}()

/// Whether this process's stores, and the processes it starts, watch with inotify: it is compiled in, and
/// `LIVEDEFAULTS_WATCHER=poll` does not turn it off (CI runs the suite so a second time: every watch by polling,
/// as another platform would). Tests of inotify's own behaviour are skipped where it is false.
public let watchesWithInotify: Bool =
    inotifyIsCompiledIn && ProcessInfo.processInfo.environment["LIVEDEFAULTS_WATCHER"] != "poll"

/// Waits for a condition with a generous timeout, polling; never a fixed sleep.
public func eventually(timeout: Double = 30, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if condition() { return true }
        RealTime.pause(blocking: .milliseconds(2))
    }
    return condition()
}

/// The same in async code: sleeps without blocking a thread of the cooperative pool.
public func eventually(timeout: Double = 30, _ condition: () -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if condition() { return true }
        await RealTime.pause(.milliseconds(2))
    }
    return condition()
}

/// What `operation` returns, or nil when it has not returned within `timeout` (it is then cancelled): for a test
/// that awaits a stream, so that a failure ends the test instead of hanging the suite.
public func withTimeout<Result: Sendable>(
    _ timeout: Duration = .seconds(30), _ operation: @escaping @Sendable () async -> Result?
) async -> Result? {
    await withTaskGroup(of: Result?.self) { group in
        group.addTask { await operation() }
        group.addTask {
            await RealTime.pause(timeout)
            return nil
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        return first
    }
}
