import Foundation
import Testing

@testable import LiveDefaults
@testable import LiveDefaultsTesting

/// Whether a process runs is its context's question (``ProcessTable``): what a dead process left — a reader's
/// announcement, a write's temporary — is skipped and swept by the context's answer, and what a context's process
/// leaves carries the context's process id. In memory, with a table of the test's own: no real process is asked.
@Suite("The process table: which processes run is the context's answer")
struct ProcessTableTests {
    /// Processes that run, by id, with their start times; the test starts and ends them.
    final class Processes: ProcessTable, @unchecked Sendable {
        // @unchecked: `running` is only touched under `lock`.
        private let lock = NSLock()
        private var running: [Int32: UInt64] = [:]

        func start(_ pid: Int32, at start: UInt64) { lock.withLock { running[pid] = start } }
        func end(_ pid: Int32) { lock.withLock { _ = running.removeValue(forKey: pid) } }
        func isRunning(_ pid: Int32) -> Bool { lock.withLock { running[pid] != nil } }
        func startTime(of pid: Int32) -> UInt64? { lock.withLock { running[pid] } }
    }

    static let domain = "com.example.processes"

    /// A store of `domain` below `/home` in a context of its own: process `pid` among `processes`.
    static func store(
        pid: Int32, processes: Processes, fileSystem: any DefaultsFileSystem
    ) throws -> Defaults {
        var configuration = Defaults.Configuration.rooted(at: "/home", applicationDomain: domain)
        configuration.context = ProcessContext(
            fileSystem: fileSystem, clock: ManualDefaultsClock(), pid: pid, processes: processes)
        configuration.watching = .off
        return try Defaults(configuration: configuration)
    }

    /// Places process `pid`'s announcement (started at `start`) for the domain's file.
    static func announce(_ pid: Int32, start: UInt64, on memory: InMemoryFileSystem) throws -> String {
        let path = "/home/\(domain).plist"
        let name =
            ReaderAnnouncements.directory(forDomainFile: path) + "/"
            + ReaderAnnouncements.name(forDomainFile: path, pid: pid)
        let announcement = ReaderAnnouncement(
            pid: pid, start: start, executable: "reader\(pid)", applied: 0, since: 0, refused: nil)
        try memory.place(ReaderAnnouncements.encode(announcement), at: name)
        return name
    }

    @Test("readers are the announcements of processes the table runs, with the start they announced")
    func readersByTheTable() throws {
        let memory = InMemoryFileSystem()
        let processes = Processes()
        processes.start(4242, at: 77)
        processes.start(4343, at: 88)
        let defaults = try Self.store(pid: 4242, processes: processes, fileSystem: memory)
        _ = try Self.announce(4242, start: 77, on: memory)
        let other = try Self.announce(4343, start: 88, on: memory)
        let reused = try Self.announce(4444, start: 99, on: memory)
        processes.start(4444, at: 100)  // the id runs, but another process: started later than it announced
        #expect(defaults.readers().map(\.processID) == [4242, 4343])
        #expect(try memory.read(atPath: reused) == nil, "a reused id's announcement is a dead process's")

        processes.end(4343)
        #expect(defaults.readers().map(\.executable) == ["reader4242"])
        #expect(try memory.read(atPath: other) == nil, "an ended process's announcement is taken away")
        processes.end(4242)
        #expect(defaults.readers().isEmpty)
    }

    @Test("a write sweeps the temporaries of processes the table has not running, names its own by its pid")
    func temporariesByTheTable() throws {
        let memory = InMemoryFileSystem()
        let recorded = FaultInjectingFileSystem(wrapping: memory)
        let processes = Processes()
        processes.start(4242, at: 1)
        processes.start(5555, at: 2)
        try memory.place(Data("a killed writer's".utf8), at: "/home/.\(Self.domain).plist.tmp-4343-1")
        try memory.place(Data("a running writer's".utf8), at: "/home/.\(Self.domain).plist.tmp-5555-2")
        let defaults = try Self.store(pid: 4242, processes: processes, fileSystem: recorded)
        recorded.resetCount()
        defaults.set(1, forKey: "Key")
        try defaults.trySynchronize()

        let names = Set(memory.namesInDirectory("/home"))
        #expect(!names.contains(".\(Self.domain).plist.tmp-4343-1"), "\(names)")
        #expect(names.contains(".\(Self.domain).plist.tmp-5555-2"), "\(names)")
        #expect(names.contains("\(Self.domain).plist"))
        let temporaries = recorded.calls.filter { $0.contains(".tmp-") && $0.hasPrefix("open") }
        #expect(!temporaries.isEmpty && temporaries.allSatisfy { $0.contains(".tmp-4242-") }, "\(recorded.calls)")
    }
}
