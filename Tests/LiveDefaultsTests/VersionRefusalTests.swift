import Foundation
import Glibc
import LiveDefaultsTesting
import Testing

@testable import LiveDefaults

/// One refusal type (``VersionRefusal``) wherever a refusal is told: readers, the change log, the fleet's records.
@Suite("A version refused: one type for readers, the log and the fleet")
struct VersionRefusalTests {
    @Test("its JSON is the fleet's host record's: an older record without a user reads, and writes back the same")
    func json() throws {
        let old =
            #"{"executable":"api","processID":4242,"reason":"MaxPool 90 is above the limit","#
            + #""time":"2026-11-25T19:06:38Z","version":"00000000000000ab"}"#
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        let refusal = try decoder.decode(VersionRefusal.self, from: Data(old.utf8))
        #expect(
            refusal.processID == 4242 && refusal.userID == nil && refusal.version == DomainVersion("00000000000000ab"))
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys]
        #expect(String(decoding: try encoder.encode(refusal), as: UTF8.self) == old)
        #expect("\(refusal)" == "process 4242 (api) refuses version 00000000000000ab: MaxPool 90 is above the limit")
        var known = refusal
        known.userID = 1000
        #expect(try decoder.decode(VersionRefusal.self, from: try encoder.encode(known)) == known)
    }

    @Test("refusals(inDomain:) lists the running readers that refuse the version on disk, not an older one")
    func refusalsOfTheVersionOnDisk() throws {
        let memory = InMemoryFileSystem()
        var configuration = Defaults.Configuration.rooted(at: "/home", applicationDomain: "com.example.refused")
        configuration.fileSystem = memory
        configuration.watching = .off
        let defaults = try Defaults(configuration: configuration)
        let path = "/home/com.example.refused.plist"
        let bytes = try PropertyList.dictionary(["MinPool": 60]).encoded(as: .xml)
        try memory.place(bytes, at: path)
        let onDisk = FileVersion.digest(of: bytes)
        #expect(defaults.versionOnDisk(inDomain: "com.example.refused") == DomainVersion(digest: onDisk))

        // This process refuses the version on disk; process 1 (which runs) refused an older one.
        let now = Date().timeIntervalSince1970
        let refusing = ReaderAnnouncement(
            pid: getpid(), start: CurrentProcess.startTime, executable: "server", applied: 7, since: now,
            refused: .init(version: onDisk, reason: "MinPool 60 is above MaxPool 20", time: now))
        let older = ReaderAnnouncement(
            pid: 1, start: try #require(CurrentProcess.startTime(of: 1)), executable: "init", applied: 7, since: now,
            refused: .init(version: 7 &+ 1, reason: "an older version", time: now))
        for announcement in [refusing, older] {
            let name =
                ReaderAnnouncements.directory(forDomainFile: path) + "/"
                + ReaderAnnouncements.name(forDomainFile: path, pid: announcement.pid)
            try memory.place(ReaderAnnouncements.encode(announcement), at: name)
        }
        #expect(defaults.readers(inDomain: "com.example.refused").count == 2)
        let refusals = defaults.refusals(inDomain: "com.example.refused")
        #expect(refusals.map(\.processID) == [getpid()])
        #expect(refusals.first?.version == DomainVersion(digest: onDisk))
        #expect(refusals.first?.executable == "server")
        #expect(refusals.first?.reason == "MinPool 60 is above MaxPool 20")
    }
}
