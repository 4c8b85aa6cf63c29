import Foundation
import LiveDefaultsTesting
import Logging
import Testing

@testable import LiveDefaults

/// What a process holds once (``ProcessContext``) is one value handed to every store: two contexts in one test
/// process behave as two processes on one machine, meeting only through the file system.
@Suite("One process context: two contexts are two processes")
struct ProcessContextTests {
    static let domain = "com.example.context"

    /// A store of the domain in `context`, on its file system and clock.
    static func store(in context: ProcessContext, clock: ManualDefaultsClock) throws -> Defaults {
        var configuration = Defaults.Configuration.rooted(at: "/home", applicationDomain: domain)
        configuration.context = context
        configuration.clock = clock
        configuration.logger = Logger(label: "context") { _ in SwiftLogNoOpLogHandler() }
        return try Defaults(configuration: configuration)
    }

    @Test("a store is in the real process's context unless its configuration names another")
    func systemByDefault() {
        let configuration = Defaults.Configuration.rooted(at: "/tmp/unused", applicationDomain: Self.domain)
        #expect(configuration.context === ProcessContext.system)
        #expect(configuration.fileSystem === ProcessContext.system.fileSystem)
        let memory = InMemoryFileSystem()
        var other = configuration
        other.context = ProcessContext(fileSystem: memory)
        #expect(other.fileSystem === memory, "a context's file system is its stores'")
    }

    @Test("stores of one context share a file; another context's store has its own and sees a write by polling")
    func twoContextsAreTwoProcesses() async throws {
        let memory = InMemoryFileSystem()
        let clock = ManualDefaultsClock()
        let first = ProcessContext(fileSystem: memory, clock: clock, pollInterval: .milliseconds(100))
        let second = ProcessContext(fileSystem: memory, clock: clock, pollInterval: .milliseconds(100))
        let writer = try Self.store(in: first, clock: clock)
        let sibling = try Self.store(in: first, clock: clock)
        let reader = try Self.store(in: second, clock: clock)
        // The reading process's watcher has registered the directory and made its first poll (polling starts
        // with one): from now on it looks only when the manual clock says. Twice: the registration, run by the
        // first wait, is what hands the first poll to the watcher's thread, after that wait's own job.
        second.watcher.settle()
        second.watcher.settle()
        let path = "/home/\(Self.domain).plist"

        writer.set(7, forKey: "Workers")
        #expect(sibling.integer(forKey: "Workers") == 7, "one process: one file, its edits seen at once")
        #expect(reader.object(forKey: "Workers") == nil, "another process sees nothing before it is on disk")
        try await writer.flush()
        #expect(reader.object(forKey: "Workers") == nil, "nor before its watcher looks")

        // The reading process's watcher polls its directory on the manual clock.
        let registryFile = second.storage.registry.file(
            atPath: path, clock: clock, fileSystem: memory, context: second.storage)
        let writerFile = first.storage.registry.file(
            atPath: path, clock: clock, fileSystem: memory, context: first.storage)
        #expect(registryFile !== writerFile, "each context keeps its own file of the path")
        second.watcher.settle()
        clock.advanceAndWait(by: .milliseconds(100))
        second.watcher.settle()
        registryFile.settle()
        #expect(reader.integer(forKey: "Workers") == 7)
        #expect(first.storage.registry !== second.storage.registry)
        #expect(first.storage.writer !== second.storage.writer)
    }

    @Test("the change log switch and the records belong to a context, not to the test process")
    func changeLogPerContext() async throws {
        let memory = InMemoryFileSystem()
        let clock = ManualDefaultsClock()
        let quiet = ProcessContext(fileSystem: memory, clock: clock)
        quiet.changeLogIsEnabled = false
        let logging = ProcessContext(fileSystem: memory, clock: clock)
        #expect(ProcessContext.system.changeLogIsEnabled && logging.changeLogIsEnabled)

        let unlogged = try Self.store(in: quiet, clock: clock)
        unlogged.set(1, forKey: "A")
        try await unlogged.flush()
        let logPath = ChangeLog.path(forDomainFile: "/home/\(Self.domain).plist")
        #expect(try memory.read(atPath: logPath) == nil, "the quiet context writes no change log")

        let logged = try Self.store(in: logging, clock: clock)
        logged.set(2, forKey: "A")
        try await logged.flush()
        logging.waitForRecords()
        let changes = logged.loggedChanges(inDomain: Self.domain)
        #expect(changes.map(\.key) == ["A"])
    }

    @Test("statfs goes through the file system: a network mount of an in-memory file system is polled")
    func remoteMountThroughTheSeam() throws {
        let memory = InMemoryFileSystem()
        try memory.createDirectories("/mnt/share/config", permissions: 0o755)
        try memory.createDirectories("/home", permissions: 0o755)
        memory.mount(type: 0x6969, at: "/mnt/share")
        #expect(RemoteFileSystem.name(ofFileSystemAt: "/mnt/share/config", on: memory) == "nfs")
        #expect(RemoteFileSystem.name(ofFileSystemAt: "/home", on: memory) == nil)
        #expect(RemoteFileSystem.name(ofFileSystemAt: "/no/such/path", on: memory) == nil)
        #expect(RemoteFileSystem.detector(setting: "inotify", on: memory)("/mnt/share/config") == nil)
        #expect(RemoteFileSystem.detector(setting: nil, on: memory)("/mnt/share/config") == "nfs")

        // A failed statfs is the file system's error, as any other call's.
        let faulty = FaultInjectingFileSystem(wrapping: memory)
        faulty.arm(.fail(errno: EIO), atCall: 1)
        #expect(throws: SystemError.self) { try faulty.fileSystemType(atPath: "/mnt/share") }
        #expect(faulty.calls == ["statfs /mnt/share"])
        #expect(RemoteFileSystem.name(ofFileSystemAt: "/mnt/share", on: faulty) == "nfs")
    }

    @Test("an open starts no records queue: its first look's record waits for the watcher's thread, or the exit")
    func firstLookRecordOffTheOpeningThread() async throws {
        let memory = InMemoryFileSystem()
        let clock = ManualDefaultsClock()
        let path = "/home/\(Self.domain).plist"
        // A log that records one version, then a version no LiveDefaults writer logged: a first look records it.
        let writer = DomainFile(path: path, clock: clock, context: StorageContext(fileSystem: memory))
        try writer.set(.integer(1), forKey: "A")
        try writer.commit()
        try memory.place(try PropertyList.dictionary(["A": 2]).encoded(as: .xml), at: path)
        let logPath = ChangeLog.path(forDomainFile: path)
        let logged = { ChangeLog.read(at: logPath, on: memory).entries.count }
        #expect(logged() == 1)

        // A store that does not watch: the request is kept until the next version or the recorder's drain.
        let quiet = ProcessContext(fileSystem: memory, clock: clock)
        var configuration = Defaults.Configuration.rooted(at: "/home", applicationDomain: Self.domain)
        configuration.context = quiet
        configuration.clock = clock
        configuration.watching = .off
        let unwatched = try Defaults(configuration: configuration)
        #expect(unwatched.integer(forKey: "A") == 2)
        #expect(quiet.storage.recorder.keptFirstLooks == 1)
        quiet.waitForRecords()
        #expect(quiet.storage.recorder.keptFirstLooks == 0)
        #expect(logged() == 2, "the version read is recorded once the records are drained")

        // A watching store's watcher hands it to the queue after the open.
        try memory.place(try PropertyList.dictionary(["A": 3]).encoded(as: .xml), at: path)
        let watching = ProcessContext(fileSystem: memory, clock: clock)
        let watched = try Self.store(in: watching, clock: clock)
        #expect(watched.integer(forKey: "A") == 3)
        watching.watcher.settle()
        #expect(watching.storage.recorder.keptFirstLooks == 0)
        watching.waitForRecords()
        #expect(logged() == 3)
    }
    @Test("a context's clock and process identity are its stores' and its records'")
    func clockAndIdentityPerContext() async throws {
        let memory = InMemoryFileSystem()
        let clock = ManualDefaultsClock()
        clock.advance(by: .seconds(1_000_000))
        // Another process of the machine: pid 1 runs, so its records are not taken for a dead process's.
        let other = ProcessContext(fileSystem: memory, clock: clock, pid: 1)
        var configuration = Defaults.Configuration.rooted(at: "/home", applicationDomain: Self.domain)
        configuration.context = other
        configuration.logger = Logger(label: "context") { _ in SwiftLogNoOpLogHandler() }
        #expect(configuration.clock === clock, "a store follows its context's clock unless given another")
        #expect(
            Defaults.Configuration.rooted(at: "/home", applicationDomain: Self.domain).clock
                === SystemDefaultsClock.shared)
        let store = try Defaults(configuration: configuration)
        let path = "/home/\(Self.domain).plist"

        store.set(1, forKey: "A")
        try await store.flush()
        let log = ChangeLog.read(at: ChangeLog.path(forDomainFile: path), on: memory)
        #expect(log.entries.map { $0.writer?.pid } == [1], "the change log names the context's process")

        // A corrupt file is kept aside under the context's process and clock.
        try memory.place(Data("not a plist".utf8), at: path)
        store.set(2, forKey: "A")
        try await store.flush()
        let kept = memory.namesInDirectory("/home").filter { $0.contains(".corrupt-") }
        #expect(kept == ["\(Self.domain).plist.corrupt-\(CurrentVersion.wholeSeconds(clock.now))-1"])

        // The readers' announcement is the context's process's, with its clock's time.
        other.watcher.settle()
        other.waitForRecords()
        let announced = try #require(
            try memory.read(atPath: ReaderAnnouncer.file(for: path, pid: 1)), "announced under pid 1")
        let announcement = try #require(ReaderAnnouncements.decode(announced.data))
        #expect(announcement.pid == 1 && announcement.start == CurrentProcess.startTime(of: 1))
        #expect(announcement.since == clock.now.timeIntervalSince1970)
        #expect(try memory.read(atPath: ReaderAnnouncer.file(for: path, pid: getpid())) == nil)
    }
}
