import Foundation
import LiveDefaultsTesting
import TestProcesses
import Testing

@testable import LiveDefaults

/// A domain file replaced by unlink + create (`install`, `cp --remove-destination`, `git checkout`, a tool that
/// writes a new inode) is one change, never every key removed and back.
@Suite("Replacement is not removal", .blockingWork)
struct ReplacementTests {
    static let domain = "com.example.replaced"

    /// A version of the domain: `Keep` never changes, `Version` is the round.
    static func version(_ round: Int) throws -> String {
        try SearchListTests.xml(["Keep": "same", "Version": .integer(round)])
    }

    /// Every event the store's file tells its observers, as they come (no stream coalesces them away).
    final class FileEvents: Sendable {
        let removals = Lock<[String]>([])
        let versions = Lock<[Int]>([])

        init(_ file: DomainFile) {
            _ = file.addObserver { [self] event in
                guard case .changed(let deltas, _) = event else { return }
                for delta in deltas {
                    if delta.new == nil { removals.withLock { $0.append(delta.key) } }
                    if delta.key == "Version", case .integer(let round)? = delta.new {
                        versions.withLock { $0.append(round) }
                    }
                }
            }
        }
    }

    /// Replaces the domain file `rounds` times with `replace` (given the round and the new version's
    /// contents), waits for each version to arrive, then lets the looks the store scheduled at the gone file fall
    /// due, and checks that no key was ever reported removed.
    ///
    /// The store runs on the manual clock: a look comes after the replacement whatever the machine's load, as it
    /// does on the system clock when a replacement leaves no file for less than the settle interval (how long
    /// these tools leave none is measured in Docs/Reliability.md, not here). The tools, the files and the
    /// watcher's events are real.
    func replaceRepeatedly(
        rounds: Int = 20, _ directory: TemporaryDirectory, _ replace: (Int, String) throws -> Void
    ) async throws {
        let path = directory.file("\(Self.domain).plist")
        try directory.write("\(Self.domain).plist", try Self.version(0))
        let clock = ManualDefaultsClock()
        let defaults = try directory.store(Self.domain, clock: clock)
        let events = FileEvents(defaults.file(forDomain: Self.domain, layer: .currentUser))
        let changes = Recorder(defaults.changes())
        var deferred = 0
        for round in 1...rounds {
            try replace(round, path)
            #expect(await waitForValue(defaults, "Version") { $0 == .integer(round) })
            if clock.pendingDelays.contains(RemovalSettling.interval) { deferred += 1 }
            // Every look due, including the further looks at a file created again and still empty.
            for _ in 0..<RemovalSettling.looks { clock.advanceAndWait(by: RemovalSettling.interval) }
            #expect(events.removals.withLock { $0 }.isEmpty, "round \(round): keys reported removed")
        }
        // Every change found so far told to the observers (a file's observers hear of a version after the store
        // holds it).
        #expect(defaults.synchronize())
        #expect(events.removals.withLock { $0 }.isEmpty, "keys reported removed")
        #expect(await changes.waitFor { $0.key == "Version" && $0.newValue == .integer(rounds) })
        #expect(changes.all.allSatisfy { $0.newValue != nil && $0.key == "Version" })
        #expect(Set(events.versions.withLock { $0 }) == Set(1...rounds), "every version read")
        #expect(defaults.string(forKey: "Keep") == "same")
        // Not a guarantee (the watcher may read a delete and a create together), but worth knowing: how often
        // the rule was at work.
        print("\(deferred) of \(rounds) replacements deferred a removal")
    }

    static func run(_ arguments: [String], in directory: String? = nil) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        let result = try runToEnd(process, errors: .merged)
        #expect(result.status == 0, "\(arguments.joined(separator: " ")): \(result.output)")
    }

    @Test("20 of 20 `install -m 600 new.plist <domain file>`: no key reported removed")
    func install() async throws {
        let directory = TemporaryDirectory()
        let source = directory.file("new.plist.source")
        try await replaceRepeatedly(directory) { round, path in
            try Self.version(round).write(toFile: source, atomically: false, encoding: .utf8)
            try Self.run(["install", "-m", "600", source, path])
        }
    }

    @Test("20 of 20 unlink + create (a new inode written in place): no key reported removed")
    func unlinkAndCreate() async throws {
        let directory = TemporaryDirectory()
        try await replaceRepeatedly(directory) { round, path in
            try FileManager.default.removeItem(atPath: path)
            try Self.version(round).write(toFile: path, atomically: false, encoding: .utf8)
        }
    }

    @Test("20 of 20 `cp --remove-destination`: no key reported removed")
    func copyRemovingDestination() async throws {
        let directory = TemporaryDirectory()
        let source = directory.file("new.plist.source")
        try await replaceRepeatedly(directory) { round, path in
            try Self.version(round).write(toFile: source, atomically: false, encoding: .utf8)
            try Self.run(["cp", "--remove-destination", source, path])
        }
    }

    @Test("20 of 20 `git checkout` of the domain file: no key reported removed")
    func gitCheckout() async throws {
        let directory = TemporaryDirectory()
        let name = "\(Self.domain).plist"
        let git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
        try Self.run(["git", "init", "-q", directory.path])
        // Commits 1 … 20 of the file, tagged v1 … v20.
        for round in 1...20 {
            try directory.write(name, try Self.version(round))
            try Self.run(git + ["add", name], in: directory.path)
            try Self.run(git + ["commit", "-q", "-m", "v\(round)"], in: directory.path)
            try Self.run(["git", "tag", "v\(round)"], in: directory.path)
        }
        try await replaceRepeatedly(directory) { round, _ in
            try Self.run(["git", "checkout", "-q", "v\(round)", "--", name], in: directory.path)
        }
    }

    @Test("A file that stays gone is removed after the settle interval, on the store's clock")
    func removalAfterSettle() async throws {
        let directory = TemporaryDirectory()
        try directory.write("\(Self.domain).plist", try Self.version(1))
        let clock = ManualDefaultsClock()
        let defaults = try directory.store(Self.domain, clock: clock)
        let changes = Recorder(defaults.changes())
        try FileManager.default.removeItem(atPath: directory.file("\(Self.domain).plist"))
        #expect(await eventually { clock.pendingDelays.contains(RemovalSettling.interval) })
        #expect(defaults.string(forKey: "Keep") == "same", "not removed before the settle interval")
        clock.advance(by: RemovalSettling.interval)
        #expect(await waitForValue(defaults, "Keep") { $0 == nil })
        #expect(await changes.waitFor { $0.key == "Version" && $0.newValue == nil && $0.origin == .external })
    }

    @Test("A file replaced with the same contents by unlink + create: no change at all")
    func identicalReplacement() async throws {
        let directory = TemporaryDirectory()
        let path = directory.file("\(Self.domain).plist")
        try directory.write("\(Self.domain).plist", try Self.version(1))
        let clock = ManualDefaultsClock()
        let defaults = try directory.store(Self.domain, clock: clock)
        let events = FileEvents(defaults.file(forDomain: Self.domain, layer: .currentUser))
        try FileManager.default.removeItem(atPath: path)
        try Self.version(1).write(toFile: path, atomically: false, encoding: .utf8)
        // Then a real change, so that the test knows the watcher has seen everything before it.
        try FileManager.default.removeItem(atPath: path)
        try Self.version(2).write(toFile: path, atomically: false, encoding: .utf8)
        #expect(await waitForValue(defaults, "Version") { $0 == .integer(2) })
        // The looks at the gone file, due now.
        for _ in 0..<RemovalSettling.looks { clock.advanceAndWait(by: RemovalSettling.interval) }
        #expect(defaults.synchronize())
        #expect(events.removals.withLock { $0 }.isEmpty)
        #expect(events.versions.withLock { $0 } == [2])
    }

    /// A file system that replaces the domain file by a new, still empty one right after a `stat` of it, once
    /// armed: what a watcher's reload meets when its event is handled late, after the next `unlink` + `create`.
    final class ReplacedAfterStat: DefaultsFileSystem, @unchecked Sendable {
        let base = InMemoryFileSystem()
        let path: String
        let armed = Lock(false)

        init(path: String) { self.path = path }

        func status(atPath path: String, followingLinks: Bool) throws(SystemError) -> FileStatus {
            let status = try base.status(atPath: path, followingLinks: followingLinks)
            let replacing =
                path == self.path
                && armed.withLock { armed in
                    defer { armed = false }
                    return armed
                }
            if replacing {
                try base.unlink(path)
                try base.place(Data(), at: path)
            }
            return status
        }
        func open(_ path: String, _ options: FileOpenOptions, permissions: UInt32) throws(SystemError) -> Int32 {
            try base.open(path, options, permissions: permissions)
        }
        func close(_ descriptor: Int32) { base.close(descriptor) }
        func read(_ descriptor: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64?)
            throws(SystemError) -> Int
        { try base.read(descriptor, into: buffer, at: offset) }
        func write(_ descriptor: Int32, from buffer: UnsafeRawBufferPointer) throws(SystemError) -> Int {
            try base.write(descriptor, from: buffer)
        }
        func status(ofDescriptor descriptor: Int32) throws(SystemError) -> FileStatus {
            try base.status(ofDescriptor: descriptor)
        }
        func synchronize(_ descriptor: Int32, dataOnly: Bool) throws(SystemError) {
            try base.synchronize(descriptor, dataOnly: dataOnly)
        }
        func rename(_ source: String, to destination: String) throws(SystemError) {
            try base.rename(source, to: destination)
        }
        func unlink(_ path: String) throws(SystemError) { try base.unlink(path) }
        func makeDirectory(_ path: String, permissions: UInt32) throws(SystemError) {
            try base.makeDirectory(path, permissions: permissions)
        }
        func lock(_ descriptor: Int32, waiting: Bool) throws(SystemError) {
            try base.lock(descriptor, waiting: waiting)
        }
        func readLink(_ path: String, into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> Int {
            try base.readLink(path, into: buffer)
        }
        func scanDirectory(_ path: String, until stop: (UnsafeRawBufferPointer) -> Bool) throws(SystemError) -> Bool {
            try base.scanDirectory(path, until: stop)
        }
        func changeOwner(_ descriptor: Int32, user: UInt32, group: UInt32) throws(SystemError) {
            try base.changeOwner(descriptor, user: user, group: group)
        }
        func canSearch(_ path: String) -> Bool { base.canSearch(path) }
        func fileSystemType(atPath path: String) throws(SystemError) -> UInt {
            try base.fileSystemType(atPath: path)
        }
    }

    @Test("A watcher's late reload whose stat still sees the held version but reads its empty replacement defers")
    func replacedBetweenStatAndRead() throws {
        let path = "/config/\(Self.domain).plist"
        let fileSystem = ReplacedAfterStat(path: path)
        try fileSystem.base.place(Data(try Self.version(1).utf8), at: path)
        let clock = ManualDefaultsClock()
        let file = DomainFile(path: path, clock: clock, context: StorageContext(fileSystem: fileSystem))
        file.loadIfNeeded()
        let events = FileEvents(file)
        // The event of a write already read (its version is held), handled after the next replacement began.
        fileSystem.armed.withLock { $0 = true }
        file.reload(verifyContents: true, deferringRemoval: true)
        #expect(events.removals.withLock { $0 }.isEmpty, "the empty replacement read as every key removed")
        #expect(clock.pendingDelays.contains(RemovalSettling.interval), "a look at the file scheduled instead")
        #expect(file.contents["Keep"] == .string("same"))
        // The replacement is written: its own event reads it as one change.
        try fileSystem.base.place(Data(try Self.version(2).utf8), at: path)
        file.reload(verifyContents: true, deferringRemoval: true)
        #expect(events.versions.withLock { $0 } == [2])
        for _ in 0..<RemovalSettling.looks { clock.advanceAndWait(by: RemovalSettling.interval) }
        #expect(events.removals.withLock { $0 }.isEmpty)
    }

    @Test("The settling rule: which look comes next, and when a gone or empty file defers")
    func settlingRule() {
        func stamp(_ inode: UInt64, size: Int64) -> FileStamp {
            FileStamp(device: 1, inode: inode, size: size, modifiedSeconds: 0, modifiedNanoseconds: 0)
        }
        let held = stamp(1, size: 100)
        let empty = stamp(2, size: 0)
        let replaced = stamp(3, size: 90)
        #expect(RemovalSettling.defers(held: held, current: nil))
        #expect(RemovalSettling.defers(held: held, current: empty))
        #expect(!RemovalSettling.defers(held: held, current: replaced))
        #expect(!RemovalSettling.defers(held: stamp(1, size: 0), current: empty), "empty before and after")

        var settling = RemovalSettling()
        let withNothingHeld = settling.schedule(holding: nil)
        let first = settling.schedule(holding: held)
        let second = settling.schedule(holding: held)
        let due = settling.takeDue()
        #expect(!withNothingHeld, "nothing held: nothing to settle")
        #expect(first)
        #expect(!second, "one look covers every disappearance until it runs")
        #expect(due == held)
        #expect(settling.scheduledFor == nil)

        typealias Next = RemovalSettling.Next
        // Still gone, the version it was asked for still held: removed now.
        #expect(RemovalSettling.next(afterLook: 1, scheduledFor: held, held: held, current: nil) == Next.reload)
        // Back with contents: read as it is (one change from the held version).
        #expect(RemovalSettling.next(afterLook: 1, scheduledFor: held, held: held, current: replaced) == .reload)
        // Gone again after a version that replaced it was read: looks of its own, from the first.
        #expect(RemovalSettling.next(afterLook: 3, scheduledFor: held, held: replaced, current: nil) == .look(1))
        // Created again and still empty: looked at again, up to the last look, then read as an empty domain.
        #expect(RemovalSettling.next(afterLook: 1, scheduledFor: held, held: held, current: empty) == .look(2))
        let last = RemovalSettling.looks
        #expect(
            RemovalSettling.next(afterLook: last - 1, scheduledFor: held, held: held, current: empty) == .look(last))
        #expect(RemovalSettling.next(afterLook: last, scheduledFor: held, held: held, current: empty) == .reload)
    }
}
