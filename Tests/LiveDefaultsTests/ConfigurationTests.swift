import Foundation
import Logging
import TestProcesses
import Testing

@testable import LiveDefaults

/// The pieces a store is given through its configuration — logger, watcher, roots — and the levels it logs at.
@Suite("Configuration: injected logger and watcher", .blockingWork)
struct ConfigurationTests {
    private func configuration(_ directory: TemporaryDirectory, _ domain: String, log: LogRecorder)
        -> Defaults.Configuration
    {
        var configuration = Defaults.Configuration.rooted(at: directory.path, applicationDomain: domain)
        configuration.logger = log.logger
        return configuration
    }

    @Test("The default logger is labelled LiveDefaults and made when asked; a given one is kept, set or passed")
    func defaultAndGivenLoggers() {
        var configuration = Defaults.Configuration.rooted(at: "/nonexistent", applicationDomain: "com.example.log")
        #expect(configuration.logger.label == "LiveDefaults")
        configuration.logger = Logger(label: "app")
        #expect(configuration.logger.label == "app")
        let passed = Defaults.Configuration(
            locations: .rooted(at: "/nonexistent"), applicationDomain: "com.example.log", arguments: [],
            languages: [], logger: Logger(label: "passed"))
        #expect(passed.logger.label == "passed")
    }

    @Test("A store given its own watcher uses it, and the process's watcher never sees its files")
    func injectedWatcher() async throws {
        let directory = TemporaryDirectory()
        var configuration = Defaults.Configuration.rooted(at: directory.path, applicationDomain: "com.example.injected")
        let watcher = FileWatcher(polling: true, pollInterval: .milliseconds(20))
        configuration.watcher = watcher
        let defaults = try Defaults(configuration: configuration)
        let path = directory.file("com.example.injected.plist")
        watcher.settle()
        #expect(watcher.isWatching(path))
        #expect(watcher.polledDirectories.contains(directory.path))
        #expect(!ProcessContext.system.watcher.isWatching(path))
        // Another process's write arrives through the injected, polling watcher.
        try PersistenceTests.python(WatcherTests.pythonRenameWrite(path, ["Key": "polled"]))
        #expect(await waitForValue(defaults, "Key") { $0 == "polled" })
    }

    @Test("watching = .off: no watcher; another process's write shows after synchronize(), own writes at once")
    func unwatchedStore() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("com.example.unwatched.plist")
        try PersistenceTests.python(WatcherTests.pythonRenameWrite(path, ["Key": "first"]))
        var configuration = Defaults.Configuration.rooted(
            at: directory.path, applicationDomain: "com.example.unwatched")
        configuration.watching = .off
        let defaults = try Defaults(configuration: configuration)
        #expect(defaults.fileWatcher == nil)
        #expect(!ProcessContext.system.watcher.isWatching(path))
        #expect(defaults.string(forKey: "Key") == "first")
        // No watcher exists that could deliver the write: the store keeps what it read until asked to look.
        try PersistenceTests.python(WatcherTests.pythonRenameWrite(path, ["Key": "second", "Other": 1]))
        #expect(defaults.string(forKey: "Key") == "first")
        #expect(defaults.synchronize())
        #expect(defaults.string(forKey: "Key") == "second")
        // Its own writes are seen at once and reach the file, merged with the other writer's keys.
        defaults.set("mine", forKey: "Key")
        #expect(defaults.string(forKey: "Key") == "mine")
        #expect(defaults.synchronize())
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        let stored = try #require(PropertyListSerialization.propertyList(from: bytes, format: nil) as? [String: Any])
        #expect(stored["Key"] as? String == "mine")
        #expect(stored["Other"] as? Int == 1)
    }

    @Test("watching = .polling(interval:): polled without inotify; stores polling at one interval share a watcher")
    func pollingOption() async throws {
        let directory = TemporaryDirectory()
        var configuration = Defaults.Configuration.rooted(at: directory.path, applicationDomain: "com.example.polled")
        configuration.watching = .polling(interval: .milliseconds(20))
        let defaults = try Defaults(configuration: configuration)
        let other = try Defaults(configuration: configuration)
        let watcher = try #require(defaults.fileWatcher)
        #expect(watcher === other.fileWatcher)
        #expect(watcher !== ProcessContext.system.watcher)
        #expect(watcher.pollInterval == .milliseconds(20))
        let path = directory.file("com.example.polled.plist")
        watcher.settle()
        #expect(watcher.polledDirectories.contains(directory.path))
        #expect(!ProcessContext.system.watcher.isWatching(path))
        try PersistenceTests.python(WatcherTests.pythonRenameWrite(path, ["Key": "polled"]))
        #expect(await waitForValue(defaults, "Key") { $0 == "polled" })
        // The default follows the configuration's watcher.
        var automatic = configuration
        automatic.watching = .automatic
        #expect(try Defaults(configuration: automatic).fileWatcher === ProcessContext.system.watcher)
    }

    @Test("A store that goes away stops watching its files; two stores on one file share one registration")
    func storesUnwatchTheirFiles() throws {
        let directory = TemporaryDirectory()
        var configuration = Defaults.Configuration.rooted(at: directory.path, applicationDomain: "com.example.unwatch")
        let watcher = FileWatcher()
        configuration.watcher = watcher
        let path = directory.file("com.example.unwatch.plist")
        var first: Defaults? = try Defaults(configuration: configuration)
        var second: Defaults? = try Defaults(configuration: configuration)
        #expect(first != nil && second != nil)
        #expect(watcher.isWatching(path))
        first = nil
        #expect(watcher.isWatching(path), "the other store still needs the file")
        second = nil
        // The watcher's thread may hold the file for a moment still (a reload or a report queued by the open, which
        // keeps it alive until it ends): its queue drained, nothing does.
        watcher.settle()
        #expect(!watcher.isWatching(path))
        #expect(watcher.watchCount == 0)
    }

    @Test("Errors the API reports are logged at info, to the store's logger, never as errors")
    func reportedErrorsAreInfo() throws {
        let directory = TemporaryDirectory()
        let log = LogRecorder()
        try directory.write("com.example.logged.plist", "<plist><dict><key>A</key><integer>1</integer>")
        // Unwatched: the process's watcher tells its one polling warning (inotify compiled out, in CI's
        // polling-only run) to a store that needed a polled directory, which may be this one.
        var configuration = configuration(directory, "com.example.logged", log: log)
        configuration.watching = .off
        let defaults = try Defaults(configuration: configuration)
        #expect(defaults.lastError != nil, "the corrupt file is reported through the API")
        try directory.write("com.example.logged.plist", try SearchListTests.xml(["A": 1]))
        #expect(defaults.synchronize())
        // A write the file cannot take: reported through synchronize() and lastError, and logged.
        defaults.set(Date(timeIntervalSince1970: 1e15), forKey: "Far")
        #expect(!defaults.synchronize())
        let entries = log.entries
        #expect(entries.count >= 2, "\(entries)")
        #expect(entries.allSatisfy { $0.level == .info }, "\(entries)")
        #expect(entries.contains { $0.message.contains("com.example.logged.plist") && $0.message.contains("Far") })
    }

    @Test("A stored value a typed key cannot read is a notice, once per stored value")
    func unreadableTypedValueIsANotice() throws {
        let directory = TemporaryDirectory()
        let log = LogRecorder()
        // Unwatched, as above: the process's one polling warning (polling-only builds) is not this test's.
        var configuration = configuration(directory, "com.example.typed", log: log)
        configuration.watching = .off
        let defaults = try Defaults(configuration: configuration)
        let key = DefaultsKey<Int>("Limit", default: 7)
        defaults.set("not a number", forKey: "Limit")
        #expect(defaults[key] == 7)
        #expect(defaults[key] == 7)
        let entries = log.entries
        #expect(entries.count == 1, "\(entries)")
        #expect(entries.first?.level == .notice)
        #expect(entries.first?.message.contains("Limit") == true)
    }

    @Test("A refused write is logged at info to the store's logger, and reported through the API")
    func refusedWriteIsInfo() throws {
        let directory = TemporaryDirectory()
        let log = LogRecorder()
        try FileManager.default.createDirectory(atPath: directory.file("Managed"), withIntermediateDirectories: true)
        try directory.write("Managed/com.example.quiet.plist", try SearchListTests.xml(["Locked": 1]))
        var configuration = configuration(directory, "com.example.quiet", log: log)
        configuration.watching = .off  // as above
        let defaults = try Defaults(configuration: configuration)
        defaults.set(2, forKey: "Locked")
        #expect(defaults.lastError == .forcedKey(key: "Locked", domain: "com.example.quiet"))
        let entries = log.entries
        #expect(entries.count == 1, "\(entries)")
        #expect(entries.first?.level == .info)
        #expect(entries.first?.message.contains("Locked") == true)
    }
}

/// A swift-log handler that keeps what it is given, for tests of what the library logs and at which level.
final class LogRecorder: Sendable {
    struct Entry: Sendable, CustomStringConvertible {
        var level: Logger.Level
        var message: String
        var description: String { "\(level): \(message)" }
    }

    private let recorded = Lock<[Entry]>([])

    var entries: [Entry] { recorded.withLock { $0 } }

    var logger: Logger {
        var logger = Logger(label: "LiveDefaults.test") { _ in Handler(recorder: self) }
        logger.logLevel = .trace
        return logger
    }

    fileprivate func append(_ entry: Entry) {
        recorded.withLock { $0.append(entry) }
    }

    private struct Handler: LogHandler {
        let recorder: LogRecorder
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            recorder.append(Entry(level: event.level, message: "\(event.message)"))
        }
    }
}
