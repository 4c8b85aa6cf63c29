import Foundation
import TestProcesses
import Testing

import LiveDefaults

/// The public diagnostics API (`defaults doctor` is built on it): how the process follows a domain's file.
@Suite("Diagnostics: how this process watches a file", .blockingWork)
struct DiagnosticsTests {
    @Test("watchStatus: inotify (or polling without it), no links for a plain path, the links of a linked one")
    func watchStatus() throws {
        let directory = TemporaryDirectory()
        #expect(Defaults.inotifyIsCompiledIn == inotifyIsCompiledIn)
        let locations = DefaultsLocations.rooted(at: directory.path)

        let plain = try directory.store("com.example.plain")
        plain.set(1, forKey: "A")
        #expect(plain.synchronize())
        let plainPath = locations.path(forDomain: "com.example.plain", layer: .currentUser)
        let plainStatus = Defaults.watchStatus(ofPath: plainPath)
        #expect(plainStatus.isPolled == !watchesWithInotify)
        #expect((plainStatus.pollReason != nil) == plainStatus.isPolled)
        #expect(plainStatus.links.isEmpty)

        // The domain's file a link to a file elsewhere, as a volume's would be.
        let linkedPath = locations.path(forDomain: "com.example.linked", layer: .currentUser)
        try directory.write("elsewhere.plist", #"{ "B" = 2; }"#)
        try FileManager.default.createSymbolicLink(
            atPath: linkedPath, withDestinationPath: directory.file("elsewhere.plist"))
        let linked = try directory.store("com.example.linked")
        #expect(linked.integer(forKey: "B") == 2)
        let linkedStatus = Defaults.watchStatus(ofPath: linkedPath)
        #expect(linkedStatus.links == [linkedPath])
        #expect(linkedStatus.isPolled == !watchesWithInotify)
    }
}
