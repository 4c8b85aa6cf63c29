import Foundation
import Glibc
import PlistOracle
import TestProcesses
import Testing

@testable import LiveDefaults

/// Paths reached through symbolic links are watched along their whole chain: Kubernetes ConfigMap and Secret
/// volumes (updated by the kubelet's atomic writer, a real second process here), links swapped by `ln -sfn`,
/// links that point nowhere.
@Suite("Watcher: symbolic-link chains (Kubernetes volumes)", .blockingWork)
struct SymlinkWatchTests {
    static let domain = "com.example.k8s"

    static func plist(_ values: [String: PropertyList]) throws -> String { try SearchListTests.xml(values) }

    /// A store whose files live in `directory`, with the managed directory where the caller says.
    static func store(_ directory: TemporaryDirectory, managed: String? = nil, domain: String = domain) throws
        -> Defaults
    {
        var configuration = Defaults.Configuration.rooted(at: directory.path, applicationDomain: domain)
        if let managed { configuration.locations.managedDirectory = managed }
        return try Defaults(configuration: configuration)
    }

    @Test("A managed directory that is a ConfigMap volume: several kubelet updates in a row each arrive")
    func managedDirectoryIsAVolume() async throws {
        let directory = TemporaryDirectory()
        let volume = KubeletVolume(path: directory.file("configmap"))
        try volume.update(["\(Self.domain).plist": try Self.plist(["RateLimit": 100])])
        let defaults = try Self.store(directory, managed: volume.path)
        #expect(defaults.integer(forKey: "RateLimit") == 100)
        #expect(defaults.objectIsForced(forKey: "RateLimit"))
        let changes = Recorder(defaults.changes())
        for limit in [200, 300, 400] {
            try volume.update(["\(Self.domain).plist": try Self.plist(["RateLimit": .integer(limit)])])
            #expect(await waitForValue(defaults, "RateLimit") { $0 == .integer(limit) }, "update to \(limit)")
        }
        #expect(await changes.waitFor { $0.key == "RateLimit" && $0.newValue == 400 && $0.origin == .external })
    }

    @Test("A user domain file that is a link into a volume follows every update, a dropped key, a dropped file")
    func domainFileLinksIntoAVolume() async throws {
        let directory = TemporaryDirectory()
        let volume = KubeletVolume(path: directory.file("volume"))
        let name = "\(Self.domain).plist"
        try volume.update([name: try Self.plist(["RateLimit": 1, "Banner": "hello"])])
        #expect(symlink(volume.path + "/" + name, directory.file(name)) == 0)
        let defaults = try Self.store(directory)
        #expect(defaults.integer(forKey: "RateLimit") == 1)
        for limit in 2...4 {
            try volume.update([name: try Self.plist(["RateLimit": .integer(limit), "Banner": "hello"])])
            #expect(await waitForValue(defaults, "RateLimit") { $0 == .integer(limit) })
        }
        // A key dropped from the file.
        try volume.update([name: try Self.plist(["RateLimit": 4])])
        #expect(await waitForValue(defaults, "Banner") { $0 == nil })
        // The file dropped from the map: the link goes, and the link's target with the old directory.
        try volume.update(["other.plist": try Self.plist(["Unrelated": true])])
        #expect(await waitForValue(defaults, "RateLimit") { $0 == nil })
        // And back.
        try volume.update([name: try Self.plist(["RateLimit": 5])])
        #expect(await waitForValue(defaults, "RateLimit") { $0 == 5 })
    }

    @Test("The volume removed and created again: the layer empties, then follows the new volume")
    func volumeRemovedAndCreatedAgain() async throws {
        let directory = TemporaryDirectory()
        let volume = KubeletVolume(path: directory.file("configmap"))
        let name = "\(Self.domain).plist"
        try volume.update([name: try Self.plist(["RateLimit": 10])])
        let defaults = try Self.store(directory, managed: volume.path)
        #expect(defaults.integer(forKey: "RateLimit") == 10)
        try volume.remove()
        #expect(await waitForValue(defaults, "RateLimit") { $0 == nil })
        try volume.update([name: try Self.plist(["RateLimit": 11])])
        #expect(await waitForValue(defaults, "RateLimit") { $0 == 11 })
        try volume.update([name: try Self.plist(["RateLimit": 12])])
        #expect(await waitForValue(defaults, "RateLimit") { $0 == 12 })
    }

    @Test("A link that points nowhere reads as an empty layer, and recovers when it resolves again")
    func danglingLink() async throws {
        let directory = TemporaryDirectory()
        let target = directory.file("elsewhere/\(Self.domain).plist")
        #expect(symlink(target, directory.file("\(Self.domain).plist")) == 0)
        let defaults = try Self.store(directory)
        #expect(defaults.object(forKey: "RateLimit") == nil)
        #expect(defaults.lastError == nil, "a link to nothing is an absent file, not an error")
        try PersistenceTests.python(
            "import os\nos.makedirs('\(directory.file("elsewhere"))')\n"
                + WatcherTests.pythonRenameWrite(target, ["RateLimit": 7]))
        #expect(await waitForValue(defaults, "RateLimit") { $0 == 7 })
        // Pointing nowhere again (the target removed), then somewhere else (the link swapped by rename).
        try FileManager.default.removeItem(atPath: target)
        #expect(await waitForValue(defaults, "RateLimit") { $0 == nil })
        let second = directory.file("second.plist")
        try directory.write("second.plist", try Self.plist(["RateLimit": 8]))
        try PersistenceTests.python(
            """
            import os
            os.symlink('\(second)', '\(directory.file("link.tmp"))')
            os.rename('\(directory.file("link.tmp"))', '\(directory.file("\(Self.domain).plist"))')
            """)
        #expect(await waitForValue(defaults, "RateLimit") { $0 == 8 })
        // The new target is followed too: an in-place rewrite of it arrives.
        try directory.write("second.plist", try Self.plist(["RateLimit": 9]))
        #expect(await waitForValue(defaults, "RateLimit") { $0 == 9 })
    }

    @Test("A linked directory on the way: swapping it (ln -sfn) is a change")
    func linkedDirectorySwapped() async throws {
        let directory = TemporaryDirectory()
        let name = "\(Self.domain).plist"
        for (release, limit) in [("release-1", 1), ("release-2", 2)] {
            try FileManager.default.createDirectory(
                atPath: directory.file(release), withIntermediateDirectories: true)
            try directory.write("\(release)/\(name)", try Self.plist(["RateLimit": .integer(limit)]))
        }
        #expect(symlink(directory.file("release-1"), directory.file("current")) == 0)
        let defaults = try Defaults(
            configuration: .rooted(at: directory.file("current"), applicationDomain: Self.domain))
        #expect(defaults.integer(forKey: "RateLimit") == 1)
        try PersistenceTests.python(
            """
            import os
            os.symlink('\(directory.file("release-2"))', '\(directory.file("current.tmp"))')
            os.rename('\(directory.file("current.tmp"))', '\(directory.file("current"))')
            """)
        #expect(await waitForValue(defaults, "RateLimit") { $0 == 2 })
        // Writes to the file in the directory the link now names arrive.
        try PersistenceTests.python(
            WatcherTests.pythonRenameWrite(directory.file("release-2/\(name)"), ["RateLimit": 3]))
        #expect(await waitForValue(defaults, "RateLimit") { $0 == 3 })
        // The old directory is no longer followed: a write there changes nothing.
        try directory.write("release-1/\(name)", try Self.plist(["RateLimit": 99, "Marker": true]))
        try PersistenceTests.python(
            WatcherTests.pythonRenameWrite(directory.file("release-2/\(name)"), ["RateLimit": 4]))
        #expect(await waitForValue(defaults, "RateLimit") { $0 == 4 })
        #expect(defaults.object(forKey: "Marker") == nil)
    }

    /// Each layer's file, and the global domain's, as a link into its own volume.
    @Test(
        "Every layer and the global domain follow a kubelet update through a link",
        arguments: PreferenceLayer.allCases.map { ($0, false) } + [(.currentUser, true)])
    func everyLayer(_ layer: PreferenceLayer, _ global: Bool) async throws {
        let directory = TemporaryDirectory()
        let configuration = Defaults.Configuration.rooted(at: directory.path, applicationDomain: Self.domain)
        let domain = global ? DomainName.global : Self.domain
        let path = configuration.locations.path(forDomain: domain, layer: layer)
        try FileManager.default.createDirectory(
            atPath: PathComponents.directory(of: path), withIntermediateDirectories: true)
        let volume = KubeletVolume(path: directory.file("volume-\(layer)"))
        try volume.update(["file.plist": try Self.plist(["Layered": "first"])])
        #expect(symlink(volume.path + "/file.plist", path) == 0)
        let defaults = try Defaults(configuration: configuration)
        #expect(defaults.string(forKey: "Layered") == "first", "\(path)")
        try volume.update(["file.plist": try Self.plist(["Layered": "second"])])
        #expect(await waitForValue(defaults, "Layered") { $0 == "second" }, "\(path)")
    }

    @Test("A write through a domain file that is a link replaces the file it points to; the link stays")
    func writeThroughLink() throws {
        let directory = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory.file("dotfiles"), withIntermediateDirectories: true)
        let target = directory.file("dotfiles/api.plist")
        try directory.write("dotfiles/api.plist", try Self.plist(["Kept": 1]))
        let path = directory.file("\(Self.domain).plist")
        #expect(symlink(target, path) == 0)
        let defaults = try Self.store(directory)
        defaults.set("added", forKey: "Added")
        #expect(defaults.synchronize())
        #expect(SystemFileSystem.shared.isSymbolicLink(path), "the link is still a link")
        #expect(try pythonPlist(target) == #"{"Added": "added", "Kept": 1}"#)
        // A broken target is kept aside beside itself, and the write merges onto the last good version.
        try directory.write("dotfiles/api.plist", "<plist><dict>")
        defaults.synchronize()
        defaults.set("again", forKey: "Added")
        #expect(defaults.synchronize())
        #expect(SystemFileSystem.shared.isSymbolicLink(path))
        #expect(try pythonPlist(target) == #"{"Added": "again", "Kept": 1}"#)
        let kept = try FileManager.default.contentsOfDirectory(atPath: directory.file("dotfiles"))
        #expect(kept.contains { $0.hasPrefix("api.plist.corrupt-") })
    }

    @Test("Plain paths get no chain; a link gets its links and target")
    func chains() throws {
        let directory = TemporaryDirectory()
        let plain = SymlinkChain.resolve(directory.file("plain.plist"))
        #expect(plain.isPlain)
        let volume = KubeletVolume(path: directory.file("volume"))
        try volume.update(["a.plist": "x"])
        let chain = SymlinkChain.resolve(volume.path + "/a.plist")
        let realVolume = SymlinkChain.resolve(volume.path).target
        #expect(chain.links == [realVolume + "/a.plist", realVolume + "/..data"])
        #expect(chain.target.hasPrefix(realVolume + "/..20"))
        #expect(chain.target.hasSuffix("/a.plist"))
        #expect(FileManager.default.fileExists(atPath: chain.target))
        // A loop ends with a problem, not a hang.
        #expect(symlink(directory.file("loop-b"), directory.file("loop-a")) == 0)
        #expect(symlink(directory.file("loop-a"), directory.file("loop-b")) == 0)
        let loop = SymlinkChain.resolve(directory.file("loop-a"))
        #expect(loop.problem?.contains("loop") == true)
        #expect(loop.links.count == SymlinkChain.maximumLinks)
    }

    @Test("Relative links, dot-dot, and absolute links are resolved as the kernel does")
    func resolution() throws {
        let directory = TemporaryDirectory()
        let real = SymlinkChain.resolve(directory.path).target
        try FileManager.default.createDirectory(atPath: directory.file("a/b"), withIntermediateDirectories: true)
        try directory.write("a/file", "x")
        #expect(symlink("../file", directory.file("a/b/up")) == 0)
        #expect(SymlinkChain.resolve(directory.file("a/b/up")).target == real + "/a/file")
        #expect(symlink(directory.file("a"), directory.file("abs")) == 0)
        let viaAbsolute = SymlinkChain.resolve(directory.file("abs/b/up"))
        #expect(viaAbsolute.target == real + "/a/file")
        #expect(viaAbsolute.links == [real + "/abs", real + "/a/b/up"])
        #expect(SymlinkChain.resolve("relative/path") == SymlinkChain(links: [], target: "relative/path"))
    }
}

/// Link chains over random link graphs (seeded): every path resolves to what the kernel's `realpath` says,
/// loops end with a problem, nothing traps or hangs.
@Suite("SymlinkChain: agreement with realpath over random link graphs", .blockingWork)
struct SymlinkChainPropertyTests {
    @Test("200 random graphs of files, directories and relative, absolute, dot-dot and looping links")
    func agreesWithRealpath() throws {
        let seed = UInt64(ProcessInfo.processInfo.environment["LIVEDEFAULTS_PROPERTY_SEED"] ?? "") ?? 0x5EED_11AC
        // The property tests' seeded generator (SplitMix64): a failure prints its seed for a replay.
        var random = ValueGenerator(seed: seed)
        let directory = TemporaryDirectory()
        let root = SymlinkChain.resolve(directory.path).target
        var compared = 0
        for graph in 0..<200 {
            let base = "\(root)/g\(graph)"
            try FileManager.default.createDirectory(atPath: base + "/d/e", withIntermediateDirectories: true)
            try Data("x".utf8).write(to: URL(fileURLWithPath: base + "/d/e/file"))
            let names = ["a", "b", "c", "d/l", "d/e/m", "n"]
            let targets = [
                "d", "d/e", "d/e/file", "../d", "../../g\(graph)/d/e", "a", "b", "c", "n", "missing", "d/l/e",
                base + "/d", base + "/a", "./a", "d/../d/e/file", "/",
            ]
            for name in names where random.below(3) != 0 {
                let target = targets[random.below(targets.count)]
                _ = symlink(target, base + "/" + name)
            }
            let probes = names + ["d/e/file", "a/e/file", "b/file", "c/e", "d/l/e/file", "n/x"]
            for probe in probes {
                let path = base + "/" + probe
                let chain = SymlinkChain.resolve(path)
                var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
                if let real = realpath(path, &buffer) {
                    #expect(chain.target == String(cString: real), "seed \(seed): \(path)")
                    #expect(chain.problem == nil, "seed \(seed): \(path)")
                    compared += 1
                } else if errno == ELOOP {
                    #expect(chain.problem != nil, "seed \(seed): \(path) loops")
                }
                #expect(chain.links.count <= SymlinkChain.maximumLinks)
            }
        }
        #expect(compared > 200)
    }
}
