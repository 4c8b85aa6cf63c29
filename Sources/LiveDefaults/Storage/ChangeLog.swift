import Foundation

/// A domain file's change log: which writer changed which keys, from what to what, and when (Docs/OnDisk.md,
/// "The change log"). It lives beside the file (`.<file name>.log`, as the lock is `.<file name>.lock`), one
/// JSON object per line, oldest first, and is bounded: past ``maximumSize`` the oldest entries are dropped.
///
/// Two kinds of line:
/// - an **entry**: a version of the file someone wrote — when, the writer (its executable, process and user;
///   the agent's etcd revision) or `external` when no LiveDefaults writer made it, the version's digest, and
///   each key changed with its old and new value (a value larger than ``maximumValueBytes`` encoded is logged as
///   its digest, type and size);
/// - a **checkpoint**: a version's digest and the digest of each key's value in it. The log's last checkpoint
///   with the entries after it say what the last logged version held, key by key, so that a process finding
///   the file changed by someone else can tell which keys they changed.
///
/// The log is a record, not the data: it is appended without `fdatasync` (a crash may lose its last lines,
/// never a value), and a log that cannot be read or written never stops a write — its unreadable lines are
/// skipped and a write that cannot append says nothing.
struct ChangeLog: Sendable, Equatable {
    /// The size beyond which the oldest entries are dropped (the log is rewritten with its newest half).
    static let maximumSize = 256 << 10
    /// Values whose binary encoding is larger are logged as their digest, type and size, not whole.
    static let maximumValueBytes = 1024
    /// The format of the lines this version writes; lines of another are skipped.
    static let formatVersion = 1

    /// Who made a version: a LiveDefaults writer in a process, or nobody known.
    enum Origin: String, Sendable, Hashable, Codable {
        /// A program through the library, or the `defaults` command.
        case local
        /// The fleet agent (`defaults sync`), applying etcd's change.
        case fleet
        /// No LiveDefaults writer: an editor, another tool; noticed by a process that read the new version.
        case external
    }

    /// The process that wrote a version.
    struct Writer: Sendable, Hashable, Codable {
        var executable: String
        var pid: Int32
        var uid: UInt32
        /// For the fleet agent: the etcd revision it applied.
        var revision: Int64?
    }

    /// This process as a writer: its executable's name, process and effective user.
    static let thisProcess = Writer(
        executable: CurrentProcess.executablePath.map(PathComponents.name(of:)) ?? "?", pid: CurrentProcess.id,
        uid: CurrentProcess.effectiveUserID, revision: nil)

    /// A value as the log holds it: whole, or, when large, its digest, type and encoded size.
    enum LoggedValue: Sendable, Hashable {
        case value(PropertyList)
        case summary(digest: UInt64, type: String, size: Int)

        /// The value as logged: whole when small enough, else summarised.
        init(_ value: PropertyList) {
            let encoded = ChangeLog.encode(value)
            if encoded.count <= ChangeLog.maximumValueBytes {
                self = .value(value)
            } else {
                self = .summary(digest: ChangeLog.digest(encoded), type: value.typeName, size: encoded.count)
            }
        }

        /// The digest of the value's binary encoding, whichever way it is logged.
        var digest: UInt64 {
            switch self {
            case .value(let value): ChangeLog.digest(ChangeLog.encode(value))
            case .summary(let digest, _, _): digest
            }
        }
    }

    /// One key of a version: its value before and after (nil: absent).
    struct Change: Sendable, Hashable {
        var key: String
        var old: LoggedValue?
        var new: LoggedValue?
    }

    /// One version someone wrote.
    struct Entry: Sendable, Hashable {
        var time: Date
        var origin: Origin
        /// Nil for an external change.
        var writer: Writer?
        /// The digest of the version's file, as the store computes it for every version it reads or writes:
        /// a process that reads a version can tell whether the log recorded it.
        var version: UInt64
        var changes: [Change]
    }

    /// The entries, oldest first.
    var entries: [Entry] = []
    /// The digest of the last version the log recorded, and each of its keys' value digests; nil when the log
    /// holds no checkpoint (absent, or every line unreadable).
    var lastVersion: UInt64?
    var lastKeys: [String: UInt64]?

    // MARK: Digests

    /// A value's binary property-list encoding (the same bytes for the same value in every process).
    static func encode(_ value: PropertyList) -> Data {
        (try? value.encoded(as: .binary)) ?? Data()
    }

    static func digest(_ data: Data) -> UInt64 {
        data.withUnsafeBytes { FastHash.hash($0) }
    }

    /// Each key's value digest.
    static func keyDigests(of contents: [String: PropertyList]) -> [String: UInt64] {
        contents.mapValues { digest(encode($0)) }
    }

    // MARK: Lines

    /// The JSON object of a line, as Codable writes and reads it.
    private struct Line: Codable {
        var v: Int
        var time: Double?
        var origin: Origin?
        var writer: Writer?
        var version: String
        var changes: [LineChange]?
        /// A checkpoint's key digests.
        var keys: [String: String]?
    }

    private struct LineChange: Codable {
        var key: String
        var old: LineValue?
        var new: LineValue?
    }

    /// A value: `plist` (base64 of its binary encoding), or `digest`, `type` and `size` for a large one.
    private struct LineValue: Codable {
        var plist: String?
        var digest: String?
        var type: String?
        var size: Int?
    }

    private static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: max(0, 16 - digits.count)) + digits
    }

    private static func number(hex text: String) -> UInt64? {
        text.utf8.count == 16 ? UInt64(text, radix: 16) : nil
    }

    private static func lineValue(_ value: LoggedValue?) -> LineValue? {
        switch value {
        case nil: nil
        case .value(let value)?: LineValue(plist: encode(value).base64EncodedString())
        case .summary(let digest, let type, let size)?: LineValue(digest: hex(digest), type: type, size: size)
        }
    }

    /// A logged value from a line; nil for a line value that is none (absent from the line means absent).
    private static func loggedValue(_ line: LineValue) -> LoggedValue? {
        if let plist = line.plist {
            guard let data = Data(base64Encoded: plist), let value = try? PropertyList.decode(data, as: .binary)
            else { return nil }
            return .value(value)
        }
        guard let digest = line.digest.flatMap(number(hex:)), let type = line.type, let size = line.size, size >= 0
        else { return nil }
        return .summary(digest: digest, type: type, size: size)
    }

    /// An entry's line, with its newline.
    static func line(_ entry: Entry) -> Data {
        let line = Line(
            v: formatVersion, time: entry.time.timeIntervalSince1970, origin: entry.origin, writer: entry.writer,
            version: hex(entry.version),
            changes: entry.changes.map { LineChange(key: $0.key, old: lineValue($0.old), new: lineValue($0.new)) })
        return encodeLine(line)
    }

    /// A checkpoint's line, with its newline.
    static func checkpointLine(version: UInt64, keys: [String: UInt64]) -> Data {
        encodeLine(Line(v: formatVersion, version: hex(version), keys: keys.mapValues(hex)))
    }

    private static func encodeLine(_ line: Line) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var data = (try? encoder.encode(line)) ?? Data()
        data.append(UInt8(ascii: "\n"))
        return data
    }

    // MARK: Reading

    /// The log these bytes hold: every line that reads as an entry or a checkpoint of this format, in order;
    /// any other line (torn, hostile, of another version) is skipped.
    init(parsing data: Data) {
        let decoder = JSONDecoder()
        var keys: [String: UInt64]?
        var version: UInt64?
        for slice in data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true) {
            guard let line = try? decoder.decode(Line.self, from: Data(slice)), line.v == Self.formatVersion,
                let digest = Self.number(hex: line.version)
            else { continue }
            if let checkpoint = line.keys {
                var parsed: [String: UInt64] = [:]
                var valid = true
                for (key, text) in checkpoint {
                    guard let value = Self.number(hex: text) else {
                        valid = false
                        break
                    }
                    parsed[key] = value
                }
                guard valid else { continue }
                keys = parsed
                version = digest
                continue
            }
            guard let time = line.time, time.isFinite, let origin = line.origin, let lineChanges = line.changes
            else { continue }
            var changes: [Change] = []
            for change in lineChanges {
                changes.append(
                    Change(
                        key: change.key, old: change.old.flatMap(Self.loggedValue),
                        new: change.new.flatMap(Self.loggedValue)))
            }
            entries.append(
                Entry(
                    time: Date(timeIntervalSince1970: time), origin: origin, writer: line.writer, version: digest,
                    changes: changes))
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

    /// The log at `path`: at most its last ``maximumSize`` × 2 bytes are read (a log grown past that by
    /// another writer is cut at its first whole line); an absent or unreadable log is empty.
    static func read(at path: String) -> ChangeLog {
        guard let data = FileSystem.readTail(atPath: path, maximumBytes: maximumSize * 2) else {
            return ChangeLog()
        }
        return ChangeLog(parsing: data)
    }

    init() {}

    // MARK: Writing

    /// The log of a domain file: `.<name>.log` beside it.
    static func path(forDomainFile path: String) -> String {
        "\(PathComponents.directory(of: path))/.\(PathComponents.name(of: path)).log"
    }

    /// Appends `entry`, the version whose contents are `contents`, written over `previous` (the version whose
    /// digest is `previousVersion`; 0 when there was no file). Call it with the domain's file lock held, so that
    /// entries are in the order of the versions. A log that does not exist yet starts with a checkpoint of
    /// `previous`; a log past ``maximumSize`` is rewritten with its newer half of entries and a checkpoint of
    /// `contents`. Failures are returned for the caller to ignore or report: the write they describe has
    /// happened.
    @discardableResult
    static func append(
        _ entry: Entry, contents: [String: PropertyList], previous: [String: PropertyList], previousVersion: UInt64,
        at path: String, owner: (UserID, GroupID)? = nil
    ) -> SystemError? {
        let line = line(entry)
        do throws(SystemError) {
            let size = try FileSystem.size(atPath: path)
            if size == nil {
                let start = checkpointLine(version: previousVersion, keys: keyDigests(of: previous))
                try FileSystem.append(start + line, toPath: path, owner: owner)
                return nil
            }
            if let size, size + line.count > maximumSize {
                try rewrite(at: path, adding: line, version: entry.version, contents: contents, owner: owner)
                return nil
            }
            try FileSystem.append(line, toPath: path, owner: owner)
            return nil
        } catch {
            return error
        }
    }

    /// Rewrites the log with the newer entries that fit in half of ``maximumSize``, `line`, and a checkpoint of
    /// `contents` (the version `line` recorded, `version`), replacing the file at once.
    private static func rewrite(
        at path: String, adding line: Data, version: UInt64, contents: [String: PropertyList],
        owner: (UserID, GroupID)?
    ) throws(SystemError) {
        let old = FileSystem.readTail(atPath: path, maximumBytes: maximumSize * 2) ?? Data()
        var kept: [Data.SubSequence] = []
        var total = 0
        for slice in old.split(separator: UInt8(ascii: "\n")).reversed() {
            guard total + slice.count + 1 <= maximumSize / 2 else { break }
            kept.append(slice)
            total += slice.count + 1
        }
        var data = Data()
        for slice in kept.reversed() {
            data.append(slice)
            data.append(UInt8(ascii: "\n"))
        }
        data.append(line)
        data.append(checkpointLine(version: version, keys: keyDigests(of: contents)))
        _ = try FileSystem.replaceAtomically(path, with: data, owner: owner, flush: false)
    }
}
