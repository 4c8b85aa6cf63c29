import Foundation
import Glibc
import LiveDefaultsTesting
import TestProcesses
import Testing

@testable import LiveDefaults

/// Directories of one file per key (``Defaults/Configuration/keyFileDirectories``): a ConfigMap's keys, a
/// credentials directory. Below the application domain's files, typed by the schema, hostile entries reported;
/// a Kubernetes volume's update (the kubelet's atomic writer, a real second process) arrives as one version.
@Suite("Key files: a directory of one file per key, below the domain's files", .blockingWork)
struct KeyFileLayerTests {
    static let domain = "com.example.keyfiles"

    let directory = TemporaryDirectory()
    let errors = Lock<[DefaultsError]>([])

    func store(_ directories: [String], watching: Bool = false) throws -> Defaults {
        var configuration = Defaults.Configuration.rooted(at: directory.path, applicationDomain: Self.domain)
        configuration.keyFileDirectories = directories
        if !watching {
            configuration.watching = .off
            configuration.clock = ManualDefaultsClock()
        }
        configuration.errorHandler = { [errors] error in errors.withLock { $0.append(error) } }
        return try Defaults(configuration: configuration)
    }

    func write(_ text: String, to path: String) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    }

    var reported: [String] {
        errors.withLock { $0.filter { $0.code == .keyFileIgnored }.map(\.description) }
    }

    @Test("each regular file is a key; hidden files are not; the domain's file beats it, it beats the global domain")
    func plainDirectory() throws {
        let keys = directory.file("keys")
        try FileManager.default.createDirectory(atPath: keys, withIntermediateDirectories: true)
        try write("200\n", to: keys + "/RateLimit")
        try write("dark", to: keys + "/Theme")
        try write("(a, b)", to: keys + "/Hosts")
        try write("hidden", to: keys + "/.Hidden")
        try write("from the key file", to: keys + "/Greeting")
        try PropertyList.dictionary(["Greeting": "from the domain"]).encoded(as: .xml).write(
            to: URL(fileURLWithPath: directory.file("\(Self.domain).plist")))
        try PropertyList.dictionary(["Theme": "global"]).encoded(as: .xml).write(
            to: URL(fileURLWithPath: directory.file(".GlobalPreferences.plist")))
        let defaults = try store([keys])
        defaults.register(defaults: ["RateLimit": 1])
        #expect(defaults.integer(forKey: "RateLimit") == 200)
        #expect(defaults.string(forKey: "Theme") == "dark")
        #expect(defaults.value(forKey: "Hosts") == .array(["a", "b"]))
        #expect(defaults.value(forKey: ".Hidden") == nil)
        #expect(defaults.string(forKey: "Greeting") == "from the domain")
        #expect(defaults.source(ofKey: "RateLimit") == .keyFile(path: keys + "/RateLimit"))
        #expect(defaults.volatileDomainValues(forName: Defaults.keyFileDomain)["Theme"] == "dark")
        // A write to the domain overrides the deployment's base.
        defaults.set(5, forKey: "RateLimit")
        #expect(defaults.integer(forKey: "RateLimit") == 5)
        #expect(reported.isEmpty, "\(reported)")
    }

    @Test("the first directory that has a key wins; the schema types and checks each file")
    func orderAndSchema() throws {
        let first = directory.file("first")
        let second = directory.file("second")
        for path in [first, second] {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        }
        try write("1", to: first + "/Port")
        try write("2", to: second + "/Port")
        try write("3", to: second + "/Other")
        try write("many", to: first + "/Count")
        try DomainSchema(
            domain: Self.domain,
            keys: [KeySchema(name: "Port", type: .integer), KeySchema(name: "Count", type: .integer)]
        ).write(to: directory.file("Schemas"))
        let defaults = try store([first, second])
        #expect(defaults.value(forKey: "Port") == .integer(1))
        #expect(defaults.value(forKey: "Other") == .string("3"))
        #expect(defaults.value(forKey: "Count") == nil)
        #expect(defaults.synchronize())
        #expect(reported.count == 1 && reported[0].contains("\"many\" is not an integer"), "\(reported)")
    }

    @Test("hostile entries are reported, never a trap or a hang: a FIFO, a directory, a huge file, a loop, odd names")
    func hostileEntries() throws {
        let keys = directory.file("keys")
        try FileManager.default.createDirectory(atPath: keys + "/subdirectory", withIntermediateDirectories: true)
        #expect(mkfifo(keys + "/Fifo", 0o600) == 0)
        try Data(count: EnvironmentLayer.maximumFileSize + 1).write(to: URL(fileURLWithPath: keys + "/Huge"))
        try FileManager.default.createSymbolicLink(atPath: keys + "/Loop", withDestinationPath: keys + "/Loop")
        try FileManager.default.createSymbolicLink(atPath: keys + "/Dangling", withDestinationPath: keys + "/nowhere")
        try Data([0xff, 0xfe]).write(to: URL(fileURLWithPath: keys + "/Binary"))
        try write("spaces", to: keys + "/with spaces and = signs")
        try write("unicode", to: keys + "/Schlüssel")
        try write("", to: keys + "/Empty")
        let defaults = try store([keys])
        for key in ["Fifo", "Huge", "Loop", "Dangling", "Binary", "subdirectory"] {
            #expect(defaults.value(forKey: key) == nil, "\(key)")
        }
        #expect(defaults.string(forKey: "with spaces and = signs") == "spaces")
        #expect(defaults.string(forKey: "Schlüssel") == "unicode")
        #expect(defaults.string(forKey: "Empty") == "")
        #expect(defaults.synchronize())
        let reports = reported
        #expect(reports.count == 6, "\(reports)")
        for (name, words) in [
            ("Fifo", "is not a regular file"), ("Huge", "more than the"), ("Loop", "cannot be read"),
            ("Dangling", "does not exist"), ("Binary", "is not UTF-8 text"), ("subdirectory", "is not a regular file"),
        ] {
            #expect(reports.contains { $0.contains("\(keys)/\(name)") && $0.contains(words) }, "\(name): \(reports)")
        }
        // A directory that does not exist is an empty layer.
        let missing = try store([directory.file("absent")])
        #expect(missing.volatileDomainValues(forName: Defaults.keyFileDomain).isEmpty)
    }

    @Test("a ConfigMap volume's update arrives as one version: over 500 swaps of three keys, never two versions mixed")
    func configMapSwaps() async throws {
        let volume = KubeletVolume(path: directory.file("configmap"))
        try volume.update(["A": "0", "B": "0", "C": "0"])
        let defaults = try store([volume.path], watching: true)
        #expect(defaults.string(forKey: "A") == "0")
        let mixed = Lock<[String]>([])
        let done = Lock(false)
        // A reader taking the effective values as a whole, as fast as it can, while the kubelet swaps.
        let reader = Thread {
            while !done.withLock({ $0 }) {
                let values = defaults.dictionaryRepresentationValues()
                let seen = [values["A"], values["B"], values["C"]]
                if Set(seen).count != 1 {
                    let text = seen.map { $0.map { "\($0)" } ?? "nil" }.joined(separator: "/")
                    mixed.withLock { if $0.count < 10 && $0.last != text { $0.append(text) } }
                }
            }
        }
        reader.start()
        // The kubelet's atomic writer, 500 updates in one process.
        try volume.numberedUpdates(500, keys: ["A", "B", "C"])
        #expect(await waitForValue(defaults, "A") { $0 == "500" })
        done.withLock { $0 = true }
        let values = defaults.dictionaryRepresentationValues()
        #expect([values["A"], values["B"], values["C"]] == ["500", "500", "500"])
        #expect(mixed.withLock { $0 }.isEmpty, "A/B/C seen from different updates: \(mixed.withLock { $0 })")
        #expect(reported.isEmpty, "\(reported)")
    }

    /// A volume on an in-memory file system whose kubelet swaps `..data` to a new update right before the layer
    /// opens a key file, while `swapsLeft` lasts: a read swapped under every attempt.
    final class SwappedVolume: Sendable {
        let memory = InMemoryFileSystem()
        let path = "/volume"
        let generation = Lock(0)
        let swapsLeft = Lock(0)
        var fileSystem: FaultInjectingFileSystem {
            FaultInjectingFileSystem(wrapping: memory, recordsCalls: false) { [self] call, subject in
                guard call == "open", subject.hasSuffix("/B"),
                    swapsLeft.withLock({ left in
                        defer { left = max(0, left - 1) }
                        return left > 0
                    })
                else { return }
                swap()
            }
        }

        /// The kubelet's update: A, B and C of the next generation in a directory of their own, `..data` swapped to
        /// it, the old directory's files removed.
        func swap() {
            let next = generation.withLock { generation in
                generation += 1
                return generation
            }
            for name in ["A", "B", "C"] { try? memory.place(Data("\(next)".utf8), at: "\(path)/..\(next)/\(name)") }
            try? memory.link("\(path)/..data_tmp", to: "..\(next)")
            try? memory.rename("\(path)/..data_tmp", to: "\(path)/..data")
            for name in ["A", "B", "C"] { try? memory.unlink("\(path)/..\(next - 1)/\(name)") }
        }

        func store(errors: Lock<[DefaultsError]>) throws -> Defaults {
            var configuration = Defaults.Configuration.rooted(at: "/prefs", applicationDomain: KeyFileLayerTests.domain)
            configuration.fileSystem = fileSystem
            configuration.clock = ManualDefaultsClock()
            configuration.keyFileDirectories = [path]
            configuration.errorHandler = { error in errors.withLock { $0.append(error) } }
            return try Defaults(configuration: configuration)
        }
    }

    @Test("a volume swapped under every attempt of a read: the store keeps the version it shows, never two mixed")
    func swappedUnderEveryAttempt() throws {
        let volume = SwappedVolume()
        volume.swap()
        func values(_ defaults: Defaults) -> [String?] { ["A", "B", "C"].map { defaults.string(forKey: $0) } }
        let defaults = try volume.store(errors: errors)
        #expect(values(defaults) == ["1", "1", "1"])
        // Every attempt of the next read swapped under it: the version shown stays, nothing is reported.
        volume.swapsLeft.withLock { $0 = KeyFileLayer.readAttempts + 2 }
        defaults.rebuildMerged(changedDomain: DomainName.keyFiles)
        #expect(values(defaults) == ["1", "1", "1"])
        #expect(defaults.source(ofKey: "B") == .keyFile(path: volume.path + "/B"))
        #expect(reported.isEmpty, "\(reported)")
        // The swaps end: the next read (the last swap's event, in a watching store) shows the newest update whole.
        volume.swapsLeft.withLock { $0 = 0 }
        defaults.rebuildMerged(changedDomain: DomainName.keyFiles)
        let newest = "\(volume.generation.withLock { $0 })"
        #expect(values(defaults) == [newest, newest, newest])
        // A store's first read has no version to keep: it reads again until it has a whole one.
        volume.swapsLeft.withLock { $0 = KeyFileLayer.readAttempts * 2 + 3 }
        let fresh = try volume.store(errors: errors)
        let shown = values(fresh)
        #expect(Set(shown).count == 1 && shown[0] != nil, "\(shown)")
        #expect(reported.isEmpty, "\(reported)")
    }

    @Test("a plain directory's files rewritten in place, replaced, added and removed reach a watching store")
    func plainDirectoryLive() async throws {
        let keys = directory.file("keys")
        try FileManager.default.createDirectory(atPath: keys, withIntermediateDirectories: true)
        try write("1", to: keys + "/RateLimit")
        let defaults = try store([keys], watching: true)
        #expect(defaults.string(forKey: "RateLimit") == "1")
        try write("2", to: keys + "/RateLimit.new")
        #expect(rename(keys + "/RateLimit.new", keys + "/RateLimit") == 0)
        #expect(await waitForValue(defaults, "RateLimit") { $0 == "2" })
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: keys + "/RateLimit"))
        try handle.truncate(atOffset: 0)
        try handle.write(contentsOf: Data("3".utf8))
        try handle.close()
        #expect(await waitForValue(defaults, "RateLimit") { $0 == "3" })
        // A key added later, by a write and by a rename, and one removed: each arrives at once.
        try write("dark", to: keys + "/Theme")
        #expect(await waitForValue(defaults, "Theme") { $0 == "dark" })
        try write("hello", to: keys + "/.staged")
        #expect(rename(keys + "/.staged", keys + "/Greeting") == 0)
        #expect(await waitForValue(defaults, "Greeting") { $0 == "hello" })
        #expect(unlink(keys + "/Theme") == 0)
        #expect(await waitForValue(defaults, "Theme") { $0 == nil })
        #expect(defaults.string(forKey: "RateLimit") == "3")
    }
}
