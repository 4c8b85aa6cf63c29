import Foundation
import Glibc
import LiveDefaultsTesting
import PlistOracle
import TestProcesses
import Testing

@testable import LiveDefaults

@Suite("Persistence: without synchronize(), safe across processes, nothing lost", .blockingWork)
struct PersistenceTests {
    @Test("A write is visible at once and reaches the disk by itself, as XML Python can read")
    func writeBehind() throws {
        let directory = TemporaryDirectory()
        let clock = ManualDefaultsClock()
        let defaults = try directory.store("com.example.behind", clock: clock)
        defaults.set(42, forKey: "Answer")
        defaults.set(["a", "b"] as Any, forKey: "List")
        #expect(defaults.integer(forKey: "Answer") == 42)
        let path = directory.file("com.example.behind.plist")
        #expect(!FileManager.default.fileExists(atPath: path), "written behind, when the store's clock says")
        clock.advanceAndWait(by: .seconds(1))
        #expect(try pythonPlist(path) == #"{"Answer": 42, "List": ["a", "b"]}"#)
        let bytes = try String(contentsOfFile: path, encoding: .utf8)
        #expect(bytes.hasPrefix("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE plist"))
    }

    @Test("Files are 0600 and the directories the store creates 0700")
    func permissions() throws {
        let directory = TemporaryDirectory()
        let root = directory.file("nested/config")
        let defaults = try Defaults(configuration: .rooted(at: root, applicationDomain: "com.example.modes"))
        defaults.set(1, forKey: "A")
        try defaults.trySet(1, forKey: "B", inDomain: "com.example.modes", layer: .currentUserCurrentHost)
        #expect(defaults.synchronize())
        #expect(try Self.mode(root + "/com.example.modes.plist") == 0o600)
        #expect(try Self.mode(root + "/ByHost/com.example.modes..plist") == 0o600)
        #expect(try Self.mode(root) == 0o700)
        #expect(try Self.mode(directory.file("nested")) == 0o700)
        #expect(try Self.mode(root + "/ByHost") == 0o700)
    }

    @Test("A binary file stays binary, and keys written by others survive")
    func binaryStaysBinary() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("com.example.binary.plist")
        try Self.python(
            "import plistlib; plistlib.dump({'Old': 1, 'Name': 'x'}, open('\(path)', 'wb'), fmt=plistlib.FMT_BINARY)")
        let defaults = try directory.store("com.example.binary")
        #expect(defaults.integer(forKey: "Old") == 1)
        defaults.set(2, forKey: "New")
        defaults.removeObject(forKey: "Name")
        #expect(defaults.synchronize())
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(data.starts(with: Array("bplist00".utf8)))
        #expect(try pythonPlist(path) == #"{"New": 2, "Old": 1}"#)
    }

    @Test("synchronize() and flush() return with everything on disk")
    func synchronizeAndFlush() async throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store("com.example.flush")
        let path = directory.file("com.example.flush.plist")
        for index in 0..<100 { defaults.set(index, forKey: "K\(index)") }
        #expect(defaults.synchronize())
        #expect(try pythonPlist(path, expression: "len(d)") == "100")
        defaults.set("after", forKey: "Last")
        try await defaults.flush()
        #expect(try pythonPlist(path, expression: "d['Last']") == #""after""#)
    }

    @Test("synchronize() picks up what another process wrote")
    func synchronizeReads() throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store("com.example.other-writer")
        #expect(defaults.object(forKey: "W0") == nil)
        #expect(try runHelper(["write-keys", directory.path, "com.example.other-writer", "W", "3"]).status == 0)
        defaults.synchronize()
        #expect(defaults.integer(forKey: "W2") == 2)
    }

    @Test("Four processes writing 200 different keys each at once: all 800 survive")
    func concurrentWriters() throws {
        let directory = TemporaryDirectory()
        let domain = "com.example.concurrent"
        // This process writes too, through its own cache, while the others run.
        let defaults = try directory.store(domain)
        let processes = try (0..<4).map { index in
            try helperProcess(["write-keys", directory.path, domain, "P\(index)-", "200"])
        }
        for process in processes { try process.run() }
        for index in 0..<50 { defaults.set(index, forKey: "Local-\(index)") }
        for process in processes { process.waitUntilExit() }
        #expect(processes.allSatisfy { $0.terminationStatus == 0 })
        #expect(defaults.synchronize())
        let path = directory.file("\(domain).plist")
        #expect(try pythonPlist(path, expression: "len(d)") == "850")
        #expect(try pythonPlist(path, expression: "sorted(set(d[k] for k in d if k.startswith('P3-')))[-1]") == "199")
        #expect(defaults.integer(forKey: "P2-150") == 150)
        #expect(defaults.dictionaryRepresentationValues().count == 850)
    }

    @Test("A writer killed with SIGKILL never leaves a torn file, and its temporaries are swept")
    func killedWriter() throws {
        let directory = TemporaryDirectory()
        let domain = "com.example.killed"
        let path = directory.file("\(domain).plist")
        var killedWhileWriting = 0
        for round in 0..<8 {
            let process = try helperProcess(["write-forever", directory.path, domain, "Payload"])
            let pipe = Pipe()
            process.standardOutput = pipe
            try process.run()
            _ = pipe.fileHandleForReading.availableData  // "ready": its first write is on disk
            #expect(FileManager.default.fileExists(atPath: path))
            RealTime.pause(blocking: .microseconds(3_000 + round * 7_000))
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            #expect(process.terminationReason == .uncaughtSignal)
            let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            if names.contains(where: { $0.contains(".tmp-") }) { killedWhileWriting += 1 }
            // The file is always a whole version: a round number, a colon and the full 64 KiB payload.
            let value = try pythonPlist(path, expression: "d['Payload'].split(':')[1] == 'x' * 65536")
            #expect(value == "true", "round \(round)")
        }
        // The next writer removes what killed writers left behind.
        let defaults = try directory.store(domain)
        defaults.set("done", forKey: "Payload")
        #expect(defaults.synchronize())
        let left = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.contains(".tmp-") }
        #expect(left.isEmpty)
        #expect(defaults.string(forKey: "Payload") == "done")
        // Not a guarantee (timing), but worth knowing when the test is read: how often a kill hit a write.
        print("killed mid-write in \(killedWhileWriting) of 8 rounds")
    }

    @Test("A corrupt file is reported, kept aside, never overwritten; the domain reads empty")
    func corruptFile() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("com.example.corrupt.plist")
        let garbage = "<?xml version=\"1.0\"?><plist><dict><key>A</key><integer>1</inte"
        try directory.write("com.example.corrupt.plist", garbage)
        let errors = Lock<[DefaultsError]>([])
        var configuration = Defaults.Configuration.rooted(at: directory.path, applicationDomain: "com.example.corrupt")
        configuration.errorHandler = { error in errors.withLock { $0.append(error) } }
        let defaults = try Defaults(configuration: configuration)
        #expect(defaults.object(forKey: "A") == nil)
        let first = try #require(errors.withLock { $0.first })
        guard first.code == .corruptFile, first.keptAs == nil, let reported = first.path else {
            Issue.record("expected corruptFile, got \(first)")
            return
        }
        #expect(reported == path)
        #expect("\(first)".contains(path))
        // Reading did not touch it.
        #expect(try String(contentsOfFile: path, encoding: .utf8) == garbage)

        defaults.set(2, forKey: "B")
        #expect(defaults.synchronize())
        let kept = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .filter { $0.hasPrefix("com.example.corrupt.plist.corrupt-") }
        #expect(kept.count == 1)
        #expect(try String(contentsOfFile: directory.file(kept[0]), encoding: .utf8) == garbage)
        #expect(try pythonPlist(path) == #"{"B": 2}"#)
        let keptError = errors.withLock { $0.last }
        if let keptError, keptError.code == .corruptFile, let keptAs = keptError.keptAs {
            #expect(keptAs == directory.file(kept[0]))
        } else {
            Issue.record("expected a corruptFile error naming the kept file, got \(String(describing: keptError))")
        }
        #expect(!defaults.persistentDomainNames.contains { $0.contains("corrupt-") })
    }

    @Test("A file whose top level is not a dictionary is reported and kept aside too")
    func notADictionary() throws {
        let directory = TemporaryDirectory()
        try directory.write("com.example.array.plist", try Self.xml(["not", "a", "dictionary"]))
        let errors = Lock<[DefaultsError]>([])
        var configuration = Defaults.Configuration.rooted(at: directory.path, applicationDomain: "com.example.array")
        configuration.errorHandler = { error in errors.withLock { $0.append(error) } }
        let defaults = try Defaults(configuration: configuration)
        #expect(
            errors.withLock { $0 } == [.notADictionary(path: directory.file("com.example.array.plist"), found: "array")]
        )
        defaults.set(1, forKey: "A")
        #expect(defaults.synchronize())
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: directory.path).contains {
                $0.hasPrefix("com.example.array.plist.corrupt-")
            })
    }

    @Test("A failed write is reported, kept in memory, and retried with the next edit (on the seam)")
    func failedWrite() throws {
        // In memory, on a manual clock: the retry is the background writer's, run when the clock says so.
        let fileSystem = InMemoryFileSystem()
        // The store's directory lies below a regular file: every write fails with ENOTDIR.
        try fileSystem.place(Data("not a directory".utf8), at: "/home/u/blocker")
        let root = "/home/u/blocker/config"
        let clock = ManualDefaultsClock()
        let errors = Lock<[DefaultsError]>([])
        var configuration = Defaults.Configuration.rooted(at: root, applicationDomain: "com.example.fails")
        configuration.errorHandler = { error in errors.withLock { $0.append(error) } }
        configuration.fileSystem = fileSystem
        configuration.clock = clock
        let defaults = try Defaults(configuration: configuration)
        defaults.set("kept", forKey: "Value")
        #expect(!defaults.synchronize())
        #expect(defaults.string(forKey: "Value") == "kept")
        guard let failure = defaults.lastError, failure.code == .writeFailed, let path = failure.path,
            let code = failure.errno
        else {
            Issue.record("expected writeFailed, got \(String(describing: defaults.lastError))")
            return
        }
        #expect(path == root + "/com.example.fails.plist")
        #expect(code == ENOTDIR)
        #expect(errors.withLock { $0.contains { $0.code == .writeFailed } })
        // Fix the cause; the edit was never dropped.
        try fileSystem.place(nil, at: "/home/u/blocker")
        // The next edit schedules the background writer again, which writes the kept edit with it: no
        // synchronize() needed.
        defaults.set("later", forKey: "Other")
        let file = root + "/com.example.fails.plist"
        #expect(fileSystem.contents(atPath: file) == nil, "nothing is written before the writer's delay")
        clock.advanceAndWait(by: BackgroundWriter.delay)
        let written = try #require(
            fileSystem.contents(atPath: file), "the background writer retried after the next edit")
        #expect(try PropertyList.decode(written).value == .dictionary(["Other": "later", "Value": "kept"]))
        #expect(defaults.synchronize())
    }

    @Test("The first look opens each file without a stat first: present, absent, below a file, a directory")
    func firstLook() throws {
        let directory = TemporaryDirectory()
        // Present: read whole, and its stamp is that of the version read (a write elsewhere is seen as new).
        try directory.write("com.example.present.plist", "{ A = 1; }")
        let present = try directory.store("com.example.present")
        #expect(present.integer(forKey: "A") == 1)
        #expect(present.lastError == nil)
        // Absent, and below a regular file (ENOTDIR): both an empty domain, neither an error.
        #expect(try directory.store("com.example.absent").dictionaryRepresentation().isEmpty)
        try directory.write("blocker", "not a directory")
        let below = try Defaults(
            configuration: .rooted(at: directory.file("blocker"), applicationDomain: "com.example.below"))
        #expect(below.dictionaryRepresentation().isEmpty)
        #expect(below.lastError == nil)
        // A directory where the file should be: opened, its read fails (EISDIR), reported, nothing invented.
        try FileManager.default.createDirectory(
            atPath: directory.file("com.example.folder.plist"), withIntermediateDirectories: false)
        let folder = try directory.store("com.example.folder")
        #expect(folder.object(forKey: "A") == nil)
        #expect(folder.lastError?.code == .readFailed)
        #expect(folder.lastError?.errno == EISDIR)
        // Replaced by a file, it is read like any change.
        try FileManager.default.removeItem(atPath: directory.file("com.example.folder.plist"))
        try directory.write("com.example.folder.plist", "{ A = 2; }")
        folder.synchronize()
        #expect(folder.integer(forKey: "A") == 2)
    }

    @Test("Foundation.UserDefaults in another process: it writes, we read; we write, it reads")
    func foundationInterop() throws {
        let directory = TemporaryDirectory()
        let environment = ["XDG_CONFIG_HOME": directory.path]
        let domain = "com.example.foundation"
        #expect(
            try runHelper(
                [
                    "foundation-write", directory.path, domain, "FromFoundation",
                    #"{"n": 3, "s": "é", "l": [1, 2.5, true]}"#,
                ], environment: environment
            ).status == 0)
        #expect(
            try runHelper(["foundation-write", directory.path, domain, "Flag", "true"], environment: environment).status
                == 0)
        let defaults = try directory.store(domain)
        #expect(defaults.value(forKey: "FromFoundation") == ["n": 3, "s": "é", "l": [1, 2.5, true]])
        #expect(defaults.bool(forKey: "Flag"))

        defaults.set("from LiveDefaults", forKey: "FromUs")
        defaults.set(["k": [1, 2]] as Any, forKey: "Nested")
        defaults.set(7.5, forKey: "Real")
        #expect(defaults.synchronize())
        func foundationRead(_ key: String) throws -> String {
            let (status, output) = try runHelper(
                ["foundation-read", directory.path, domain, key], environment: environment)
            #expect(status == 0)
            return output.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        #expect(try foundationRead("FromUs") == #""from LiveDefaults""#)
        #expect(try foundationRead("Nested") == #"{"k":[1,2]}"#)
        #expect(try foundationRead("Real") == "7.5")
        #expect(try foundationRead("FromFoundation") == #"{"l":[1,2.5,true],"n":3,"s":"é"}"#)

        // The global domain file is shared too: Foundation searches it for every domain.
        try defaults.trySet(1, forKey: "Everywhere", inDomain: Defaults.globalDomain, layer: .currentUser)
        #expect(defaults.synchronize())
        #expect(FileManager.default.fileExists(atPath: directory.file(".GlobalPreferences.plist")))
        #expect(try foundationRead("Everywhere") == "1")
    }

    static func mode(_ path: String) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return (attributes[.posixPermissions] as? Int ?? -1) & 0o777
    }

    static func xml(_ value: PropertyList) throws -> String {
        String(decoding: try value.encoded(as: .xml), as: UTF8.self)
    }

    static func python(_ script: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script]
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
    }

    @Test("The registry of open files forgets a file when it goes, and shares the ones alive")
    func registryScales() {
        let registry = DomainFileRegistry()
        // Many files alive at once (a process watching thousands of domains).
        let live = (0..<20_000).map { registry.file(atPath: "/nonexistent/live/\($0).plist") }
        #expect(registry.count == 20_000)
        // Files opened and dropped: the registry keeps nothing of them.
        let small = DomainFileRegistry()
        let kept = (0..<10).map { small.file(atPath: "/nonexistent/kept/\($0).plist") }
        for index in 0..<10_000 { _ = small.file(atPath: "/nonexistent/dropped/\(index).plist") }
        #expect(small.count == 10)
        #expect(small.file(atPath: "/nonexistent/kept/3.plist") === kept[3], "a live file is shared")
        // A path opened again after its file went gets a new file, and forgetting the old one keeps it.
        func openAgain() {
            let again = small.file(atPath: "/nonexistent/dropped/7.plist")
            #expect(small.count == 11)
            withExtendedLifetime(again) {}
        }
        openAgain()
        #expect(small.count == 10)
        withExtendedLifetime(live) {}
    }
}
