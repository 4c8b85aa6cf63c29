import Foundation
import LiveDefaultsTesting
import Logging
import Testing

@testable import LiveDefaults

/// The change log's file format on its own: entries and checkpoints, large values summarised, the bound, and
/// lines that are none of ours.
@Suite("A domain file's change log: its lines, its bound, hostile logs")
struct ChangeLogTests {
    let writer = ChangeLog.Writer(executable: "api-server", pid: 4242, uid: 1000, revision: nil)

    func entry(_ changes: [(String, PropertyList?, PropertyList?)], version: UInt64, origin: ChangeOrigin = .local)
        -> ChangeLog.Entry
    {
        ChangeLog.Entry(
            time: Date(timeIntervalSince1970: 1_764_222_222.5), origin: origin,
            writer: origin == .external ? nil : writer, version: version,
            changes: changes.map { key, old, new in
                ChangeLog.Change(
                    key: key, old: old.map(ChangeLog.LoggedValue.init), new: new.map(ChangeLog.LoggedValue.init))
            })
    }

    @Test("a held version: whole or as changed keys' old values, alike; a burst's versions combine to the first")
    func heldVersions() {
        let v0: [String: PropertyList] = ["A": 1, "B": 2, "C": 3]
        let v1: [String: PropertyList] = ["A": 10, "B": 2, "D": 4]
        let v2: [String: PropertyList] = ["A": 11, "B": 20, "D": 4]
        func changed(_ old: [String: PropertyList], _ new: [String: PropertyList], version: UInt64) -> ChangeLog.Held {
            var values: [String: PropertyList?] = [:]
            for key in Set(old.keys).union(new.keys) where old[key] != new[key] { values[key] = .some(old[key]) }
            return .changed(version: version, oldValues: values)
        }
        let expected = ChangeLog.changes(ofKeys: Set(v0.keys).union(v2.keys), from: v0, to: v2)
        #expect(ChangeLog.Held.whole(version: 0, contents: v0).changes(to: v2) == expected)
        #expect(changed(v0, v2, version: 0).changes(to: v2) == expected)
        #expect(changed(v0, v2, version: 0).contents(new: v2) == v0)
        #expect(changed(v0, v2, version: 0).value(ofKey: "C", new: v2) == 3)
        #expect(changed(v0, v2, version: 0).value(ofKey: "D", new: v2) == nil)
        #expect(changed(v0, v2, version: 0).value(ofKey: "D", new: v1) == nil)
        // Version 0 held when version 1 was read; version 1 held when version 2 was: every form combines to 0.
        let forms: [(ChangeLog.Held, ChangeLog.Held)] = [
            (changed(v0, v1, version: 0), changed(v1, v2, version: 1)),
            (.whole(version: 0, contents: v0), changed(v1, v2, version: 1)),
            (changed(v0, v1, version: 0), .whole(version: 1, contents: v1)),
            (.whole(version: 0, contents: v0), .whole(version: 1, contents: v1)),
        ]
        for (older, newer) in forms {
            let combined = ChangeLog.Held.combining(older, olderVersion: 1, newer)
            #expect(combined?.version == 0)
            #expect(combined?.changes(to: v2) == expected, "\(older) then \(newer)")
            #expect(combined?.contents(new: v2) == v0)
        }
        // The versions read, kept as their changed keys' new values, follow one another alike; the changes of a
        // changed held version to a changed read one need no whole version.
        func read(_ old: [String: PropertyList], _ new: [String: PropertyList]) -> ChangeLog.ReadVersion {
            var values: [String: PropertyList?] = [:]
            for key in Set(old.keys).union(new.keys) where old[key] != new[key] { values[key] = .some(new[key]) }
            return .changed(newValues: values)
        }
        let both = read(v0, v1).followed(by: read(v1, v2))
        let combined = ChangeLog.Held.combining(
            changed(v0, v1, version: 0), olderVersion: 1, changed(v1, v2, version: 1))
        #expect(combined?.changes(to: both, whole: { nil }) == expected)
        #expect(ChangeLog.ReadVersion.whole(v1).followed(by: read(v1, v2)).whole == v2)
        #expect(read(v0, v1).followed(by: .whole(v2)).whole == v2)
        #expect(ChangeLog.Held.whole(version: 0, contents: v0).changes(to: read(v0, v2), whole: { nil }) == nil)
        #expect(ChangeLog.Held.whole(version: 0, contents: v0).changes(to: read(v0, v2), whole: { v2 }) == expected)
        // A version between them (this process's own write, logged by it): the newer alone. None held before the
        // older (a first look): the older version, as the newer held it, is the base.
        let newer = changed(v1, v2, version: 7)
        #expect(ChangeLog.Held.combining(changed(v0, v1, version: 0), olderVersion: 1, newer)?.version == 7)
        let firstLookThen = ChangeLog.Held.combining(nil, olderVersion: 1, changed(v1, v2, version: 1))
        #expect(firstLookThen?.version == 1)
        #expect(firstLookThen?.contents(new: v2) == v1)
        let fromV1 = ChangeLog.changes(ofKeys: Set(v1.keys).union(v2.keys), from: v1, to: v2)
        #expect(firstLookThen?.changes(to: v2) == fromV1)
        // The newer held none (it was read after a version that failed to parse): a whole older version stands,
        // a changed one (relative to the older read) cannot be laid over the newer read.
        #expect(ChangeLog.Held.combining(.whole(version: 0, contents: v0), olderVersion: 1, nil)?.version == 0)
        #expect(ChangeLog.Held.combining(changed(v0, v1, version: 0), olderVersion: 1, nil) == nil)
    }

    @Test("entries read back in order; the first starts with a checkpoint; the last version's keys are known")
    func roundTrip() throws {
        let directory = TemporaryDirectory()
        let path = ChangeLog.path(forDomainFile: directory.file("com.example.api.plist"))
        #expect(path == directory.file(".com.example.api.plist.log"))
        var contents: [String: PropertyList] = ["Keep": "kept", "RateLimit": 10]
        let first = entry([("RateLimit", 10, 20)], version: 1)
        var next = contents
        next["RateLimit"] = 20
        #expect(ChangeLog.append(first, contents: next, previous: contents, previousVersion: 7, at: path) == nil)
        contents = next
        next["Theme"] = "dark"
        next["RateLimit"] = nil
        let second = entry([("Theme", nil, "dark"), ("RateLimit", 20, nil)], version: 2, origin: .external)
        #expect(ChangeLog.append(second, contents: next, previous: contents, previousVersion: 1, at: path) == nil)

        let log = ChangeLog.read(at: path)
        #expect(log.entries == [first, second])
        #expect(log.lastVersion == 2)
        #expect(log.lastKeys == ChangeLog.keyDigests(of: next), "the checkpoint of the first version, then the entries")
        #expect(log.entries[0].writer == writer && log.entries[1].writer == nil)
        #expect(log.entries[0].time == Date(timeIntervalSince1970: 1_764_222_222.5))
    }

    @Test(
        "refusals read back by version, leave the entries, checkpoint and intents as they were, and the end look passes them"
    )
    func refusals() throws {
        let directory = TemporaryDirectory()
        let path = directory.file(".com.example.pool.plist.log")
        // A refusal does not start a log.
        let reader = ChangeLog.Writer(executable: "strict", pid: 77, uid: 1000, revision: nil)
        let refusal = ChangeLog.Refusal(
            time: Date(timeIntervalSince1970: 1_764_222_300.25), version: 2, reason: "MaxPool 80 is above 50",
            reader: reader)
        #expect(!ChangeLog.appendRefusal(refusal, at: path, on: SystemFileSystem.shared))
        #expect(ChangeLog.tail(at: path) == .absent)

        let before: [String: PropertyList] = ["MaxPool": 40]
        let after: [String: PropertyList] = ["MaxPool": 80]
        let first = entry([("MaxPool", 40, 80)], version: 2)
        #expect(ChangeLog.append(first, contents: after, previous: before, previousVersion: 1, at: path) == nil)
        #expect(ChangeLog.appendRefusal(refusal, at: path, on: SystemFileSystem.shared))
        let second = ChangeLog.Refusal(
            time: Date(timeIntervalSince1970: 1_764_222_301), version: 2, reason: "a \"quoted\"\nreason",
            reader: ChangeLog.Writer(executable: "other", pid: 78, uid: 0, revision: nil))
        #expect(ChangeLog.appendRefusal(second, at: path, on: SystemFileSystem.shared))
        // The quick look at the end passes the refusals to the entry before them.
        #expect(ChangeLog.tail(at: path) == .recorded(2))
        var log = ChangeLog.read(at: path)
        #expect(log.entries == [first])
        #expect(log.lastVersion == 2 && log.lastKeys == ChangeLog.keyDigests(of: after))
        #expect(log.refusals == [2: [refusal, second]])

        // An intent before a refusal stays pending; an entry after it is read as usual.
        let third = entry([("MaxPool", 80, 45)], version: 3)
        try SystemFileSystem.shared.append(ChangeLog.intentLine(third), toPath: path, owner: nil)
        #expect(ChangeLog.appendRefusal(refusal, at: path, on: SystemFileSystem.shared))
        log = ChangeLog.read(at: path)
        #expect(log.intents[3] == ChangeLog.Intent(origin: .local, writer: writer))
        #expect(ChangeLog.tail(at: path) == .unknown, "an intent is no recorded version")

        // Refusal lines that are not whole are skipped, and the end look goes no further than a foreign line.
        var data = try #require(FileManager.default.contents(atPath: path))
        data.append(
            Data(#"{"v":1,"refused":"zz","reason":"r","time":1,"writer":{"executable":"x","pid":1,"uid":0}}"#.utf8))
        data.append(Data("\n".utf8))
        data.append(Data(#"{"v":1,"refused":"0000000000000003","time":1}"#.utf8))
        data.append(Data("\n".utf8))
        #expect(ChangeLog(parsing: data).refusals[3] == nil)
        #expect(Defaults.changeLogProblem(data) == nil)
    }

    @Test("the look at a log's end reads a last line longer than its first window (an entry of many keys)")
    func longLastLine() throws {
        let directory = TemporaryDirectory()
        let path = directory.file(".many.plist.log")
        var before: [String: PropertyList] = [:]
        var after: [String: PropertyList] = [:]
        var changes: [(String, PropertyList?, PropertyList?)] = []
        for index in 0..<2_000 {
            let key = "Key\(index)"
            before[key] = .integer(index)
            after[key] = .integer(index + 1)
            changes.append((key, before[key], after[key]))
        }
        let first = entry(changes, version: 11)
        #expect(ChangeLog.append(first, contents: after, previous: before, previousVersion: 10, at: path) == nil)
        let size = try #require(try SystemFileSystem.shared.size(atPath: path))
        #expect(size > 4 * (16 << 10), "the entry's line is longer than two larger windows: \(size) bytes")
        #expect(ChangeLog.tail(at: path) == .recorded(11))
        // An empty log, and a line of garbage as long, are still answered (absent is only a missing file).
        try Data().write(to: URL(fileURLWithPath: path))
        #expect(ChangeLog.tail(at: path) == .unknown)
        try Data(repeating: UInt8(ascii: "x"), count: 100_000).write(to: URL(fileURLWithPath: path))
        #expect(ChangeLog.tail(at: path) == .unknown)
    }

    @Test("a value larger than the bound is logged as its digest, type and size, and still tracked")
    func largeValues() throws {
        let directory = TemporaryDirectory()
        let path = directory.file(".big.plist.log")
        let big = PropertyList.string(String(repeating: "x", count: 5000))
        let logged = ChangeLog.LoggedValue(big)
        guard case .summary(let digest, let type, let size) = logged else {
            Issue.record("not summarised: \(logged)")
            return
        }
        #expect(type == "string" && size > 5000 && digest == FastHash.hash(ChangeLog.encode(big)))
        ChangeLog.append(
            entry([("Blob", nil, big)], version: 3), contents: ["Blob": big], previous: [:], previousVersion: 0,
            at: path)
        let log = ChangeLog.read(at: path)
        #expect(log.entries.first?.changes.first?.new == logged)
        #expect(log.lastKeys == ["Blob": digest])
    }

    @Test("past its bound the log keeps its newest entries, and still knows the last version's keys")
    func bounded() throws {
        let directory = TemporaryDirectory()
        let path = directory.file(".bounded.plist.log")
        var contents: [String: PropertyList] = [:]
        for index in 0..<3000 {
            var next = contents
            next["Key\(index % 50)"] = .string("value \(index) " + String(repeating: "y", count: 60))
            let old = contents["Key\(index % 50)"]
            ChangeLog.append(
                entry([("Key\(index % 50)", old, next["Key\(index % 50)"])], version: UInt64(index + 1)),
                contents: next, previous: contents, previousVersion: UInt64(index), at: path)
            contents = next
        }
        let size = try #require(try SystemFileSystem.shared.size(atPath: path))
        #expect(size <= ChangeLog.maximumSize, "\(size)")
        let log = ChangeLog.read(at: path)
        #expect(log.entries.last?.version == 3000 && log.lastVersion == 3000)
        #expect(log.entries.count > 100 && log.entries.count < 3000)
        let versions = log.entries.map(\.version)
        #expect(versions == versions.sorted() && Set(versions).count == versions.count, "newest kept, in order")
        #expect(log.lastKeys == ChangeLog.keyDigests(of: contents))
    }

    @Test(
        "a rewrite keeps exactly the newest whole lines that fit in a quarter of the bound, a line ending at its edge too",
        arguments: [0, 1, 2, 7])
    func rewriteKeepsTheNewestQuarter(slack: Int) throws {
        let directory = TemporaryDirectory()
        let path = directory.file(".quartered.plist.log")
        let contents: [String: PropertyList] = ["Key": "new"]
        let bound = ChangeLog.bound(keys: contents.count)
        let keep = ChangeLog.keptSize(bound: bound)
        #expect(keep == bound / 4 && keep >= 128 << 10, "at least 128 KiB of history stays")
        // The newest lines take the kept size less `slack` bytes, newlines included; the line before them does
        // not fit; older lines fill the log to just under its bound.
        var kept: [Data] = []
        var total = 0
        while total < keep - slack {
            let length = min(999, keep - slack - total - 1)
            kept.append(Data(repeating: UInt8(ascii: "k"), count: length))
            total += length + 1
        }
        var log = Data()
        while log.count + 5001 + total < ChangeLog.bound(keys: contents.count) - 100 {
            log.append(Data(repeating: UInt8(ascii: "o"), count: 999) + Data("\n".utf8))
        }
        log.append(Data(repeating: UInt8(ascii: "b"), count: 5000) + Data("\n".utf8))
        for line in kept { log.append(line + Data("\n".utf8)) }
        try log.write(to: URL(fileURLWithPath: path))
        ChangeLog.append(
            entry([("Key", "old", "new")], version: 2), contents: contents, previous: ["Key": "old"],
            previousVersion: 1, at: path)
        let lines = try #require(FileManager.default.contents(atPath: path)).split(separator: UInt8(ascii: "\n"))
            .map { Data($0) }
        #expect(Array(lines.prefix(kept.count)) == kept, "the newest lines that fit, whole and all of them")
        // Then this write's entry and the checkpoint, nothing else.
        #expect(lines.count == kept.count + 2)
        #expect(ChangeLog.read(at: path).lastVersion == 2)
    }

    @Test("a write opens its change log once, for its intent and its entry, and asks its size of the descriptor")
    func oneOpenOfTheLogAWrite() throws {
        let memory = InMemoryFileSystem()
        let faulty = FaultInjectingFileSystem(wrapping: memory)
        var configuration = Defaults.Configuration.rooted(at: "/home", applicationDomain: "com.example.appends")
        configuration.fileSystem = faulty
        configuration.clock = ManualDefaultsClock()
        configuration.logger = Logger(label: "appends") { _ in SwiftLogNoOpLogHandler() }
        let defaults = try Defaults(configuration: configuration)
        let logPath = "/home/.com.example.appends.plist.log"
        // The first write looks at the log's end first (the version it replaces may need recording); the next
        // ones know the log holds the version they replace.
        for value in ["first", "second", "third"] {
            faulty.resetCount()
            defaults.set(value, forKey: "Key")
            #expect(defaults.synchronize())
            #expect(memory.openDescriptorCount == 0, "the log is closed after the write")
            guard value != "first" else { continue }
            let logCalls = faulty.calls.filter { $0.hasSuffix(" " + logPath) }
            #expect(logCalls == ["open " + logPath], "\(faulty.calls)")
        }
        // The first write started the log (a checkpoint of the version before it); each landed with its entry.
        let log = ChangeLog.read(at: logPath, on: memory)
        #expect(
            log.entries.map { $0.changes.map(\.new) }
                == ["first", "second", "third"].map { [ChangeLog.LoggedValue(.string($0))] })
        #expect(log.intents.isEmpty, "every intent was followed by its entry")
    }

    @Test("a program's writes are logged under the file lock: each version, its changed keys, old and new, and who")
    func programWrites() throws {
        let directory = TemporaryDirectory()
        let defaults = try Defaults(configuration: .rooted(at: directory.path, applicationDomain: "com.example.logged"))
        defaults.set(5, forKey: "RateLimit")
        defaults.set("dark", forKey: "Theme")
        #expect(defaults.synchronize())
        defaults.set(6, forKey: "RateLimit")
        defaults.set("dark", forKey: "Theme")  // the same value: not a change
        #expect(defaults.synchronize())
        defaults.removeObject(forKey: "Theme")
        #expect(defaults.synchronize())
        let log = ChangeLog.read(at: ChangeLog.path(forDomainFile: directory.file("com.example.logged.plist")))
        func text(_ value: ChangeLog.LoggedValue?) -> String {
            guard case .value(let value, _)? = value else { return value.map { "\($0)" } ?? "-" }
            return "\(value)"
        }
        let changes = log.entries.map { $0.changes.map { "\($0.key) \(text($0.old)) \(text($0.new))" } }
        // The store's writer may write the first two sets as one version or two (it runs when it runs): the
        // changes, in order, are what is fixed.
        #expect(
            changes.flatMap { $0 } == [
                "RateLimit - 5", "Theme - dark",
                "RateLimit 5 6", "Theme dark -",
            ], "\(changes)")
        #expect(log.entries.count >= 3 && log.entries.count <= 4 && log.entries.allSatisfy { !$0.changes.isEmpty })
        #expect(log.entries.allSatisfy { $0.origin == .local && $0.writer?.pid == getpid() })
        #expect(log.lastKeys == ChangeLog.keyDigests(of: ["RateLimit": 6]))
    }

    @Test("lines that are not the log's are skipped: torn, hostile, of another version, a file of noise")
    func hostileLogs() throws {
        let good = ChangeLog.line(entry([("A", nil, 1)], version: 9))
        let checkpoint = ChangeLog.checkpointLine(version: 8, keys: [:])
        var bytes = Data("not json\n{\"v\":2,\"version\":\"0000000000000001\"}\n".utf8)
        bytes += checkpoint
        bytes += Data("{\"v\":1,\"version\":\"zz\",\"time\":1,\"origin\":\"local\",\"changes\":[]}\n".utf8)
        bytes += Data(
            "{\"v\":1,\"version\":\"0000000000000009\",\"time\":1e400,\"origin\":\"local\",\"changes\":[]}\n".utf8)
        bytes += Data("{\"v\":1,\"version\":\"0000000000000009\",\"keys\":{\"A\":\"short\"}}\n".utf8)
        bytes += good
        bytes += good.prefix(good.count / 2)  // torn: a crash mid-append
        let log = ChangeLog(parsing: bytes)
        #expect(log.entries.count == 1 && log.entries.first?.version == 9)
        #expect(log.lastVersion == 9)
        #expect(log.lastKeys == ["A": FastHash.hash(ChangeLog.encode(1))])

        var noise = SystemRandomNumberGenerator()
        let random = Data((0..<100_000).map { _ in UInt8.random(in: 0...255, using: &noise) })
        #expect(ChangeLog(parsing: random).entries.isEmpty)

        // A log grown far past its bound by another writer: only its tail is read, from a whole line.
        let directory = TemporaryDirectory()
        let path = directory.file(".grown.plist.log")
        var grown = Data()
        for index in 0..<20_000 {
            grown += ChangeLog.line(entry([("A", nil, .integer(index))], version: UInt64(index + 1)))
        }
        try grown.write(to: URL(fileURLWithPath: path))
        let tail = ChangeLog.read(at: path, maximumBytes: 512 << 10)
        #expect(tail.entries.last?.version == 20_000 && tail.entries.count < 20_000)
        #expect(tail.lastKeys == nil, "no checkpoint in what was read: the last version's keys are unknown")
    }

    @Test("lines are found in a slice that does not start at 0, without empty ones, the last without its newline")
    func lineRanges() {
        let whole = Data("skipped\nfirst\n\n\nsecond\nlast".utf8)
        let slice = whole[8...]  // as a tail read returns it: after its first newline
        let lines = ChangeLog.lineRanges(of: slice).map { String(decoding: slice[$0], as: UTF8.self) }
        #expect(lines == ["first", "second", "last"])
        #expect(ChangeLog.lineRanges(of: Data()).isEmpty && ChangeLog.lineRanges(of: Data("\n\n".utf8)).isEmpty)
        // The backward scan of a log's end finds the same last line, in a slice, after empty lines or none.
        for text in [
            "skipped\nfirst\n\n\nsecond\nlast", "x\nfirst\nlast\n\n\n", "x\nlast\n", "x\n\n", "x\n", "x\nlast",
        ] {
            let data = Data(text.utf8)[2...]
            #expect(ChangeLog.lastLineRange(of: data) == ChangeLog.lineRanges(of: data).last, "\(text)")
        }
        #expect(ChangeLog.lastLineRange(of: Data()) == nil && ChangeLog.lastLineRange(of: Data("\n".utf8)) == nil)
    }

    @Test("every line reads back as written, whatever its keys and names hold; its JSON is what RFC 8259 allows")
    func linesReadBack() throws {
        // Every control character, the two that must be escaped, a slash, DEL, non-ASCII in 2, 3 and 4 bytes,
        // U+2028 (legal in JSON, not in JavaScript), and the empty string.
        let controls = String((0..<0x20).map { Character(Unicode.Scalar(UInt8($0))) })
        let keys = [controls, #"quote " backslash \ slash /"#, "\u{7F}", "é ü 日本 🐈‍⬛", "\u{2028}\u{2029}", "", "plain"]
        let hostileWriter = ChangeLog.Writer(executable: "ser\"ver\n\\x", pid: -1, uid: .max, revision: .min)
        let large = PropertyList.data(Data(repeating: 7, count: ChangeLog.maximumValueBytes + 1))
        for time in [0, -1.5, 1_764_222_222.123456, 1e-5, 1e15, 4e17, -0.0] {
            let entry = ChangeLog.Entry(
                time: Date(timeIntervalSince1970: time), origin: .fleet, writer: hostileWriter, version: .max,
                changes: keys.enumerated().map { index, key in
                    ChangeLog.Change(
                        key: key, old: index == 0 ? .unknown : index == 1 ? nil : ChangeLog.LoggedValue(.string(key)),
                        new: index == 2 ? nil : ChangeLog.LoggedValue(index == 3 ? large : .integer(index)))
                })
            let line = ChangeLog.line(entry)
            #expect(line.last == UInt8(ascii: "\n") && line.dropLast().allSatisfy { $0 != UInt8(ascii: "\n") })
            let read = ChangeLog(parsing: line).entries
            #expect(read.count == 1)
            #expect(read.first?.changes == entry.changes && read.first?.writer == hostileWriter)
            #expect(read.first?.time.timeIntervalSince1970 == entry.time.timeIntervalSince1970, "\(time)")
            // A strict reader other than ours takes it too (JSONSerialization refuses raw control characters).
            #expect((try? JSONSerialization.jsonObject(with: line)) != nil)
        }
        let external = entry([("A", 1, 2)], version: 3, origin: .external)
        #expect(ChangeLog(parsing: ChangeLog.line(external)).entries == [external])

        let digests = Dictionary(uniqueKeysWithValues: keys.enumerated().map { ($1, UInt64($0) << 60) })
        let checkpoint = ChangeLog(parsing: ChangeLog.checkpointLine(version: 0, keys: digests))
        #expect(checkpoint.lastVersion == 0 && checkpoint.lastKeys == digests)
    }

    @Test("base64 written into a line is Foundation's, for every length and byte")
    func base64() {
        for count in 0...70 {
            let data = Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ count &* 11) })
            var json = JSONLine()
            json.base64(data)
            #expect(json.bytes == Array("\"\(data.base64EncodedString())\"".utf8), "\(count) bytes")
        }
        var json = JSONLine()
        json.base64(Data(0...255))
        #expect(json.bytes == Array("\"\(Data(0...255).base64EncodedString())\"".utf8))
    }

    @Test("integers and digests are spelled as description and String(radix: 16) spell them")
    func digits() {
        let integers: [Int] = [0, 7, -1, 10, -10, 4_294_967_296, Int.max, Int.min, Int.min + 1]
        for value in integers {
            var bytes: [UInt8] = [0x41]
            bytes.appendDecimal(value)
            #expect(bytes == [0x41] + Array(value.description.utf8), "\(value)")
        }
        for value in [Int32.min, Int32.max, -5] {
            var bytes: [UInt8] = []
            bytes.appendDecimal(value)
            #expect(bytes == Array(value.description.utf8))
        }
        for value in [UInt64.max, 0, 255] {
            var bytes: [UInt8] = []
            bytes.appendDecimal(value)
            #expect(bytes == Array(value.description.utf8))
        }
        var wide: [UInt8] = []
        wide.appendDecimal(Int128.min)
        #expect(wide == Array(Int128.min.description.utf8), "wider than 64 bits: through description")
        for digest: UInt64 in [0, 0x1f, 0xdead_beef, 0x0123_4567_89ab_cdef, UInt64.max, 1 << 63] {
            let text = FileVersion.hex(digest)
            let plain = String(digest, radix: 16)
            #expect(text == String(repeating: "0", count: 16 - plain.count) + plain)
            #expect(FileVersion.number(hex: text) == digest)
        }
    }

    @Test("a line's text: members in sorted order, control characters escaped, other text as UTF-8")
    func lineText() {
        var json = JSONLine()
        json.object { json in
            json.member("a", "x\u{1}\t\"/é")
            json.name("b")
            json.array { json in
                json.integer(-3)
                json.number(0.5)
                json.number(.infinity)
                json.bool(false)
                json.object { _ in }
            }
            json.member("c", nil)
        }
        let text = String(decoding: json.line(), as: UTF8.self)
        #expect(text == #"{"a":"x\u0001\t\"/é","b":[-3,0.5,0.0,false,{}]}"# + "\n")
        let line = ChangeLog.line(entry([("K", nil, true)], version: 0x1f))
        #expect(
            String(decoding: line, as: UTF8.self)
                == #"{"changes":[{"key":"K","new":{"plist":"YnBsaXN0MDAJCAAAAAAAAAEBAAAAAAAAAAEAAAAAAAAAAAAAAAAAAAAJ"}}],"#
                + #""origin":"local","time":1764222222.5,"v":1,"version":"000000000000001f","#
                + #""writer":{"executable":"api-server","pid":4242,"uid":1000}}"# + "\n")
    }
}
