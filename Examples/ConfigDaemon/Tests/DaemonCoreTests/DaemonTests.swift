import DaemonCore
import Foundation
import LiveDefaults
import LiveDefaultsTesting
import ServiceLifecycle
import Synchronization
import Testing

@Suite("The config daemon")
struct DaemonTests {
    final class Lines: Sendable {
        let all = Mutex<[String]>([])
        func append(_ line: String) { all.withLock { $0.append(line) } }
        func wait(for line: String, timeout: Duration = .seconds(10)) async -> Bool {
            let deadline = ContinuousClock.now + timeout
            while ContinuousClock.now < deadline {
                if all.withLock({ $0.contains(line) }) { return true }
                try? await Task.sleep(for: .milliseconds(5))
            }
            return all.withLock { $0.contains(line) }
        }
    }

    static func directory() -> String {
        let path = NSTemporaryDirectory() + "config-daemon-tests-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test("In process: the loop applies every change and stops cleanly when cancelled")
    func inProcess() async throws {
        let path = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let defaults = try Defaults(configuration: .rooted(at: path, applicationDomain: Daemon.domain))
        defaults[.interval] = 0.05
        let lines = Lines()
        let daemon = Daemon(defaults: defaults) { lines.append($0) }
        let task = Task { await daemon.run() }
        #expect(await lines.wait(for: "heartbeat: alive"))
        defaults[.message] = "changed"
        #expect(await lines.wait(for: "applied Message = changed"))
        #expect(await lines.wait(for: "heartbeat: changed"))
        defaults[.paused] = true
        #expect(await lines.wait(for: "applied Paused = YES"))
        task.cancel()
        await task.value
        #expect(lines.all.withLock { $0.last } == "stopped cleanly")
        #expect(defaults.activeObserverCount == 0)
        defaults.synchronize()  // nothing left to write once the directory is removed
    }

    @Test("The built daemon follows another process's writes, re-reads on SIGHUP and exits 0 on SIGTERM")
    func realProcess() async throws {
        let path = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let process = Process()
        process.executableURL = Self.binary()
        var environment = ProcessInfo.processInfo.environment
        environment["XDG_CONFIG_HOME"] = path
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        let lines = Lines()
        try process.run()
        // Read on a thread of its own, not through `readabilityHandler`, whose libdispatch read source can
        // crash libdispatch's manager thread (https://github.com/swiftlang/swift-corelibs-libdispatch/issues/949); a line cut between two
        // reads is kept until its end arrives. The thread ends at EOF (`run()` closed our write end).
        let handle = output.fileHandleForReading
        Thread.detachNewThread {
            let size = 1 << 16
            let buffer = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 1)
            defer { buffer.deallocate() }
            var pending: [UInt8] = []
            while true {
                let count = read(handle.fileDescriptor, buffer, size)
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { return }
                pending += UnsafeRawBufferPointer(start: buffer, count: count)
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    lines.append(String(decoding: pending[..<newline], as: UTF8.self))
                    pending.removeSubrange(...newline)
                }
            }
        }
        #expect(await lines.wait(for: "started: every 1.0 s, \"alive\""))
        // This test process is the other process: it writes the daemon's domain through LiveDefaults.
        let defaults = try Defaults(configuration: .rooted(at: path, applicationDomain: Daemon.domain))
        defaults[.interval] = 0.05
        defaults[.message] = "from the test"
        #expect(await lines.wait(for: "applied Interval = 0.05"))
        #expect(await lines.wait(for: "heartbeat: from the test"))
        // SIGHUP: a re-read, and the daemon goes on.
        kill(process.processIdentifier, SIGHUP)
        #expect(await lines.wait(for: "reloaded on SIGHUP"))
        #expect(process.isRunning)
        process.terminate()  // SIGTERM
        process.waitUntilExit()
        #expect(process.terminationReason == .exit && process.terminationStatus == 0)
        #expect(await lines.wait(for: "stopped cleanly"))
        defaults.synchronize()  // nothing left to write once the directory is removed
    }

    @Test("In a service group: graceful shutdown ends the loops")
    func serviceGroup() async throws {
        let path = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let defaults = try Defaults(configuration: .rooted(at: path, applicationDomain: Daemon.domain))
        defaults[.interval] = 0.05
        let lines = Lines()
        let group = ServiceGroup(services: [Daemon(defaults: defaults) { lines.append($0) }])
        let running = Task { try await group.run() }
        #expect(await lines.wait(for: "heartbeat: alive"))
        await group.triggerGracefulShutdown()
        try await running.value
        #expect(lines.all.withLock { $0.last } == "stopped cleanly")
        defaults.synchronize()
    }

    static func binary() -> URL {
        var directory = Bundle.main.bundleURL
        for _ in 0..<4 {
            let candidate = directory.appendingPathComponent("config-daemon")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            let other = directory.appendingPathComponent("ConfigDaemon")
            if FileManager.default.isExecutableFile(atPath: other.path) { return other }
            directory = directory.deletingLastPathComponent()
        }
        return URL(fileURLWithPath: "config-daemon")
    }
}
