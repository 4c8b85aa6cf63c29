import Foundation

/// The change log's line format: an entry, an intent, a refusal and a checkpoint as JSON lines, written and
/// read back (Docs/OnDisk.md, "The change log").
extension ChangeLog {
    // MARK: Lines

    /// The JSON object of a line, as it is read (``line(_:)`` and ``checkpointLine(version:keys:)`` write it).
    private struct Line: Decodable {
        var v: Int
        var time: Double?
        var origin: ChangeOrigin?
        var writer: Writer?
        /// Absent from an intent, which names its version `intent` (a reader of an older format skips it).
        var version: String?
        var intent: String?
        var changes: [LineChange]?
        /// A checkpoint's key digests.
        var keys: [String: String]?
        /// A refusal's version and reason.
        var refused: String?
        var reason: String?
    }

    private struct LineChange: Decodable {
        var key: String
        var old: LineValue?
        var new: LineValue?
    }

    /// A value: `plist` (base64 of its binary encoding), or `digest`, `type` and `size` for a large one, or
    /// `unknown: true`.
    private struct LineValue: Decodable {
        var plist: String?
        var digest: String?
        var type: String?
        var size: Int?
        var unknown: Bool?
    }

    /// A value's member of a change, unless the value is absent. Members in sorted order, as every object of
    /// a line has them.
    private static func write(_ value: LoggedValue?, named name: String, into json: inout JSONLine) {
        guard let value else { return }
        json.name(name)
        json.object { json in
            switch value {
            case .value(_, let encoding):
                json.name("plist")
                json.base64(encoding)
            case .summary(let digest, let type, let size):
                json.member("digest", FileVersion.hex(digest))
                json.name("size")
                json.integer(size)
                json.member("type", type)
            case .unknown:
                json.name("unknown")
                json.bool(true)
            }
        }
    }

    /// A logged value from a line; nil for a line value that is none (absent from the line means absent).
    private static func loggedValue(_ line: LineValue) -> LoggedValue? {
        if line.unknown == true { return .unknown }
        if let plist = line.plist {
            guard let data = Data(base64Encoded: plist), let value = try? PropertyList.decode(data, as: .binary)
            else { return nil }
            // Encoded again rather than kept as read: the digest is of this process's encoding, the one every
            // checkpoint holds, even when another writer encoded the value otherwise.
            return .value(value, encoding: encode(value))
        }
        guard let digest = line.digest.flatMap(FileVersion.number(hex:)), let type = line.type, let size = line.size,
            size >= 0
        else { return nil }
        return .summary(digest: digest, type: type, size: size)
    }

    /// An entry's line, with its newline.
    static func line(_ entry: Entry) -> Data {
        var json = JSONLine(capacity: 128 + 160 * entry.changes.count)
        json.object { json in
            json.name("changes")
            json.array { json in
                for change in entry.changes {
                    json.object { json in
                        json.member("key", change.key)
                        write(change.new, named: "new", into: &json)
                        write(change.old, named: "old", into: &json)
                    }
                }
            }
            json.member("origin", entry.origin.rawValue)
            if let reason = entry.reason { json.member("reason", reason) }
            json.name("time")
            json.number(entry.time.timeIntervalSince1970)
            json.name("v")
            json.integer(formatVersion)
            json.member("version", FileVersion.hex(entry.version))
            if let writer = entry.writer { write(writer, into: &json) }
        }
        return json.line()
    }

    /// An intent's line for the version `entry` records, with its newline: `intent`, `origin`, `reason` (when
    /// the entry has one), `v`, `writer`.
    static func intentLine(_ entry: Entry) -> Data {
        var json = JSONLine(capacity: 160 + (entry.reason?.utf8.count ?? 0))
        json.object { json in
            json.member("intent", FileVersion.hex(entry.version))
            json.member("origin", entry.origin.rawValue)
            if let reason = entry.reason { json.member("reason", reason) }
            json.name("v")
            json.integer(formatVersion)
            if let writer = entry.writer { write(writer, into: &json) }
        }
        return json.line()
    }

    /// A refusal's line, with its newline: `reason`, `refused` (the version), `time`, `v`, `writer` (the reader).
    static func refusalLine(_ refusal: Refusal) -> Data {
        var json = JSONLine(capacity: 160 + refusal.reason.utf8.count)
        json.object { json in
            json.member("reason", refusal.reason)
            json.member("refused", FileVersion.hex(refusal.version))
            json.name("time")
            json.number(refusal.time.timeIntervalSince1970)
            json.name("v")
            json.integer(formatVersion)
            write(refusal.reader, into: &json)
        }
        return json.line()
    }

    /// The `writer` member of a line.
    private static func write(_ writer: Writer, into json: inout JSONLine) {
        json.name("writer")
        json.object { json in
            json.member("executable", writer.executable)
            json.name("pid")
            json.integer(writer.pid)
            if let revision = writer.revision {
                json.name("revision")
                json.integer(revision)
            }
            json.name("uid")
            json.integer(writer.uid)
        }
    }

    /// A checkpoint's line, with its newline.
    static func checkpointLine(version: UInt64, keys: [String: UInt64]) -> Data {
        var json = JSONLine(capacity: 64 + 40 * keys.count)
        json.object { json in
            json.name("keys")
            json.object { json in
                for (key, digest) in keys.sorted(by: { $0.key < $1.key }) { json.member(key, FileVersion.hex(digest)) }
            }
            json.name("v")
            json.integer(formatVersion)
            json.member("version", FileVersion.hex(version))
        }
        return json.line()
    }

    // MARK: Reading

    /// The ranges of `data`'s non-empty lines (a last line without its newline included), in order. Scanned
    /// with integer indices through the raw bytes: `Data.split` and a slice's `firstIndex(of:)` go through the
    /// generic collection interface byte by byte, which a build without optimisation does not specialise.
    static func lineRanges(of data: Data) -> [Range<Data.Index>] {
        data.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) -> [Range<Data.Index>] in
            var ranges: [Range<Data.Index>] = []
            var start = 0
            for index in 0..<bytes.count where bytes[index] == UInt8(ascii: "\n") {
                if index > start { ranges.append((data.startIndex + start)..<(data.startIndex + index)) }
                start = index + 1
            }
            if bytes.count > start { ranges.append((data.startIndex + start)..<(data.startIndex + bytes.count)) }
            return ranges
        }
    }

    /// The last of ``lineRanges(of:)``, found by scanning back from the end: a look at a log's end (each write,
    /// each reload) reads one line's bytes, not the whole tail it read.
    static func lastLineRange(of data: Data) -> Range<Data.Index>? {
        data.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) -> Range<Data.Index>? in
            var end = bytes.count
            while end > 0 && bytes[end - 1] == UInt8(ascii: "\n") { end -= 1 }
            guard end > 0 else { return nil }
            var start = end
            while start > 0 && bytes[start - 1] != UInt8(ascii: "\n") { start -= 1 }
            return (data.startIndex + start)..<(data.startIndex + end)
        }
    }

    /// The log these bytes hold: every line that reads as an entry or a checkpoint of this format, in order;
    /// any other line (torn, hostile, of another version) is skipped.
    init(parsing data: Data) {
        let decoder = JSONDecoder()
        var keys: [String: UInt64]?
        var version: UInt64?
        for range in Self.lineRanges(of: data) {
            guard let line = try? decoder.decode(Line.self, from: data[range]), line.v == Self.formatVersion else {
                continue
            }
            if let refused = line.refused {
                // Not a version of the file: the entries, checkpoints and intents around it read as without it.
                if line.version == nil, line.intent == nil, let digest = FileVersion.number(hex: refused),
                    let time = line.time, time.isFinite, let reason = line.reason, let reader = line.writer
                {
                    refusals[digest, default: []].append(
                        Refusal(
                            time: Date(timeIntervalSince1970: time), version: digest, reason: reason, reader: reader))
                }
                continue
            }
            if let intent = line.intent {
                if line.version == nil, let digest = FileVersion.number(hex: intent), let origin = line.origin,
                    origin != .external, let writer = line.writer
                {
                    intents[digest] = Intent(origin: origin, writer: writer, reason: line.reason)
                }
                continue
            }
            guard let digest = line.version.flatMap(FileVersion.number(hex:)) else { continue }
            if let checkpoint = line.keys {
                var parsed: [String: UInt64] = [:]
                var valid = true
                for (key, text) in checkpoint {
                    guard let value = FileVersion.number(hex: text) else {
                        valid = false
                        break
                    }
                    parsed[key] = value
                }
                guard valid else { continue }
                keys = parsed
                version = digest
                checkpoints.append(Checkpoint(entriesBefore: entries.count, version: digest, keys: parsed))
                // An intent announces a version not yet recorded: one recorded since is no longer pending.
                intents.removeAll()
                continue
            }
            guard let time = line.time, time.isFinite, let origin = line.origin, let lineChanges = line.changes
            else { continue }
            var changes: [Change] = []
            for change in lineChanges {
                let new = change.new.flatMap(Self.loggedValue)
                // A new value is always known: a line that says otherwise is none of ours.
                if new == .unknown { break }
                changes.append(Change(key: change.key, old: change.old.flatMap(Self.loggedValue), new: new))
            }
            guard changes.count == lineChanges.count else { continue }
            intents.removeAll()
            entries.append(
                Entry(
                    time: Date(timeIntervalSince1970: time), origin: origin, writer: line.writer, version: digest,
                    changes: changes, reason: line.reason))
            // What the last logged version held: the checkpoint with each later entry's new values on top.
            if keys != nil {
                for change in changes {
                    keys?[change.key] = change.new?.digest
                }
                version = digest
            }
        }
        lastKeys = keys
        lastVersion = version
    }

    /// The log at `path`: at most its last ``maximumReadSize`` bytes are read (a log grown past that by another
    /// writer is cut at its first whole line); an absent or unreadable log is empty.
    static func read(
        at path: String, maximumBytes: Int = maximumReadSize,
        on fileSystem: any DefaultsFileSystem
    ) -> ChangeLog {
        guard let data = fileSystem.readTail(atPath: path, maximumBytes: maximumBytes) else {
            return ChangeLog()
        }
        return ChangeLog(parsing: data)
    }
}
