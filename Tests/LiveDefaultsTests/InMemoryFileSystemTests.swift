import Foundation
import LiveDefaultsTesting
import Testing

@testable import LiveDefaults

/// The in-memory file system answers as the system's does (the same errno for the same misuse), and keeps
/// exactly what its power-loss model says: what the fault suite's verdicts rest on.
@Suite("The in-memory and fault-injecting file systems")
struct InMemoryFileSystemTests {
    /// The errno `body` fails with (nil: it did not fail; -1: it failed with no errno).
    static func errno(_ body: () throws -> Void) -> Int32? {
        do {
            try body()
            return nil
        } catch {
            return (error as? SystemError)?.errno ?? -1
        }
    }

    @Test("the same calls on the system's file system and in memory give the same results and errno values")
    func agreesWithTheSystem() throws {
        let directory = TemporaryDirectory()
        let memory = InMemoryFileSystem()
        try memory.createDirectories(directory.path)
        for fileSystem in [SystemFileSystem.shared, memory] as [any DefaultsFileSystem] {
            let name = "\(fileSystem)"
            let file = directory.file("a.plist")
            #expect(try fileSystem.read(atPath: file) == nil, "\(name)")
            let stamp = try fileSystem.replaceAtomically(file, with: Data("one".utf8))
            #expect(try fileSystem.read(atPath: file)?.data == Data("one".utf8), "\(name)")
            #expect(try fileSystem.stamp(atPath: file) == stamp, "\(name)")
            let second = try fileSystem.replaceAtomically(file, with: Data("two!".utf8))
            #expect(second.inode != stamp.inode && second.size == 4, "\(name): a replacement is a new file")
            try fileSystem.append(Data("x\n".utf8), toPath: directory.file("log"))
            try fileSystem.append(Data("y\n".utf8), toPath: directory.file("log"))
            #expect(fileSystem.readTail(atPath: directory.file("log"), maximumBytes: 3) == Data("y\n".utf8), "\(name)")
            #expect(
                Self.errno { _ = try fileSystem.open(file, [.writeOnly, .create, .exclusive], permissions: 0o600) }
                    == EEXIST)
            #expect(
                Self.errno {
                    _ = try fileSystem.open(directory.file("none/x"), [.create, .writeOnly], permissions: 0o600)
                } == ENOENT)
            #expect(Self.errno { try fileSystem.unlink(directory.file("missing")) } == ENOENT)
            #expect(Self.errno { try fileSystem.makeDirectory(directory.path, permissions: 0o700) } == EEXIST)
            #expect(Self.errno { _ = try fileSystem.open(file, .directory, permissions: 0) } == ENOTDIR)
            #expect(fileSystem.isDirectory(directory.path) && !fileSystem.isDirectory(file), "\(name)")
            #expect(fileSystem.namesInDirectory(directory.path).sorted() == ["a.plist", "log"], "\(name)")
            // flock: a second holder is refused while the first holds it, and gets it once it is closed.
            let first = try fileSystem.lockExclusively(directory.file(".lock"))
            #expect(fileSystem.lockExclusivelyIfFree(directory.file(".lock")) == nil, "\(name)")
            fileSystem.close(first)
            let second2 = try #require(fileSystem.lockExclusivelyIfFree(directory.file(".lock")))
            fileSystem.close(second2)
            try fileSystem.remove(directory.file("log"))
            try fileSystem.remove(directory.file(".lock"))
            try fileSystem.remove(file)
            #expect(fileSystem.namesInDirectory(directory.path).isEmpty, "\(name)")
        }
    }

    @Test("symbolic links resolve as the kernel resolves them; a loop is ELOOP")
    func links() throws {
        let memory = InMemoryFileSystem()
        try memory.place(Data("v".utf8), at: "/srv/volume/..2026/a.plist")
        try memory.link("/srv/volume/..data", to: "..2026")
        try memory.link("/etc/config/a.plist", to: "/srv/volume/..data/a.plist")
        #expect(memory.contents(atPath: "/etc/config/a.plist") == Data("v".utf8))
        #expect(try memory.checkedIsSymbolicLink("/etc/config/a.plist"))
        #expect(try memory.readLink("/srv/volume/..data") == "..2026")
        let chain = SymlinkChain.resolve("/etc/config/a.plist", on: memory)
        #expect(chain.links == ["/etc/config/a.plist", "/srv/volume/..data"])
        #expect(chain.target == "/srv/volume/..2026/a.plist")
        try memory.link("/loop/a", to: "/loop/b")
        try memory.link("/loop/b", to: "/loop/a")
        #expect(Self.errno { _ = try memory.open("/loop/a", .readOnly, permissions: 0) } == ELOOP)
    }

    @Test("power loss keeps flushed data and entries, and any prefix of the unflushed changes")
    func powerLoss() throws {
        let memory = InMemoryFileSystem()
        try memory.place(Data("old".utf8), at: "/d/file")
        #expect(memory.powerLossOutcomeCount == 1, "everything placed is flushed")
        // A temporary file written and renamed over, neither flushed: the rename (one change) may be kept or
        // not, the creation before it too, and the new file's data may be lost.
        let descriptor = try memory.open("/d/.file.tmp", [.writeOnly, .create, .exclusive], permissions: 0o600)
        _ = try Data("new".utf8).withUnsafeBytes { try memory.write(descriptor, from: $0) }
        memory.close(descriptor)
        try memory.rename("/d/.file.tmp", to: "/d/file")
        let found = Set(memory.powerLossOutcomes().map { $0.contents(atPath: "/d/file") })
        #expect(found == [Data("old".utf8), Data("new".utf8), Data()], "old, new, or new's name with no data")
        #expect(memory.powerLossOutcomeCount == 3 * 2)
        // With the data flushed before the rename and the directory after it, only the new version is left.
        let flushed = InMemoryFileSystem()
        try flushed.place(Data("old".utf8), at: "/d/file")
        _ = try flushed.replaceAtomically("/d/file", with: Data("new".utf8))
        #expect(Set(flushed.powerLossOutcomes().map { $0.contents(atPath: "/d/file") }) == [Data("new".utf8)])
        // Without the directory's flush the old version may come back; never a mix.
        let unflushedRename = InMemoryFileSystem()
        try unflushedRename.place(Data("old".utf8), at: "/d/file")
        _ = try unflushedRename.replaceAtomically("/d/file", with: Data("new".utf8), flush: false)
        let outcomes = Set(unflushedRename.powerLossOutcomes().map { $0.contents(atPath: "/d/file") })
        #expect(
            outcomes.contains(Data("old".utf8)) && outcomes.isSubset(of: [Data("old".utf8), Data("new".utf8), Data()]))
    }

    @Test("the fault injector fails the call it is armed at, or stops every call from it and frees the locks")
    func injector() throws {
        let memory = InMemoryFileSystem()
        let faulty = FaultInjectingFileSystem(wrapping: memory)
        faulty.arm(.fail(errno: ENOSPC), atCall: 2)
        #expect(Self.errno { _ = try faulty.replaceAtomically("/f", with: Data("a".utf8)) } == ENOSPC)
        #expect(faulty.calls.prefix(2).map { $0.split(separator: " ")[0] } == ["open", "write"])
        #expect(memory.namesInDirectory("/").isEmpty, "the temporary file is removed after a failed write")
        // EINTR is retried by the helpers: the write goes through.
        faulty.arm(.fail(errno: EINTR), atCall: 2)
        _ = try faulty.replaceAtomically("/f", with: Data("b".utf8))
        #expect(memory.contents(atPath: "/f") == Data("b".utf8))
        // A stop: the lock the stopped writer held is released, and nothing it does afterwards arrives.
        faulty.resetCount()
        let held = try faulty.lockExclusively("/.lock")
        faulty.arm(.stop, atCall: 1)
        #expect(Self.errno { try faulty.unlink("/f") } == EIO)
        #expect(faulty.hasStopped)
        #expect(memory.contents(atPath: "/f") == Data("b".utf8))
        let other = try #require(memory.lockExclusivelyIfFree("/.lock"), "the stopped writer's lock was freed")
        memory.close(other)
        faulty.close(held)
        #expect(memory.openDescriptorCount == 0)
    }
}
