import Foundation
import Testing

@testable import LiveDefaults

/// The versions a change log gives back whole (``LoggedVersions``), from log lines made as writers make them.
@Suite("Versions given back by the change log")
struct LoggedVersionsTests {
    static func entry(_ version: UInt64, _ changes: [String: (old: PropertyList?, new: PropertyList?)]) -> Data {
        ChangeLog.line(
            ChangeLog.Entry(
                time: Date(timeIntervalSince1970: 1_000), origin: .local, writer: ProcessIdentity.current.writer,
                version: version,
                changes: changes.sorted { $0.key < $1.key }.map { key, change in
                    ChangeLog.Change(
                        key: key, old: change.old.map(ChangeLog.LoggedValue.init),
                        new: change.new.map(ChangeLog.LoggedValue.init))
                }))
    }

    static func checkpoint(_ version: UInt64, _ contents: [String: PropertyList]) -> Data {
        ChangeLog.checkpointLine(version: version, keys: ChangeLog.keyDigests(of: contents))
    }

    static func log(_ lines: Data...) -> ChangeLog {
        ChangeLog(parsing: lines.reduce(Data(), +))
    }

    @Test("an empty log gives back nothing")
    func emptyLog() {
        let versions = LoggedVersions(ChangeLog())
        #expect(versions.count == 0)
        #expect(versions.newest { _ in true } == nil)
    }

    @Test("played forward from the first checkpoint: each version whole, newest first, the excluded skipped")
    func forwardFromCheckpoint() {
        let log = Self.log(
            Self.checkpoint(0, [:]),
            Self.entry(1, ["A": (nil, 1), "B": (nil, "x")]),
            Self.entry(2, ["A": (1, 2)]),
            Self.entry(3, ["B": ("x", nil)]))
        let versions = LoggedVersions(log)
        #expect(versions.count == 4)
        #expect(versions.newest { _ in true } == .init(number: 3, contents: ["A": 2]))
        #expect(versions.newest(excluding: [3]) { _ in true } == .init(number: 2, contents: ["A": 2, "B": "x"]))
        #expect(versions.newest { $0["A"] == 1 } == .init(number: 1, contents: ["A": 1, "B": "x"]))
        #expect(versions.newest { $0.isEmpty } == .init(number: 0, contents: [:]))
        // Each version is asked once, newest first.
        var asked: [[String: PropertyList]] = []
        _ = versions.newest {
            asked.append($0); return false
        }
        #expect(asked.count == 4)
    }

    @Test("a key known only as a checkpoint's digest comes back from a value logged before it, or one the caller knows")
    func checkpointDigestsResolved() {
        // A rewritten log: its checkpoint names C by digest only, and only an older entry holds its value.
        let rewritten = Self.log(
            Self.entry(7, ["C": (nil, "kept")]),
            Self.checkpoint(8, ["C": "kept", "D": 4]),
            Self.entry(9, ["E": (nil, true)]))
        let versions = LoggedVersions(rewritten)
        #expect(versions.newest { _ in true } == nil, "D is known by its digest alone")
        let known = LoggedVersions(rewritten, known: ["D": 4])
        #expect(known.newest { _ in true } == .init(number: 9, contents: ["C": "kept", "D": 4, "E": true]))
        #expect(known.newest(excluding: [9]) { _ in true } == .init(number: 8, contents: ["C": "kept", "D": 4]))
    }

    @Test("a large value logged by its digest alone keeps its versions out, unless known")
    func largeValues() {
        let large = PropertyList.data(Data(repeating: 7, count: ChangeLog.maximumValueBytes + 10))
        let log = Self.log(
            Self.checkpoint(0, [:]),
            Self.entry(1, ["Blob": (nil, large), "N": (nil, 1)]),
            Self.entry(2, ["N": (1, 2)]))
        #expect(LoggedVersions(log).newest { _ in true }?.number == 0, "only the version before the blob")
        #expect(LoggedVersions(log, known: ["Blob": large]).newest { _ in true }?.number == 2)
    }

    @Test("entries before the log's first checkpoint give back nothing on their own")
    func entriesBeforeCheckpoint() {
        let log = Self.log(Self.entry(1, ["A": (nil, 1)]), Self.entry(2, ["A": (1, 2)]))
        #expect(LoggedVersions(log).count == 0)
    }
}
