import Foundation
import LiveDefaultsTesting
import Logging
import Testing

@testable import LiveDefaults

/// A key of another suite reads the same through the subscript, a snapshot and a snapshot stream: from its suite's
/// store (whose search list puts the suite's domain first), never from the reading store's search list, where the
/// application domain may hold a key of the same name.
@Suite("A key of another suite: the subscript, a snapshot and a snapshot stream agree")
struct SuiteSnapshotTests {
    static let application = "com.example.app"
    static let suite = "com.example.shared"
    static let local = DefaultsKey<Int>("Workers", default: 1)
    static let shared = DefaultsKey<Int>("Workers", default: 2, suite: suite)
    static let team = DefaultsKey<String>("Team", default: "core", suite: suite)

    /// A store of the application domain on an in-memory file system, that does not watch.
    static func store(on memory: InMemoryFileSystem) throws -> Defaults {
        var configuration = Defaults.Configuration.rooted(at: "/home", applicationDomain: application)
        configuration.fileSystem = memory
        configuration.clock = ManualDefaultsClock()
        configuration.watching = .off
        configuration.logger = Logger(label: "suites") { _ in SwiftLogNoOpLogHandler() }
        return try Defaults(configuration: configuration)
    }

    @Test("a snapshot reads a key of another suite from that suite, as the subscript does")
    func snapshotReadsTheSuite() throws {
        let defaults = try Self.store(on: InMemoryFileSystem())
        defaults[Self.local] = 8
        defaults[Self.shared] = 16
        // The application domain has a value of the same name: the search list of this store would give 8.
        defaults.addSuite(named: Self.suite)
        #expect(defaults.integer(forKey: "Workers") == 8)
        #expect(defaults[Self.shared] == 16)
        let snapshot = defaults.snapshot(of: Self.local, Self.shared, Self.team)
        #expect(snapshot[Self.local] == 8)
        #expect(snapshot[Self.shared] == 16, "the suite's value, as defaults[key] reads it")
        #expect(snapshot[Self.team] == "core")
        #expect(snapshot.values == ["Workers": .integer(8)], "values: this store's own keys")
    }

    @Test(
        "a snapshot stream follows a key of another suite: a change there is a new snapshot",
        .timeLimit(.minutes(1)))
    func streamFollowsTheSuite() async throws {
        let defaults = try Self.store(on: InMemoryFileSystem())
        defaults[Self.local] = 8
        var snapshots = defaults.updates(of: Self.local, Self.shared, Self.team).makeAsyncIterator()
        let first = try #require(await snapshots.next())
        #expect(first[Self.local] == 8 && first[Self.shared] == 2 && first[Self.team] == "core")

        defaults[Self.shared] = 16
        let second = try #require(await snapshots.next())
        #expect(second[Self.shared] == 16 && second[Self.local] == 8)
        #expect(second[Self.shared] == defaults[Self.shared])

        // Two keys of the suite changed in one transaction arrive in one snapshot.
        let suiteStore = defaults.store(for: Self.shared)
        try suiteStore.transaction { transaction in
            transaction[Self.shared] = 32
            transaction[Self.team] = "edge"
        }
        let third = try #require(await snapshots.next())
        #expect(third[Self.shared] == 32 && third[Self.team] == "edge")

        // A change of this store's own key of the same name is this store's.
        defaults[Self.local] = 9
        let fourth = try #require(await snapshots.next())
        #expect(fourth[Self.local] == 9 && fourth[Self.shared] == 32)
    }
}
