import Foundation
import LiveDefaultsTesting
import Observation
import PlistOracle
import TestProcesses
import Testing

@testable import LiveDefaults

struct HandlerStruct {
    @Default<Int> var rateLimit: Int
    init(store: Defaults) { _rateLimit = Default(.rateLimit, store: store) }
}

final class ServerClass {
    @Default<Bool> var verbose: Bool
    init(store: Defaults) { _verbose = Default(.verbose, store: store) }
}

/// A Sendable class cannot hold a wrapped `var`; it holds the wrapper itself as a `let`.
final class SendableServer: Sendable {
    let verbose: Default<Bool>
    init(store: Defaults) { verbose = Default(.verbose, store: store) }
}

actor LimiterActor {
    @Default<Int> var rateLimit: Int
    init(store: Defaults) { _rateLimit = Default(.rateLimit, store: store) }

    func double() { rateLimit *= 2 }

    /// Follows the key until it reaches `target`; returns the values seen. `following` is set at the first value
    /// (the current one): the stream is subscribed from then on.
    func follow(until target: Int, following: Observed<Bool>? = nil) async -> [Int] {
        var seen: [Int] = []
        for await limit in $rateLimit.updates {
            following?.update { $0 = true }
            seen.append(limit)
            if limit == target { break }
        }
        return seen
    }
}

@Suite("Property wrapper, typed streams, Observation, migration")
struct TypedObservationTests {
    @Test("@Default in a struct, a class and an actor reads live and writes through")
    func wrapper() async throws {
        let machine = SimulatedMachine(seed: 21)
        let defaults = try #require(machine.process("app").defaults(suiteName: "com.example.wrapper"))
        let handler = HandlerStruct(store: defaults)
        #expect(handler.rateLimit == 100)
        handler.rateLimit = 120  // nonmutating: no `var` needed
        #expect(defaults[.rateLimit] == 120)

        let server = ServerClass(store: defaults)
        server.verbose = true
        #expect(defaults.bool(forKey: "Verbose"))
        let sendable = SendableServer(store: defaults)
        #expect(sendable.verbose.wrappedValue)
        sendable.verbose.wrappedValue = false
        #expect(!server.verbose)

        let limiter = LimiterActor(store: defaults)
        await limiter.double()
        #expect(await limiter.rateLimit == 240)
        #expect(handler.rateLimit == 240, "every wrapper reads the same live store")

        // Another process writes: every wrapper sees it, no synchronize(). (This store's own write of 240
        // goes to disk first: written later, it would win, as the last write of a key does.)
        #expect(defaults.synchronize())
        let other = try #require(machine.process("other").defaults(suiteName: "com.example.wrapper"))
        other.set(3, forKey: "RateLimit")
        await machine.settle()
        #expect(handler.rateLimit == 3)
        #expect(await limiter.rateLimit == 3)

        handler.$rateLimit.reset()
        #expect(handler.rateLimit == 100)
        #expect(handler.$rateLimit.isDefault)
        #expect(handler.$rateLimit.key == .rateLimit)
    }

    @Test("The wrapper's projected value streams updates, including another process's writes")
    func wrapperStream() async throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store("com.example.wrapstream")
        let limiter = LimiterActor(store: defaults)
        let following = Observed(false)
        let follower = Task { await limiter.follow(until: 5, following: following) }
        #expect(await following.wait { $0 })
        #expect(defaults.activeObserverCount == 1)
        #expect(
            try runHelper(["write-sequence", directory.path, "com.example.wrapstream", "RateLimit", "5"]).status == 0)
        let seen = await follower.value
        #expect(seen.first == 100, "the current value first")
        #expect(seen.last == 5)
        #expect(Set(seen).count == seen.count, "no value twice in a row")
    }

    @Test("updates(.key): current value first, typed, equal values dropped, skip option")
    func typedUpdates() async throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store()
        var updates = defaults.updates(.rateLimit).makeAsyncIterator()
        #expect(await updates.next() == 100)
        try defaults.trySet("100", forKey: "RateLimit")  // a different stored value, the same typed value
        defaults[.rateLimit] = 7
        #expect(await updates.next() == 7)
        try defaults.trySet("garbage", forKey: "RateLimit")
        #expect(defaults[.rateLimit] == 7, "a wrong shape reads as the last valid value")
        defaults[.rateLimit] = 8
        #expect(await updates.next() == 8, "the wrong shape was never delivered; the next valid value is")
        var changesOnly = defaults.updates(.theme, emitCurrentValue: false).makeAsyncIterator()
        defaults[.theme] = .dark
        #expect(await changesOnly.next() == .dark)
    }

    @Test("Typed updates of a Codable value written by another process")
    func codableFromAnotherProcess() async throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store("com.example.flags")
        var updates = defaults.updates(.flags).makeAsyncIterator()
        #expect(await updates.next() == FeatureFlags())
        try PersistenceTests.python(
            WatcherTests.pythonRenameWrite(
                directory.file("com.example.flags.plist"), ["Flags": ["search": true, "beta": ["b"]]]))
        #expect(await updates.next() == FeatureFlags(search: true, beta: ["b"]))
    }

    @Test("Snapshots of several keys: consistent, first the current state, then one per change")
    func snapshots() async throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store("com.example.snap")
        var snapshots = defaults.updates(of: .rateLimit, .theme).makeAsyncIterator()
        let first = try #require(await snapshots.next())
        #expect(first[.rateLimit] == 100 && first[.theme] == .system)
        defaults[.theme] = .light
        let second = try #require(await snapshots.next())
        #expect(second[.theme] == .light && second[.rateLimit] == 100)
        // Two keys changed together by another process arrive in one snapshot, never half.
        try PersistenceTests.python(
            WatcherTests.pythonRenameWrite(
                directory.file("com.example.snap.plist"), ["RateLimit": 9, "Theme": "dark"]))
        let third = try #require(await snapshots.next())
        #expect(third[.rateLimit] == 9 && third[.theme] == .dark)
        defaults.set("unrelated", forKey: "Other")
        defaults[.rateLimit] = 10
        let fourth = try #require(await snapshots.next())
        #expect(fourth[.rateLimit] == 10)
    }

    /// A program makes the iterator, starts what will change the keys, and only then awaits: the change must not be
    /// taken for the state to start from (it was, when the baseline was read at the first `next()`, and the stream
    /// then waited for a change that had already come). The timeout only keeps a failure from hanging the suite.
    @Test("Changes only: a change made after the iterator is made and before the first next() is delivered")
    func changeBeforeFirstNext() async throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store("com.example.early")
        let iterator = defaults.updates(of: .rateLimit, .theme, emitCurrentValue: false).makeAsyncIterator()
        defaults[.rateLimit] = 7
        let first = await withTimeout {
            var iterator = iterator
            return await iterator.next()
        }
        #expect(first?[.rateLimit] == 7)
    }

    @Test("A list of keys made at run time: snapshot(of:) and updates(of:) take an array")
    func keysListedAtRunTime() async throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store("com.example.listed")
        // Names a program reads from its configuration, not known when it was written.
        let names = ["Upstream", "Port", "Region"]
        let keys: [DefaultsKey<String>] = names.map { DefaultsKey<String>($0, default: "unset") }
        let listed: [DefaultsKeys] = keys
        defaults[keys[0]] = "db1"
        let snapshot = defaults.snapshot(of: listed)
        #expect(keys.map { snapshot[$0] } == ["db1", "unset", "unset"])
        var updates = defaults.updates(of: listed).makeAsyncIterator()
        #expect(try #require(await updates.next())[keys[2]] == "unset")
        // Two of them changed together by another process arrive in one snapshot.
        try PersistenceTests.python(
            WatcherTests.pythonRenameWrite(
                directory.file("com.example.listed.plist"), ["Upstream": "db2", "Port": "5433"]))
        let next = try #require(await updates.next())
        #expect(keys.map { next[$0] } == ["db2", "5433", "unset"])
    }

    @Test("ObservableDefaults: withObservationTracking fires for local writes and another process's writes")
    func observation() async throws {
        let machine = SimulatedMachine(seed: 22)
        let defaults = try #require(machine.process("app").defaults(suiteName: "com.example.observed"))
        let settings = ObservableDefaults(defaults)
        let fired = Observed(0)

        func track() -> Int {
            withObservationTracking {
                settings[.rateLimit]
            } onChange: {
                fired.update { $0 += 1 }
            }
        }
        #expect(track() == 100)
        settings[.rateLimit] = 150
        #expect(fired.current == 1)
        #expect(track() == 150)
        // Another process (after this store's own write is on disk: written later, it would win).
        #expect(defaults.synchronize())
        let other = try #require(machine.process("other").defaults(suiteName: "com.example.observed"))
        other.set(1, forKey: "RateLimit")
        await machine.settle()
        // Observation's change is told through the store's stream, on a task of its own.
        #expect(await fired.wait { $0 == 2 })
        #expect(track() == 1)
        // Another store in this process, and an unrelated key that must not fire.
        defaults.set("x", forKey: "Unrelated")
        defaults[.rateLimit] = 2
        #expect(await fired.wait { $0 == 3 })
        #expect(settings[.rateLimit] == 2)
    }

    @Test("Migration: rename, type change, idempotent, failures leave the value alone")
    func migration() throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store("com.example.migrate")
        defaults.set(250, forKey: "Limit")
        #expect(try defaults.migrateKey(from: "Limit", to: .rateLimit) == .migrated)
        #expect(defaults[.rateLimit] == 250)
        #expect(defaults.object(forKey: "Limit") == nil)
        #expect(try defaults.migrateKey(from: "Limit", to: .rateLimit) == .nothingToDo)

        // The new key already set: it wins, the stale old key goes.
        defaults.set(1, forKey: "Limit")
        #expect(try defaults.migrateKey(from: "Limit", to: .rateLimit) == .keptExistingValue)
        #expect(defaults[.rateLimit] == 250 && defaults.object(forKey: "Limit") == nil)

        // Milliseconds as Int → seconds as Double, twice.
        let timeout = DefaultsKey<Double>("Timeout", default: 30)
        defaults.set(1_500, forKey: "Timeout")
        #expect(try defaults.migrate(timeout, from: Int.self) { Double($0) / 1000 } == .migrated)
        #expect(defaults[timeout] == 1.5)
        #expect(try defaults.migrate(timeout, from: Int.self) { Double($0) / 1000 } == .nothingToDo)
        #expect(defaults[timeout] == 1.5)

        // Rename with conversion; a value that is neither shape is an error and stays.
        defaults.set("dark", forKey: "DarkMode")
        #expect(
            try defaults.migrateKey(from: "DarkMode", as: String.self, to: .theme) { Theme(rawValue: $0) ?? .system }
                == .migrated)
        #expect(defaults[.theme] == .dark)
        defaults.set(["not": "a number"], forKey: "Timeout")
        #expect(throws: DefaultsError.self) { try defaults.migrate(timeout, from: Int.self) { Double($0) } }
        #expect(defaults.dictionary(forKey: "Timeout") != nil)
        #expect(defaults.synchronize())
        #expect(
            try pythonPlist(directory.file("com.example.migrate.plist"), expression: "sorted(d.keys())")
                == #"["RateLimit", "Theme", "Timeout"]"#)
    }
}
