import Foundation
import LiveDefaultsTesting
import Logging
import Testing

@testable import LiveDefaults

/// A refused or broken version never runs, not even after a restart: a program that starts on a file its
/// validators refuse, or that cannot be read, serves the newest version the change log gives back (the last
/// known good across restarts), else its defaults. Each "run of the program" is a store of its own (its own
/// clock, so its own state of the file) on one in-memory file system; "another process" writes through a
/// `DomainFile` of its own, under the file lock and into the log, as a LiveDefaults writer does. No watcher, no
/// wait: every look happens when the test takes it.
@Suite("The last known good survives restarts")
struct RestartTests {
    static let domain = "com.example.restart"
    static let minPool = DefaultsKey<Int>("MinPool", default: 1)
    static let maxPool = DefaultsKey<Int>("MaxPool", default: 10)
    static let path = "/home/\(domain).plist"

    struct PoolError: Error, CustomStringConvertible {
        var description: String
    }

    /// The rule every test's program keeps: MinPool ≤ MaxPool.
    static let poolRule: @Sendable (DefaultsSnapshot) throws -> Void = { candidate in
        guard candidate[minPool] <= candidate[maxPool] else {
            throw PoolError(description: "MinPool \(candidate[minPool]) is above MaxPool \(candidate[maxPool])")
        }
    }

    let memory = InMemoryFileSystem()
    let errors = Lock<[DefaultsError]>([])

    /// A start of the program: a store of the domain on the test's file system, with `validators` given in its
    /// configuration.
    func start(validators: [@Sendable (DefaultsSnapshot) throws -> Void] = [poolRule]) throws -> Defaults {
        var configuration = Defaults.Configuration.rooted(at: "/home", applicationDomain: Self.domain)
        configuration.fileSystem = memory
        configuration.clock = ManualDefaultsClock()
        configuration.watching = .off
        configuration.validators = validators
        configuration.logger = Logger(label: "restart") { _ in SwiftLogNoOpLogHandler() }
        configuration.errorHandler = { [errors] error in errors.withLock { $0.append(error) } }
        return try Defaults(configuration: configuration)
    }

    /// Another process writes `values` over the file, as one version, logged.
    func write(_ values: [String: PropertyList?]) throws {
        let other = DomainFile(
            path: Self.path, clock: ManualDefaultsClock(), context: StorageContext(fileSystem: memory))
        for (key, value) in values { try other.set(value, forKey: key) }
        try other.commit()
    }

    /// The file's version now, in the change log's numbering.
    func versionOnDisk() throws -> UInt64 {
        FileVersion.digest(of: try #require(memory.contents(atPath: Self.path)))
    }

    /// The refusals the error handler heard of (after `synchronize()`: it is called on the store's queue).
    var refusals: [DefaultsError] { errors.withLock { $0 }.filter { $0.code == .versionRefused } }

    func file(of defaults: Defaults) throws -> DomainFile {
        try #require(defaults.allFiles().first { $0.path == Self.path })
    }

    @Test("a program started on a refused version serves the last accepted one from the log, from its first read")
    func startedOnRefusedVersion() throws {
        try write(["MinPool": 2, "MaxPool": 20, "Banner": "good"])
        let good = try versionOnDisk()
        // Written while the program is down: refused by its rule.
        try write(["MinPool": 60, "Banner": "refused"])
        let refused = try versionOnDisk()
        let defaults = try start()
        #expect(defaults[Self.minPool] == 2)
        #expect(defaults[Self.maxPool] == 20)
        #expect(defaults.string(forKey: "Banner") == "good", "every key of the refused version is kept out")
        #expect(defaults.snapshot(of: Self.minPool, Self.maxPool)[Self.minPool] == 2)
        #expect(try file(of: defaults).fallback == DomainFile.Fallback(logged: good))
        _ = defaults.synchronize()
        #expect(refusals.count == 1)
        #expect(refusals.first?.detail == "MinPool 60 is above MaxPool 20")
        #expect(defaults.lastError?.code == .versionRefused)
        #expect(try file(of: defaults).announcedVersions.refused?.version?.digest == refused)
        #expect(try file(of: defaults).announcedVersions.applied == good)
        // The file keeps the refused version: nothing is written by a reader.
        #expect(try versionOnDisk() == refused)
    }

    @Test("a stream's first value and a snapshot come from the judged version")
    func streamFirstValueIsJudged() async throws {
        try write(["MinPool": 2, "MaxPool": 20])
        try write(["MinPool": 60])
        let defaults = try start()
        var updates = defaults.updates(of: Self.minPool, Self.maxPool).makeAsyncIterator()
        let first = await updates.next()
        #expect(first?[Self.minPool] == 2)
        #expect(first?[Self.maxPool] == 20)
    }

    @Test("addValidator judges the version the store holds before it returns")
    func addValidatorJudgesAtOnce() async throws {
        try write(["MinPool": 2, "MaxPool": 20])
        try write(["MinPool": 60])
        let defaults = try start(validators: [])
        #expect(defaults[Self.minPool] == 60, "unjudged, the version on disk is served")
        // The stream holds the newest value (60 now) until it is read: read after, it is the value served then.
        var updates = defaults.updates(forKey: "MinPool").makeAsyncIterator()
        defaults.addValidator(Self.poolRule)
        #expect(defaults[Self.minPool] == 2, "refused before addValidator returned")
        #expect(defaults.lastError?.code == .versionRefused)
        _ = defaults.synchronize()
        #expect(refusals.count == 1, "the handler hears of it")
        let heard = await updates.next()
        #expect(heard == .some(2), "streams hear of the change back to the accepted version")
        // A second validator judges what is served now, and refuses it too: the log's version before.
        defaults.addValidator { candidate in
            guard candidate[Self.maxPool] < 20 else { throw PoolError(description: "MaxPool must be under 20") }
        }
        #expect(defaults[Self.maxPool] == 10, "the only version both accept is the one before the file")
        #expect(defaults[Self.minPool] == 1)
    }

    @Test("no log: a refused version leaves the layers below the file (its defaults)")
    func noLogServesDefaults() throws {
        try memory.place(
            Data(try PropertyList.dictionary(["MinPool": 60, "MaxPool": 20]).encoded(as: .xml)), at: Self.path)
        let defaults = try start()
        #expect(defaults[Self.minPool] == 1)
        #expect(defaults[Self.maxPool] == 10)
        #expect(try file(of: defaults).fallback == DomainFile.Fallback(logged: nil))
        _ = defaults.synchronize()
        #expect(refusals.count == 1)
    }

    @Test("a log without an accepted version of the file: its defaults")
    func logWithoutAcceptedVersion() throws {
        try write(["MinPool": 60, "MaxPool": 20])
        try write(["MinPool": 70])
        let defaults = try start()
        #expect(defaults[Self.minPool] == 1)
        #expect(defaults[Self.maxPool] == 10)
        // The version before the first write, no file, is the log's first: the defaults, judged and accepted.
        #expect(try file(of: defaults).fallback == DomainFile.Fallback(logged: 0))
    }

    @Test("the newest accepted version many versions back, every key as it was then")
    func acceptedVersionManyVersionsBack() throws {
        try write(["MinPool": 3, "MaxPool": 30, "Banner": "kept"])
        let good = try versionOnDisk()
        for step in 0..<40 {
            try write(["MinPool": .integer(100 + step), "Banner": .string("refused \(step)")])
        }
        let defaults = try start()
        #expect(defaults[Self.minPool] == 3)
        #expect(defaults[Self.maxPool] == 30)
        #expect(defaults.string(forKey: "Banner") == "kept")
        #expect(try file(of: defaults).fallback == DomainFile.Fallback(logged: good))
    }

    @Test("a program started on a truncated file serves the last version that could be read")
    func startedOnTruncatedFile() throws {
        try write(["MinPool": 2, "MaxPool": 20])
        let good = try versionOnDisk()
        let bytes = try #require(memory.contents(atPath: Self.path))
        try memory.place(bytes.prefix(bytes.count / 2), at: Self.path)
        let defaults = try start(validators: [])
        #expect(defaults[Self.minPool] == 2)
        #expect(defaults[Self.maxPool] == 20)
        #expect(try file(of: defaults).fallback == DomainFile.Fallback(logged: good))
        _ = defaults.synchronize()
        let failure = try #require(errors.withLock { $0 }.first)
        #expect(failure.code == .corruptFile)
        #expect(defaults.lastError?.keepsLastKnownGood == true)
        // A write keeps the broken file aside and goes onto the version served: no key is lost.
        defaults.set(3, forKey: "MinPool")
        #expect(defaults.synchronize())
        let written = try PropertyList.decode(try #require(memory.contents(atPath: Self.path))).value
        #expect(written == .dictionary(["MinPool": 3, "MaxPool": 20]))
    }

    @Test("a truncated file whose last readable version the rule refuses: the newest one it accepts")
    func truncatedAndRefused() throws {
        try write(["MinPool": 2, "MaxPool": 20])
        let good = try versionOnDisk()
        try write(["MinPool": 50])
        let bytes = try #require(memory.contents(atPath: Self.path))
        try memory.place(bytes.prefix(10), at: Self.path)
        let defaults = try start()
        #expect(defaults[Self.minPool] == 2)
        #expect(try file(of: defaults).fallback == DomainFile.Fallback(logged: good))
    }

    @Test("a version that passes replaces the fallback; the next start needs no log")
    func laterVersionReplacesFallback() throws {
        try write(["MinPool": 2, "MaxPool": 20])
        try write(["MinPool": 60])
        let defaults = try start()
        #expect(defaults[Self.minPool] == 2)
        try write(["MaxPool": 80])
        _ = defaults.synchronize()
        #expect(defaults[Self.minPool] == 60)
        #expect(defaults[Self.maxPool] == 80)
        #expect(try file(of: defaults).fallback == nil)
    }
}
