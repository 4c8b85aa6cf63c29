import Foundation
import PlistOracle
import TestProcesses
import Testing

@testable import LiveDefaults

/// A temporary XDG_CONFIG_HOME for one test, and ways to run the built `defaults` binary in it.
final class Sandbox: Sendable {
    let path: String

    private static let created = Lock<[String]>([])

    init() {
        path = NSTemporaryDirectory() + "defaults-tool-tests-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        // Removed at exit, not in deinit: a local may be released right after its last use.
        let first = Self.created.withLock { created in
            created.append(path)
            return created.count == 1
        }
        if first {
            atexit {
                for path in Sandbox.created.withLock({ $0 }) { try? FileManager.default.removeItem(atPath: path) }
            }
        }
    }

    func file(_ name: String) -> String { "\(path)/\(name)" }

    struct Result {
        var status: Int32
        var output: String
        var error: String
        /// Whether a signal ended it (`status` is then the signal's number).
        var signaled = false
    }

    /// The environment of every run: this sandbox as the defaults directory, no real managed directory.
    func environment(_ extra: [String: String] = [:]) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["XDG_CONFIG_HOME"] = path
        environment["LIVEDEFAULTS_MANAGED_DIRECTORY"] = file("no-managed-directory")
        // Published schemas: the sandbox's, never the real home's.
        environment["XDG_DATA_HOME"] = file("data")
        environment["LIVEDEFAULTS_SCHEMA_PATH"] = nil
        for (key, value) in extra { environment[key] = value }
        return environment
    }

    func run(_ arguments: String...) throws -> Result { try run(arguments) }

    func run(_ arguments: [String], environment extra: [String: String] = [:], input: String? = nil) throws -> Result {
        try Self.execute(toolURL, arguments, environment: environment(extra), input: input)
    }

    static func execute(_ executable: URL, _ arguments: [String], environment: [String: String], input: String? = nil)
        throws -> Result
    {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.environment = environment
        let output = Pipe()
        let error = Pipe()
        let standardInput = Pipe()
        process.standardOutput = output
        process.standardError = error
        process.standardInput = standardInput
        try runSpawning(process)
        if let input { standardInput.fileHandleForWriting.write(Data(input.utf8)) }
        try standardInput.fileHandleForWriting.close()
        let printed = output.fileHandleForReading.readDataToEndOfFile()
        let logged = error.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Result(
            status: process.terminationStatus, output: String(decoding: printed, as: UTF8.self),
            error: String(decoding: logged, as: UTF8.self), signaled: process.terminationReason == .uncaughtSignal)
    }

    /// Starts a process, retrying while its executable is "busy" (ETXTBSY) for up to 10 s.
    ///
    /// A binary a test has just copied can be briefly held open for writing by a child that another test
    /// thread is spawning at that moment (it inherits descriptors until it executes); `exec` then fails with
    /// ETXTBSY until that child has executed. ``copyExecutable(_:to:)`` opens its copy close-on-exec, which
    /// makes the window short; this closes it.
    static func runSpawning(_ process: Process) throws {
        let deadline = Date().addingTimeInterval(10)
        while true {
            do {
                return try process.run()
            } catch let error as NSError {
                let underlying = error.userInfo[NSUnderlyingErrorKey] as? NSError
                guard underlying?.domain == NSPOSIXErrorDomain, underlying?.code == Int(ETXTBSY), Date() < deadline
                else { throw error }
                RealTime.pause(blocking: .milliseconds(10))
            }
        }
    }

    /// Copies an executable (mode 0755) through a close-on-exec descriptor, so that no child spawned meanwhile
    /// keeps it open for writing (see ``runSpawning(_:)``).
    static func copyExecutable(_ source: URL, to destination: String) throws {
        let bytes = try Data(contentsOf: source)
        let descriptor = open(destination, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o755)
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        defer { close(descriptor) }
        try bytes.withUnsafeBytes { buffer in
            guard let base = buffer.baseAddress else { return }
            var offset = 0
            while offset < buffer.count {
                let written = write(descriptor, base + offset, buffer.count - offset)
                if written < 0, errno == EINTR { continue }
                guard written > 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
                offset += written
            }
        }
    }

    /// Runs and expects success; returns standard output.
    @discardableResult
    func ok(_ arguments: String...) throws -> String { try ok(arguments) }

    @discardableResult
    func ok(_ arguments: [String], environment: [String: String] = [:], input: String? = nil) throws -> String {
        let result = try run(arguments, environment: environment, input: input)
        #expect(result.status == 0, "defaults \(arguments.joined(separator: " ")): \(result.error)")
        return result.output
    }

    /// Runs as an unprivileged user (`nobody`) when the tests run as root, so that permissions apply; nil,
    /// with the reason printed, when that cannot be arranged here.
    ///
    /// nobody runs a copy of the binary inside the sandbox: the checkout (and so the built binary) may sit
    /// where only root can enter, such as root's home or a private `mktemp -d` directory.
    func runAsAnotherUser(_ arguments: [String], home: String) throws -> Result? {
        var environment = environment(["XDG_CONFIG_HOME": home])
        if getuid() == 0 {
            if let closed = Self.firstDirectoryClosedToOthers(above: path) {
                print("skipped: the run as nobody needs to enter \(path), but \(closed) is closed to other users")
                return nil
            }
            environment["HOME"] = "/nonexistent"
            // nobody must be able to reach the copy and the sandbox, but not `home` (0700, root's).
            let binary = file("bin/defaults")
            try FileManager.default.createDirectory(atPath: file("bin"), withIntermediateDirectories: true)
            if !FileManager.default.fileExists(atPath: binary) {
                try Self.copyExecutable(toolURL, to: binary)
            }
            chmod(path, 0o755)
            chmod(file("bin"), 0o755)
            chmod(binary, 0o755)
            return try Self.execute(
                URL(fileURLWithPath: "/usr/sbin/runuser"), ["-u", "nobody", "--", binary] + arguments,
                environment: environment)
        }
        chmod(home, 0o000)
        defer { chmod(home, 0o700) }
        return try run(arguments, environment: ["XDG_CONFIG_HOME": home])
    }

    /// The first directory above `path` that other users cannot pass through, if any.
    static func firstDirectoryClosedToOthers(above path: String) -> String? {
        var components = URL(fileURLWithPath: path).deletingLastPathComponent().pathComponents
        var current = ""
        while !components.isEmpty {
            let component = components.removeFirst()
            current = component == "/" ? "/" : (current == "/" ? "" : current) + "/" + component
            var status = stat()
            guard stat(current, &status) == 0 else { return current }
            if status.st_mode & S_IXOTH == 0 { return current }
        }
        return nil
    }

    /// A domain file as Python's plistlib reads it, as JSON.
    func python(_ domain: String, _ expression: String) throws -> String {
        try pythonPlist(file("\(domain).plist"), expression: expression)
    }

    func runPython(_ script: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script]
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
    }

    /// Starts a long-running command (`watch`) whose output is collected as it comes.
    func start(_ arguments: String...) throws -> RunningTool {
        try RunningTool(toolURL, arguments, environment: environment())
    }
}

/// A `defaults` process that keeps running (`watch`).
final class RunningTool: @unchecked Sendable {
    // @unchecked: `process` is only used from the test's thread; the collected text is behind locks.
    /// What a pipe gave so far; a waiter wakes at each arrival (an NSCondition: ThreadSanitizer sees it).
    private final class Text: @unchecked Sendable {
        // @unchecked: `text` is only touched with `condition` locked.
        private let condition = NSCondition()
        private var text = ""

        var value: String {
            condition.lock()
            defer { condition.unlock() }
            return text
        }

        func append(_ data: Data) {
            condition.lock()
            text += String(decoding: data, as: UTF8.self)
            condition.broadcast()
            condition.unlock()
        }

        /// Whether `holds` held of the text within `timeout` seconds, looked at as the text arrives.
        func wait(_ timeout: Double, until holds: (String) -> Bool) -> Bool {
            let deadline = Date().addingTimeInterval(timeout)
            condition.lock()
            defer { condition.unlock() }
            while !holds(text) {
                if !condition.wait(until: deadline) { return holds(text) }
            }
            return true
        }
    }

    private let process: Process
    private let output = Text()
    private let errors = Text()

    init(_ executable: URL, _ arguments: [String], environment: [String: String]) throws {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.environment = environment
        let outputPipe = Pipe()
        let errorPipe = Pipe()
        process.standardOutput = outputPipe
        process.standardError = errorPipe
        self.process = process
        try process.run()
        Self.collect(outputPipe.fileHandleForReading, into: output)
        Self.collect(errorPipe.fileHandleForReading, into: errors)
    }

    /// Reads a pipe to its end on a thread of its own, keeping what arrives as it arrives. Not
    /// `readabilityHandler`: that arms a libdispatch read source, and sources set up and torn down from tests
    /// running in parallel corrupt libdispatch's epoll bookkeeping — its manager thread crashed the whole test
    /// process once in two runs here (https://github.com/swiftlang/swift-corelibs-libdispatch/issues/949).
    /// A blocking `read` needs no event loop; `Process.run()` has closed this process's write end, so the thread ends at EOF.
    private static func collect(_ handle: FileHandle, into text: Text) {
        Thread.detachNewThread {
            let size = 1 << 16
            let buffer = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 1)
            defer { buffer.deallocate() }
            while true {
                let count = read(handle.fileDescriptor, buffer, size)
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { return }
                text.append(Data(bytes: buffer, count: count))
            }
        }
    }

    var lines: [String] { Self.lines(of: output.value) }

    private static func lines(of text: String) -> [String] { text.split(separator: "\n").map(String.init) }

    func waitForLine(_ line: String, timeout: Double = 10) -> Bool {
        output.wait(timeout) { Self.lines(of: $0).contains(line) }
    }

    func waitForStderr(_ text: String, timeout: Double = 10) -> Bool {
        errors.wait(timeout) { $0.contains(text) }
    }

    /// Sends a signal and returns the exit status.
    func stop(_ signal: Int32) -> Int32 {
        kill(process.processIdentifier, signal)
        process.waitUntilExit()
        return process.terminationReason == .exit ? process.terminationStatus : -signal
    }

    deinit {
        if process.isRunning { process.terminate() }
    }
}

/// The built `defaults` binary, beside the test bundle.
let toolURL: URL = {
    var directory = Bundle.main.bundleURL
    for _ in 0..<4 {
        let candidate = directory.appendingPathComponent("defaults")
        if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        directory = directory.deletingLastPathComponent()
    }
    return URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("defaults")
}()
