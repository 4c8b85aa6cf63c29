import Foundation
import Testing

@testable import LiveDefaults

/// The process's application domain without Foundation's bundle machinery where the answer is certain.
@Suite("Application domain: the main bundle's identifier, else the executable's name")
struct ProcessIdentityTests {
    @Test("the default application domain is Foundation's: Bundle.main's identifier, else ProcessInfo's name")
    func agreesWithFoundation() {
        let foundation =
            Bundle.main.bundleIdentifier.flatMap { $0.isEmpty ? nil : $0 } ?? ProcessInfo.processInfo.processName
        #expect(Defaults.Configuration.processApplicationDomain == foundation)
    }

    @Test("the executable's path and name are the kernel's, as ProcessInfo reads them")
    func executable() throws {
        let path = try #require(CurrentProcess.executablePath)
        #expect(path.hasPrefix("/"))
        #expect(MainBundleLayout.executableName(of: path) == ProcessInfo.processInfo.processName)
        #expect(MainBundleLayout.executableName(of: "/usr/bin/tool") == "tool")
        #expect(MainBundleLayout.executableName(of: "/tool") == "tool")
        #expect(MainBundleLayout.executableName(of: "tool") == nil)
        #expect(MainBundleLayout.executableName(of: "/usr/bin/") == nil)
    }

    @Test("a directory with nothing bundle-like certainly has no Info.plist; anything bundle-like asks Foundation")
    func bundleLayouts() throws {
        let directory = TemporaryDirectory()
        let plain = directory.file("bin")
        try FileManager.default.createDirectory(atPath: plain, withIntermediateDirectories: true)
        try Data("x".utf8).write(to: URL(fileURLWithPath: plain + "/tool"))
        try Data().write(to: URL(fileURLWithPath: plain + "/tool.json"))
        try FileManager.default.createDirectory(atPath: plain + "/lib", withIntermediateDirectories: true)
        #expect(MainBundleLayout.certainlyHasNoInfo(executablePath: plain + "/tool", on: SystemFileSystem.shared))

        // Each of these could give CoreFoundation an Info.plist: Foundation is asked.
        for name in [
            "Info.plist", "info.PLIST", "Info-linux.plist", "Resources", "contents", "Support Files", "Wrapper",
            "WrappedBundle",
        ] {
            let bundle = directory.file("bundle-\(UUID().uuidString)")
            try FileManager.default.createDirectory(atPath: bundle, withIntermediateDirectories: true)
            try Data().write(to: URL(fileURLWithPath: bundle + "/tool"))
            try Data().write(to: URL(fileURLWithPath: bundle + "/" + name))
            #expect(
                !MainBundleLayout.certainlyHasNoInfo(executablePath: bundle + "/tool", on: SystemFileSystem.shared),
                "\(name)")
        }
        // A bundle's platform executables folder, a directory that cannot be listed, a relative path.
        let linux = directory.file("App/Linux")
        try FileManager.default.createDirectory(atPath: linux, withIntermediateDirectories: true)
        #expect(!MainBundleLayout.certainlyHasNoInfo(executablePath: linux + "/tool", on: SystemFileSystem.shared))
        #expect(
            !MainBundleLayout.certainlyHasNoInfo(
                executablePath: directory.file("missing") + "/tool", on: SystemFileSystem.shared))
        #expect(!MainBundleLayout.certainlyHasNoInfo(executablePath: "tool", on: SystemFileSystem.shared))
    }

    @Test("names that could hold an Info.plist, in any case; others pass without a copy")
    func names() {
        func check(_ name: String) -> Bool { Array(name.utf8).withUnsafeBytes { MainBundleLayout.mayHoldInfo($0) } }
        for name in [
            "Info.plist", "INFO.PLIST", "Info-linux.plist", "resources", "RESOURCES", "Contents", "support files",
        ] {
            #expect(check(name), "\(name)")
        }
        for name in ["", "tool", "Info", "Info.plist.bak", "Resource", "contents2", "lib", "information.txt", "\u{E9}"]
        {
            #expect(!check(name), "\(name)")
        }
    }

    @Test("any bytes as a name or a path give an answer, never a trap")
    func hostileNames() {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("/.iInNfFoOpPlLsStTcCrRwWxX -".utf8) + [0x00, 0xC3, 0xA9, 0xFF]
        for _ in 0..<3_000 {
            let bytes = (0..<Int.random(in: 0...24, using: &generator)).map { _ in
                alphabet.randomElement(using: &generator)!
            }
            _ = bytes.withUnsafeBytes { MainBundleLayout.mayHoldInfo($0) }
            let path = String(decoding: bytes, as: UTF8.self)
            if let name = MainBundleLayout.executableName(of: path) { #expect(!name.contains("/")) }
            _ = DefaultsLocations.isStandardAbsolutePath(path)
        }
    }

    @Test("listing a directory finds a name, reports its absence, and says when it cannot list")
    func directoryEntries() throws {
        let directory = TemporaryDirectory()
        try directory.write("a.plist", "x")
        let system = SystemFileSystem.shared
        #expect(system.scanEntries(in: directory.path) { Array($0) == Array("a.plist".utf8) } == true)
        #expect(system.scanEntries(in: directory.path) { Array($0) == Array("b.plist".utf8) } == false)
        #expect(system.scanEntries(in: directory.path) { $0.first == UInt8(ascii: ".") } == false, "no . or ..")
        #expect(system.scanEntries(in: directory.file("missing")) { _ in true } == nil)
    }
}
