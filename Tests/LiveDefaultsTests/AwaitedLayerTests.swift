import Foundation
import LiveDefaultsTesting
import Synchronization
import TestProcesses
import Testing

@testable import LiveDefaults

/// Layers whose directory is missing when a domain is attached are *awaited*: no file is made for them, only
/// their path is watched, until the directory appears, a write goes there, or `synchronize()` finds it.
@Suite("Awaited layers: no file for a missing directory, attached when it appears", .blockingWork)
struct AwaitedLayerTests {
    static let domain = "com.example.awaited"

    /// A store of `domain` rooted in `directory`, with a watcher of its own (so that what it watches can be
    /// asked without other tests' stores in the way).
    static func store(_ directory: TemporaryDirectory, _ domain: String = domain, watcher: FileWatcher) throws
        -> Defaults
    {
        var configuration = Defaults.Configuration.rooted(at: directory.path, applicationDomain: domain)
        configuration.watcher = watcher
        return try Defaults(configuration: configuration)
    }

    /// The attached layers of a domain and the awaited ones, from the store's state.
    static func layers(_ store: Defaults, _ domain: String) -> (attached: [PreferenceLayer], awaited: [PreferenceLayer])
    {
        store.state.withLock { state in
            guard let attached = state.search.persistent[domain] else { return ([], []) }
            return (attached.files.map(\.layer), PreferenceLayer.searchOrder.filter { attached.awaits($0) })
        }
    }

    static func write(_ values: [String: PropertyList], to path: String) throws {
        try FileManager.default.createDirectory(
            atPath: PathComponents.directory(of: path), withIntermediateDirectories: true)
        try SearchListTests.xml(values).write(toFile: path, atomically: true, encoding: .utf8)
    }

    @Test("Missing directories give no file, only a watch of the path; the layer is attached when one appears")
    func attachedWhenTheDirectoryAppears() async throws {
        let machine = SimulatedMachine(seed: 9)
        try await machine.save(["K": "user"], toDomain: Self.domain)
        let process = machine.process("server")
        let configuration = process.configuration(applicationDomain: Self.domain)
        let locations = configuration.locations
        let watcher = process.watcher
        let byHost = locations.path(forDomain: Self.domain, layer: .currentUserCurrentHost)
        try await use(try process.defaults(configuration: configuration), on: machine, watcher: watcher)
        // A store that goes away leaves no watch behind, awaited or attached: once the work that still held it ran.
        await machine.settle()
        #expect(!watcher.isWatching(byHost))
        #expect(!watcher.isWatching(locations.path(forDomain: Self.domain, layer: .anyUser)))
        watcher.settle()
        #expect(watcher.watchCount == 0)
    }

    /// Another program writes `values` at `path` (its directories made first), and the machine settles.
    static func write(_ values: [String: PropertyList], to path: String, on machine: SimulatedMachine) async throws {
        machine.write(try PropertyList.dictionary(values).encoded(), to: path)
        await machine.settle()
    }

    /// The part of ``attachedWhenTheDirectoryAppears()`` with the store alive.
    private func use(_ defaults: Defaults, on machine: SimulatedMachine, watcher: FileWatcher) async throws {
        let locations = defaults.configuration.locations
        let byHost = locations.path(forDomain: Self.domain, layer: .currentUserCurrentHost)
        let managed = locations.path(forDomain: Self.domain, layer: .managed)
        await machine.settle()

        // Only the user's own file exists: the other five layers of each domain are awaited.
        for name in [Self.domain, DomainName.global] {
            let (attached, awaited) = Self.layers(defaults, name)
            #expect(attached == [.currentUser], "\(name)")
            #expect(awaited == [.managedUser, .managed, .currentUserCurrentHost, .anyUserCurrentHost, .anyUser])
        }
        #expect(watcher.isWatching(byHost), "an awaited path is watched")
        // The per-user managed path names the user: not even worked out while the managed directory is
        // missing (the managed layer's watch stands for it).
        let managedUser = locations.path(forDomain: Self.domain, layer: .managedUser)
        #expect(!watcher.isWatching(managedUser))
        #expect(defaults.state.withLock { $0.search.persistent[Self.domain]?.watchedAwaited } == 0b11_0110)

        // The per-host directory appears with a file: attached, read, ahead of the user's file.
        try await Self.write(["K": "host", "Host": true], to: byHost, on: machine)
        #expect(defaults.string(forKey: "K") == "host")
        #expect(defaults.bool(forKey: "Host"))
        #expect(Self.layers(defaults, Self.domain).attached == [.currentUserCurrentHost, .currentUser])
        #expect(!Self.layers(defaults, Self.domain).awaited.contains(.currentUserCurrentHost))
        // Then followed as any attached file: another version is seen.
        try await Self.write(["K": "host 2"], to: byHost, on: machine)
        #expect(defaults.string(forKey: "K") == "host 2")
        #expect(!defaults.bool(forKey: "Host"))

        // A managed file appearing forces its keys: reads, objectIsForced and writes all agree.
        try await Self.write(["Locked": 5], to: managed, on: machine)
        #expect(defaults.integer(forKey: "Locked") == 5)
        #expect(defaults.objectIsForced(forKey: "Locked"))
        #expect(throws: DefaultsError.forcedKey(key: "Locked", domain: Self.domain)) {
            try defaults.trySet(6, forKey: "Locked")
        }
        #expect(Self.layers(defaults, Self.domain).attached == [.managed, .currentUserCurrentHost, .currentUser])
        // With the managed directory there, the per-user layer gets its own watch, and is read when it appears.
        #expect(watcher.isWatching(managedUser))
        try await Self.write(["Locked": 7, "UserLocked": true], to: managedUser, on: machine)
        #expect(defaults.integer(forKey: "Locked") == 7)
        #expect(defaults.objectIsForced(forKey: "UserLocked"))
        #expect(Self.layers(defaults, Self.domain).attached.first == .managedUser)

        // A suite's awaited paths are watched while it is in the search list, and no longer after.
        let suiteByHost = locations.path(forDomain: "com.example.awaited.suite", layer: .currentUserCurrentHost)
        defaults.addSuite(named: "com.example.awaited.suite")
        #expect(watcher.isWatching(suiteByHost))
        defaults.removeSuite(named: "com.example.awaited.suite")
        #expect(!watcher.isWatching(suiteByHost))
        #expect(!watcher.isWatching(locations.path(forDomain: "com.example.awaited.suite", layer: .managedUser)))
    }

    @Test("Each layer has its place in the search order and a bit of its own")
    func ranksAndBits() {
        #expect(PreferenceLayer.searchOrder.map(\.searchRank) == Array(PreferenceLayer.searchOrder.indices))
        #expect(Set(PreferenceLayer.allCases.map(\.awaitedBit)).count == PreferenceLayer.allCases.count)
        #expect(PreferenceLayer.allCases.allSatisfy { $0.awaitedBit.nonzeroBitCount == 1 })
    }

    @Test("An awaited layer's keys reach the streams once, as another process's change")
    func appearingLayerIsReportedOnce() async throws {
        let directory = TemporaryDirectory()
        try directory.write("\(Self.domain).plist", try SearchListTests.xml(["K": "user"]))
        let defaults = try Self.store(directory, watcher: FileWatcher())
        var changes = try defaults.changes(inDomain: Self.domain).makeAsyncIterator()
        var updates = defaults.updates(forKey: "K", emitCurrentValue: false).makeAsyncIterator()
        let byHost = DefaultsLocations.rooted(at: directory.path).path(
            forDomain: Self.domain, layer: .currentUserCurrentHost)
        try Self.write(["K": "host", "Host": 1], to: byHost)
        #expect(await updates.next() == .some("host"))
        // A marker written after: every change before it arrives before it, each once.
        defaults.set("m", forKey: "Marker")
        var seen: [KeyChange] = []
        while let change = await changes.next(), change.key != "Marker" { seen.append(change) }
        #expect(
            Set(seen) == [
                KeyChange(domain: Self.domain, key: "K", oldValue: "user", newValue: "host", origin: .external),
                KeyChange(domain: Self.domain, key: "Host", oldValue: nil, newValue: 1, origin: .external),
            ])
        #expect(seen.count == 2, "\(seen)")
    }

    @Test("Writes to an awaited layer from many threads at once: each attaches it or finds it attached, none lost")
    func concurrentWritesAttachOnce() throws {
        let directory = TemporaryDirectory()
        let defaults = try Self.store(directory, watcher: FileWatcher())
        let threads = 8
        let keys = 40
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            for index in 0..<keys {
                let layer: PreferenceLayer = index.isMultiple(of: 2) ? .currentUserCurrentHost : .anyUser
                try? defaults.trySet(
                    .integer(index), forKey: "T\(thread)K\(index)", inDomain: Self.domain, layer: layer)
            }
        }
        // Read back at once, without synchronize(): every write went to a layer the store searches.
        for thread in 0..<threads {
            for index in 0..<keys {
                #expect(defaults.integer(forKey: "T\(thread)K\(index)") == index, "T\(thread)K\(index)")
            }
        }
        let (attached, awaited) = Self.layers(defaults, Self.domain)
        #expect(attached == [.currentUserCurrentHost, .currentUser, .anyUser], "each attached once, in order")
        #expect(awaited == [.managedUser, .managed, .anyUserCurrentHost])
        // On disk: a fresh store, which finds both directories there at its open, reads every key.
        #expect(defaults.synchronize())
        let fresh = try Self.store(directory, watcher: FileWatcher())
        #expect(Self.layers(fresh, Self.domain).attached == [.currentUserCurrentHost, .currentUser, .anyUser])
        for thread in 0..<threads {
            for index in 0..<keys { #expect(fresh.integer(forKey: "T\(thread)K\(index)") == index) }
        }
    }

    @Test("Without a watcher, synchronize() attaches the layers whose directory appeared, and only those")
    func synchronizeAttachesAppearedLayers() throws {
        let directory = TemporaryDirectory()
        var configuration = Defaults.Configuration.rooted(at: directory.path, applicationDomain: Self.domain)
        configuration.watching = .off
        let defaults = try Defaults(configuration: configuration)
        let locations = DefaultsLocations.rooted(at: directory.path)
        try Self.write(["Any": true], to: locations.path(forDomain: Self.domain, layer: .anyUser))
        try FileManager.default.createDirectory(atPath: directory.file("ByHost"), withIntermediateDirectories: true)
        #expect(!defaults.bool(forKey: "Any"))
        #expect(defaults.synchronize())
        #expect(defaults.bool(forKey: "Any"))
        // The any-user directory holds the global domain's layer too; the per-host one has no file yet.
        let (attached, awaited) = Self.layers(defaults, Self.domain)
        #expect(attached == [.currentUserCurrentHost, .currentUser, .anyUser])
        #expect(awaited == [.managedUser, .managed, .anyUserCurrentHost])
        #expect(Self.layers(defaults, DomainName.global).attached == [.currentUserCurrentHost, .currentUser, .anyUser])
    }
}
