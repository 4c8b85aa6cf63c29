import Foundation
import Glibc
import LiveDefaultsTesting
import Testing

@testable import LiveDefaults

/// The readers' announcements a watching store writes (``ReaderAnnouncer``): what dead processes left in their
/// directory goes with the first announcement there, whoever's domain it was.
@Suite("Readers' announcements: the directory keeps only what running processes wrote")
struct ReaderAnnouncementTests {
    @Test("an announcement's name gives its process; other names give none")
    func names() {
        #expect(ReaderAnnouncements.process(ofAnnouncement: "com.example.app.plist.4242.json") == 4242)
        #expect(ReaderAnnouncements.process(ofAnnouncement: ".GlobalPreferences.plist.7.json") == 7)
        for name in [
            "com.example.app.plist.json", "com.example.app.plist..json", "com.example.app.plist.0.json",
            "com.example.app.plist.12345678901.json", "com.example.app.plist.-3.json", ".x.plist.5.json.tmp-5-1",
            "com.example.app.plist.42.jsonx", "json", ".json",
        ] {
            #expect(ReaderAnnouncements.process(ofAnnouncement: name) == nil, "\(name)")
        }
    }

    @Test("records are due 1 ms after a version, 20 ms within a burst (the last record under 10 ms old)")
    func pacing() {
        let now: UInt64 = 5_000_000_000
        #expect(RecordPacing.due(now: now, lastWritten: nil) == now + 1_000_000)
        #expect(RecordPacing.due(now: now, lastWritten: now - 9_999_999) == now + 20_000_000)
        #expect(RecordPacing.due(now: now, lastWritten: now - 10_000_000) == now + 1_000_000)
        // A clock that went back (another thread's reading, taken later, stored first) is no burst of the future.
        #expect(RecordPacing.due(now: now, lastWritten: now + 5) == now + 1_000_000)
    }

    @Test("the first announcement in a directory removes dead processes' announcements and temporaries")
    func deadProcessesSwept() throws {
        let directory = TemporaryDirectory()
        let readers = directory.file(".livedefaults-readers")
        try FileManager.default.createDirectory(atPath: readers, withIntermediateDirectories: true)
        // A process that ran and is gone: its id names no process now (ids are not reused that soon).
        let gone = Process()
        gone.executableURL = URL(fileURLWithPath: "/bin/true")
        try gone.run()
        gone.waitUntilExit()
        let dead = gone.processIdentifier
        #expect(!CurrentProcess.isRunning(dead))
        let stale = [
            "com.example.other.plist.\(dead).json", "com.example.swept.plist.\(dead).json",
            ".com.example.swept.plist.\(dead).json.tmp-\(dead)-7",
        ]
        // Process 1 runs: its announcement stays, whoever reads it.
        let kept = ["com.example.other.plist.1.json", "notes.txt"]
        for name in stale + kept { try Data("{}".utf8).write(to: URL(fileURLWithPath: readers + "/" + name)) }
        let defaults = try Defaults(configuration: .rooted(at: directory.path, applicationDomain: "com.example.swept"))
        Defaults.waitForBackgroundRecords()
        let names = Set((try? FileManager.default.contentsOfDirectory(atPath: readers)) ?? [])
        for name in stale { #expect(!names.contains(name), "\(name)") }
        for name in kept { #expect(names.contains(name), "\(name)") }
        #expect(names.contains("com.example.swept.plist.\(getpid()).json"), "\(names)")
        withExtendedLifetime(defaults) {}
    }
}
