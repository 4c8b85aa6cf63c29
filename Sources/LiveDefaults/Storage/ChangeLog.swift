import Foundation
import Synchronization

/// A domain file's change log: which writer changed which keys, from what to what, and when (Docs/OnDisk.md,
/// "The change log"). It lives beside the file (`.<file name>.log`, as the lock is `.<file name>.lock`), one
/// JSON object per line, oldest first, and is bounded: past ``maximumSize`` the oldest entries are dropped.
///
/// Three kinds of line:
/// - an **entry**: a version of the file someone wrote — when, the writer (its executable, process and user;
///   the agent's etcd revision) or `external` when no LiveDefaults writer made it, the version's digest, and
///   each key changed with its old and new value (a value larger than ``maximumValueBytes`` encoded is logged as
///   its digest, type and size);
/// - a **checkpoint**: a version's digest and the digest of each key's value in it. The log's last checkpoint
///   with the entries after it say what the last logged version held, key by key, so that a process finding
///   the file changed by someone else can tell which keys they changed;
/// - an **intent**: the version a LiveDefaults writer is about to rename into place, and who it is, without
///   keys. The writer appends it before its rename and the entry after it, both under the domain's file lock:
///   an entry is only ever written for a version that landed, and a writer stopped between the rename and
///   its entry leaves its intent, so that whoever records the version later (as one nobody logged) names the
///   writer rather than `external`. An intent whose version never landed is never shown;
/// - a **refusal**: a reading process whose validators refused a version of the file (it kept the version
///   before): when, the version, the validator's reason, and the process. Appended by the refusing process, in
///   the background; it records nothing of the file's contents, so the lines around it read as without it.
///
/// The log is a record, not the data: it is appended without `fdatasync` (a crash may lose its last lines,
/// never a value), and a log that cannot be read or written never stops a write — its unreadable lines are
/// skipped and a write that cannot append says nothing.
struct ChangeLog: Sendable, Equatable {
    /// The size beyond which the oldest entries are dropped (the log is rewritten with its newest quarter,
    /// ``keptSize(bound:)``), for a domain of up to about 1,300 keys; a larger domain's bound is eight of its
    /// checkpoints (``bound(keys:)``).
    static let maximumSize = 512 << 10
    /// The most a reader takes of a log (its end): a log grown past any bound by a hostile writer costs no more.
    static let maximumReadSize = 16 << 20
    /// Values whose binary encoding is larger are logged as their digest, type and size, not whole.
    static let maximumValueBytes = 1024
    /// The format of the lines this version writes; lines of another are skipped.
    static let formatVersion = 1

    /// Whether this process writes change logs: always, but for the benchmark that measures what the log costs
    /// a write (``Defaults/changeLogIsEnabled``).
    static let isEnabled = Atomic<Bool>(true)

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

    /// A value as the log holds it: whole, or, when large, its digest, type and encoded size; or, for the old
    /// value of an external change, unknown (the log held only its digest and the noticing process had no copy).
    enum LoggedValue: Sendable, Hashable {
        /// A value and its binary encoding (``ChangeLog/encode(_:)``), made once: the size check, the line and
        /// the digest all need it.
        case value(PropertyList, encoding: Data)
        case summary(digest: UInt64, type: String, size: Int)
        case unknown

        /// The value as logged: whole when small enough, else summarised.
        init(_ value: PropertyList) {
            let encoded = ChangeLog.encode(value)
            if encoded.count <= ChangeLog.maximumValueBytes {
                self = .value(value, encoding: encoded)
            } else {
                self = .summary(digest: FastHash.hash(encoded), type: value.typeName, size: encoded.count)
            }
        }

        /// The digest of the value's binary encoding, whichever way it is logged; nil when unknown.
        var digest: UInt64? {
            switch self {
            case .value(_, let encoding): FastHash.hash(encoding)
            case .summary(let digest, _, _): digest
            case .unknown: nil
            }
        }
    }

    /// One key of a version: its value before and after (nil: absent).
    struct Change: Sendable, Hashable {
        var key: String
        var old: LoggedValue?
        var new: LoggedValue?
    }

    /// A writer's announcement of the version it is about to rename into place.
    struct Intent: Sendable, Hashable {
        var origin: Origin
        var writer: Writer
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
        /// Why the writer made it, when it said (``ChangeLogAttribution/reason``): `defaults write --wait` putting
        /// back a version a reader refused says which and why.
        var reason: String? = nil
    }

    /// A reading process that refused a version (``Defaults/addValidator(_:)``).
    struct Refusal: Sendable, Hashable {
        var time: Date
        var version: UInt64
        var reason: String
        var reader: Writer
    }

    /// The entries, oldest first.
    var entries: [Entry] = []
    /// The refusals, by the version refused, each version's oldest first.
    var refusals: [UInt64: [Refusal]] = [:]
    /// Who announced each version in an intent line after the last entry or checkpoint (origin and writer), by
    /// the version's digest: the versions announced and not recorded since.
    var intents: [UInt64: Intent] = [:]
    /// The digest of the last version the log recorded, and each of its keys' value digests; nil when the log
    /// holds no checkpoint (absent, or every line unreadable).
    var lastVersion: UInt64?
    var lastKeys: [String: UInt64]?
    /// The checkpoints, oldest first, each with the number of entries before it: with the entries' new values
    /// they say what every logged version held, key by key (``LoggedVersions``).
    var checkpoints: [Checkpoint] = []

    /// A checkpoint line: a version, each of its keys' value digests, and how many entries come before it.
    struct Checkpoint: Sendable, Hashable {
        var entriesBefore: Int
        var version: UInt64
        var keys: [String: UInt64]
    }

    // MARK: Digests

    /// A value's binary property-list encoding (the same bytes for the same value in every process).
    static func encode(_ value: PropertyList) -> Data {
        (try? value.encoded(as: .binary)) ?? Data()
    }

    /// Each key's value digest.
    static func keyDigests(of contents: [String: PropertyList]) -> [String: UInt64] {
        contents.mapValues { FastHash.hash(encode($0)) }
    }

    // MARK: Lines

    /// The JSON object of a line, as it is read (``line(_:)`` and ``checkpointLine(version:keys:)`` write it).
    private struct Line: Decodable {
        var v: Int
        var time: Double?
        var origin: Origin?
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

    /// An intent's line for the version `entry` records, with its newline: `intent`, `origin`, `v`, `writer`.
    static func intentLine(_ entry: Entry) -> Data {
        var json = JSONLine(capacity: 160)
        json.object { json in
            json.member("intent", FileVersion.hex(entry.version))
            json.member("origin", entry.origin.rawValue)
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
                    intents[digest] = Intent(origin: origin, writer: writer)
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
        on fileSystem: any DefaultsFileSystem = SystemFileSystem.shared
    ) -> ChangeLog {
        guard let data = fileSystem.readTail(atPath: path, maximumBytes: maximumBytes) else {
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

    /// The size past which the log of a domain of `keys` keys is rewritten: ``maximumSize``, or eight
    /// checkpoints of the domain when that is more (a checkpoint line takes about 48 bytes a key; a rewrite
    /// keeps a quarter of the bound and adds a checkpoint, and a bound that those two filled would rewrite the
    /// log at every write).
    static func bound(keys: Int) -> Int {
        let checkpoints = keys.multipliedReportingOverflow(by: 8 * 48)
        return min(maximumReadSize / 2, max(maximumSize, checkpoints.overflow ? Int.max : checkpoints.partialValue))
    }

    /// Appends `entry`, the version whose contents are `contents`, written over `previous` (the version whose
    /// digest is `previousVersion`; 0 when there was no file). Call it with the domain's file lock held, so that
    /// entries are in the order of the versions. A log that does not exist yet (or is empty) starts with a
    /// checkpoint of `previous`; a log past its ``bound(keys:)`` is rewritten with its newest entries (``keptSize(bound:)``) and a checkpoint
    /// of `contents`. Failures are returned for the caller to ignore or report: the write they describe has
    /// happened.
    ///
    /// - Parameter opened: the log, when the caller has it open (it appended the write's intent through it,
    ///   under the same lock): one `open` and one `close` a write rather than two.
    @discardableResult
    static func append(
        _ entry: Entry, contents: [String: PropertyList], previous: [String: PropertyList], previousVersion: UInt64,
        at path: String, owner: (UserID, GroupID)? = nil, through opened: AppendingFile? = nil,
        on fileSystem: any DefaultsFileSystem = SystemFileSystem.shared
    ) -> SystemError? {
        append(
            line: line(entry), version: entry.version, contents: contents, previous: previous,
            previousVersion: previousVersion, at: path, owner: owner, through: opened, on: fileSystem)
    }

    /// ``append(_:contents:previous:previousVersion:at:owner:through:on:)`` with the entry's line made already
    /// (``line(_:)``); `version` is the version it records.
    @discardableResult
    static func append(
        line: Data, version: UInt64, contents: [String: PropertyList], previous: [String: PropertyList],
        previousVersion: UInt64, at path: String, owner: (UserID, GroupID)? = nil,
        through opened: AppendingFile? = nil, on fileSystem: any DefaultsFileSystem = SystemFileSystem.shared
    ) -> SystemError? {
        do throws(SystemError) {
            let file: AppendingFile
            if let opened { file = opened } else { file = try AppendingFile(path: path, owner: owner, on: fileSystem) }
            let size = try file.size()
            guard size > 0 else {
                try file.append(startLine(previous: previous, version: previousVersion) + line)
                return nil
            }
            let bound = bound(keys: contents.count)
            if size + line.count > bound {
                try rewrite(
                    at: path, adding: line, version: version, contents: contents, bound: bound, owner: owner,
                    on: fileSystem)
                return nil
            }
            try file.append(line)
            return nil
        } catch {
            return error
        }
    }

    /// Appends the intent of the version `entry` records (``intentLine(_:)``) to the open log `file`, before the
    /// writer renames the version into place, with the domain's file lock held; a log that is new (or empty)
    /// starts with a checkpoint of `previous` (whose digest is `previousVersion`), as
    /// ``append(_:contents:previous:previousVersion:at:owner:through:on:)`` would start it. Failures are returned
    /// for the caller to ignore: the intent only names a writer.
    @discardableResult
    static func appendIntent(
        _ entry: Entry, previous: [String: PropertyList], previousVersion: UInt64, to file: AppendingFile
    ) -> SystemError? {
        let line = intentLine(entry)
        do throws(SystemError) {
            let isNew = try file.size() == 0
            try file.append(isNew ? startLine(previous: previous, version: previousVersion) + line : line)
            return nil
        } catch {
            return error
        }
    }

    /// ``appendIntent(_:previous:previousVersion:to:)`` to the log at `path`, opened for it.
    @discardableResult
    static func appendIntent(
        _ entry: Entry, previous: [String: PropertyList], previousVersion: UInt64, at path: String,
        owner: (UserID, GroupID)? = nil, on fileSystem: any DefaultsFileSystem = SystemFileSystem.shared
    ) -> SystemError? {
        do throws(SystemError) {
            let file = try AppendingFile(path: path, owner: owner, on: fileSystem)
            return appendIntent(entry, previous: previous, previousVersion: previousVersion, to: file)
        } catch {
            return error
        }
    }

    /// A new log's first line: a checkpoint of the version before the first entry.
    private static func startLine(previous: [String: PropertyList], version: UInt64) -> Data {
        checkpointLine(version: version, keys: keyDigests(of: previous))
    }

    /// What a rewrite keeps of a log whose bound is `bound`: its newest lines that fit in a quarter of it.
    ///
    /// A quarter of a larger bound rather than half of a smaller one: the log keeps at least as much history,
    /// and a rewrite copies what it keeps, so each byte appended pays for a third of a byte copied instead of a
    /// whole one. That copy (read, written, renamed) is what a write of many keys, whose entries are long,
    /// paid most for beside the entry itself.
    static func keptSize(bound: Int) -> Int {
        bound / 4
    }

    /// Rewrites the log with the newer entries that fit in ``keptSize(bound:)``, `line`, and a checkpoint of
    /// `contents` (the version `line` recorded, `version`), replacing the file at once.
    private static func rewrite(
        at path: String, adding line: Data, version: UInt64, contents: [String: PropertyList], bound: Int,
        owner: (UserID, GroupID)?, on fileSystem: any DefaultsFileSystem
    ) throws(SystemError) {
        // Only the lines that fit in the kept size are kept: the log's last that many bytes hold them all, and
        // one byte more shows whether the first of them starts a line (a log past the bound is not read whole).
        let keep = keptSize(bound: bound)
        let old = fileSystem.readTail(atPath: path, maximumBytes: min(maximumReadSize, keep + 1)) ?? Data()
        var kept: [Data.SubSequence] = []
        var total = 0
        for range in lineRanges(of: old).reversed() {
            guard total + range.count + 1 <= keep else { break }
            kept.append(old[range])
            total += range.count + 1
        }
        var data = Data()
        for slice in kept.reversed() {
            data.append(slice)
            data.append(UInt8(ascii: "\n"))
        }
        data.append(line)
        data.append(checkpointLine(version: version, keys: keyDigests(of: contents)))
        _ = try fileSystem.replaceAtomically(path, with: data, owner: owner, flush: false)
    }

    // MARK: Versions no LiveDefaults writer made

    /// What the log's last line says, read from the log's last few KiB without parsing the rest.
    enum Tail: Equatable {
        /// There is no log.
        case absent
        /// The last line records this version (an entry's or a checkpoint's).
        case recorded(UInt64)
        /// The last line is none of ours, or too long to be read this way.
        case unknown
    }

    /// The log's last line, from its last 16 KiB: the cheap question every reload and write asks (whether the
    /// version it holds is the one the log recorded last). A last line longer than that (a write of many keys
    /// records them all in one entry) is read with a window four times as large, up to ``maximumReadSize``:
    /// taken for unknown, it would send every write and reload to the whole log.
    static func tail(at path: String, on fileSystem: any DefaultsFileSystem = SystemFileSystem.shared) -> Tail {
        var window = 16 << 10
        while true {
            guard let data = fileSystem.readTail(atPath: path, maximumBytes: window) else {
                return (try? fileSystem.size(atPath: path)) == .some(nil) ? .absent : .unknown
            }
            // Empty: the window held no whole line (or the log is empty, which the next sizes read again).
            guard data.isEmpty, window < maximumReadSize else { return tail(of: data) }
            window = min(window * 4, maximumReadSize)
        }
    }

    /// What the last line of `data` (a log's end, from a whole line) records. Refusal lines after it are passed
    /// over: they record no version, and a refusal must not send the next write or reload to the whole log.
    static func tail(of data: Data) -> Tail {
        guard data.last == UInt8(ascii: "\n") else { return .unknown }
        struct Version: Decodable {
            var v: Int
            var version: String?
            var refused: String?
        }
        let decoder = JSONDecoder()
        var end = data.endIndex
        while let last = lastLineRange(of: data[data.startIndex..<end]) {
            guard let line = try? decoder.decode(Version.self, from: data[last]), line.v == formatVersion else {
                return .unknown
            }
            if line.refused != nil, line.version == nil {
                end = last.lowerBound
                continue
            }
            guard let version = line.version.flatMap(FileVersion.number(hex:)) else { return .unknown }
            return .recorded(version)
        }
        return .unknown
    }

    /// Appends `refusal` to the log at `path`, if there is one (a refusal does not start a log: the versions'
    /// writers do). Failures are returned for the caller to ignore: the line is a record.
    @discardableResult
    static func appendRefusal(
        _ refusal: Refusal, at path: String, owner: (UserID, GroupID)? = nil, on fileSystem: any DefaultsFileSystem
    ) -> Bool {
        guard case .some(.some) = try? fileSystem.size(atPath: path) else { return false }
        return (try? fileSystem.append(refusalLine(refusal), toPath: path, owner: owner)) != nil
    }

    /// A version a process read, as its record needs it: whole, or the new values of the keys an incremental read
    /// changed (nil: removed) — the keys of the ``Held/changed(version:oldValues:)`` version held before it; the
    /// whole version is then read again from the file only if the record needs it (a log to start, a log whose
    /// last version is not the one held). Keeping the whole dictionary for the record made the next incremental
    /// read, which edits it in place, copy the whole domain on its way to the observers.
    enum ReadVersion: Sendable {
        case whole([String: PropertyList])
        case changed(newValues: [String: PropertyList?])

        /// The whole version, when it was kept.
        var whole: [String: PropertyList]? {
            if case .whole(let contents) = self { contents } else { nil }
        }

        /// The version read after `self` as `newer`, recorded as one (a burst's versions, recorded as the newest).
        func followed(by newer: ReadVersion) -> ReadVersion {
            switch (self, newer) {
            case (_, .whole): newer
            case (.changed(let first), .changed(let second)):
                .changed(newValues: first.merging(second) { _, latest in latest })
            case (.whole(let contents), .changed(let second)):
                .whole(ChangeLog.apply(second, to: contents))
            }
        }
    }

    /// `contents` with `values` laid over it (nil: removed).
    static func apply(_ values: [String: PropertyList?], to contents: [String: PropertyList]) -> [String: PropertyList]
    {
        var result = contents
        for (key, value) in values {
            if let value { result[key] = value } else { result.removeValue(forKey: key) }
        }
        return result
    }

    /// The version a process held before the one it now reads (for the old values of the keys an external
    /// writer changed, when it is the version the log recorded last): whole, or as the old values of the keys an
    /// incremental read changed (``changed(version:oldValues:)``), the rest being the new version's.
    ///
    /// Why the second form: an incremental read edits the held dictionary in place, and a copy of it kept for the
    /// record made that edit copy the whole domain (10,000 keys) on the way to the observers; and the record then
    /// compared every key of the two versions, sorted, on a core the next delivery wanted. The few changed keys'
    /// old values are kept instead: they are the whole difference.
    enum Held: Sendable {
        case whole(version: UInt64, contents: [String: PropertyList])
        /// The digest, and each changed key's old value (nil: it was not there); every other key as in the new
        /// version.
        case changed(version: UInt64, oldValues: [String: PropertyList?])

        /// The version's digest.
        var version: UInt64 {
            switch self {
            case .whole(let version, _), .changed(let version, _): version
            }
        }

        /// The value `key` had, given the version read after it (`new`).
        func value(ofKey key: String, new: [String: PropertyList]) -> PropertyList? {
            switch self {
            case .whole(_, let contents): contents[key]
            case .changed(_, let oldValues): oldValues[key] ?? new[key]
            }
        }

        /// The whole version, given the version read after it (`new`).
        func contents(new: [String: PropertyList]) -> [String: PropertyList] {
            switch self {
            case .whole(_, let contents):
                return contents
            case .changed(_, let oldValues):
                return ChangeLog.apply(oldValues, to: new)
            }
        }

        /// The version `older` held before a version whose reading in turn held `newer`: the one held before both,
        /// so that a burst's versions, recorded once as the newest, are compared with the version the log has
        /// (without it the record read the whole log). `newer` when `older` held none (the older was the process's
        /// first look at the file, or read after a version that failed to parse): the older version itself is then
        /// the base, as it would have been had the two been recorded one by one, and a domain with no log yet
        /// starts its log from it. Also `newer` when it does not follow
        /// `olderVersion` (a version between them, such as this process's own write, was logged already). Nil when
        /// `older` held the changed form and `newer` none.
        static func combining(_ older: Held?, olderVersion: UInt64, _ newer: Held?) -> Held? {
            // Without the newer's held version the older's changed form has nothing to be laid over: it describes
            // the older read, not the newer one. Only a whole version stands alone.
            guard let newer else {
                if case .whole = older { return older }
                return nil
            }
            guard newer.version == olderVersion, let older else { return newer }
            switch (older, newer) {
            case (.whole, _):
                return older
            case (.changed(let version, let olderValues), .changed(_, let newerValues)):
                // A key the first version changed had, before both, its first old value.
                return .changed(version: version, oldValues: newerValues.merging(olderValues) { _, first in first })
            case (.changed(let version, _), .whole(_, let between)):
                return .whole(version: version, contents: older.contents(new: between))
            }
        }

        /// The changes from this version to the one read after it, `read`, in key order; nil when they need the
        /// whole version read and `whole` cannot give it.
        func changes(to read: ReadVersion, whole: () -> [String: PropertyList]?) -> [Change]? {
            if case .changed(_, let oldValues) = self, case .changed(let newValues) = read {
                return ChangeLog.changes(
                    ofKeys: Set(oldValues.keys).union(newValues.keys), old: { oldValues[$0] ?? nil },
                    new: { newValues[$0] ?? nil })
            }
            guard let new = read.whole ?? whole() else { return nil }
            return changes(to: new)
        }

        /// The changes from this version to `new`, in key order.
        func changes(to new: [String: PropertyList]) -> [Change] {
            switch self {
            case .whole(_, let contents):
                return ChangeLog.changes(ofKeys: Set(contents.keys).union(new.keys), from: contents, to: new)
            case .changed(_, let oldValues):
                return ChangeLog.changes(ofKeys: oldValues.keys, old: { oldValues[$0] ?? nil }, new: { new[$0] })
            }
        }
    }

    /// With the domain's file lock held and `version` (whose contents are `contents`) the file on disk: records
    /// it as an `external` entry — the keys whose values differ from the last version the log recorded — unless
    /// the log recorded it already (a LiveDefaults writer made it, or another process noticed it first).
    ///
    /// The old values come from `held` when it is the log's last version, else from the log's last whole value
    /// of the key with the digest the log holds, else are unknown. A log that does not exist is started (a
    /// checkpoint of `held`, then the entry) only by a process that held the version before; without one there
    /// is nothing to compare with, and the next write starts the log. A log that knows no last version gets a
    /// checkpoint of `version`. Returns whether a line was appended; failures are ignored (a record, not data).
    ///
    /// When the log's last line records the version held (the usual case: a running program follows the
    /// domain), the changes are the keys whose values differ between the two, and the log is not read.
    @discardableResult
    static func recordExternal(
        version: UInt64, contents: [String: PropertyList], held: Held?, at path: String, time: Date,
        owner: (UserID, GroupID)? = nil, on fileSystem: any DefaultsFileSystem
    ) -> Bool {
        recordExternal(
            version: version, read: .whole(contents), whole: { contents }, held: held, at: path, time: time,
            owner: owner, on: fileSystem)
    }

    /// ``recordExternal(version:contents:held:at:time:owner:on:)`` of a version `read` as a record needs it;
    /// `whole` gives the whole version when it was not kept (read again from the file: nil when it is no longer
    /// that version, and nothing is recorded).
    @discardableResult
    static func recordExternal(
        version: UInt64, read: ReadVersion, whole: () -> [String: PropertyList]?, held: Held?, at path: String,
        time: Date, owner: (UserID, GroupID)? = nil, on fileSystem: any DefaultsFileSystem
    ) -> Bool {
        let tail = tail(at: path, on: fileSystem)
        if tail == .recorded(version) { return false }
        if let held, tail == .recorded(held.version) {
            guard let changes = held.changes(to: read, whole: whole) else { return false }
            if !changes.isEmpty {
                // The last line is a recorded version, so no intent follows it: nobody announced this one.
                let entry = Entry(time: time, origin: .external, writer: nil, version: version, changes: changes)
                return (try? fileSystem.append(line(entry), toPath: path, owner: owner)) != nil
            }
        }
        guard let contents = read.whole ?? whole() else { return false }
        var log: ChangeLog
        if tail == .absent {
            guard let held, held.version != version else { return false }
            log = ChangeLog()
            log.lastVersion = held.version
            log.lastKeys = keyDigests(of: held.contents(new: contents))
        } else {
            log = ChangeLog.read(at: path, on: fileSystem)
            if log.lastVersion == version { return false }
        }
        guard let lastKeys = log.lastKeys, let lastVersion = log.lastVersion else {
            let checkpoint = checkpointLine(version: version, keys: keyDigests(of: contents))
            return (try? fileSystem.append(checkpoint, toPath: path, owner: owner)) != nil
        }
        let digests = keyDigests(of: contents)
        var changes: [Change] = []
        for key in Set(lastKeys.keys).union(digests.keys).sorted() where lastKeys[key] != digests[key] {
            let old: LoggedValue? =
                if lastKeys[key] == nil {
                    nil
                } else if let held, held.version == lastVersion, let value = held.value(ofKey: key, new: contents) {
                    LoggedValue(value)
                } else {
                    log.lastLoggedValue(ofKey: key, digest: lastKeys[key]) ?? .unknown
                }
            changes.append(Change(key: key, old: old, new: contents[key].map(LoggedValue.init)))
        }
        var data = Data()
        if tail == .absent { data.append(checkpointLine(version: lastVersion, keys: lastKeys)) }
        if changes.isEmpty {
            // The same values in other bytes: the version is recorded as a checkpoint, so it is not looked at again.
            data.append(checkpointLine(version: version, keys: digests))
        } else {
            // A writer that announced this version and stopped before its entry is named; else nobody is.
            let intent = log.intents[version]
            data.append(
                line(
                    Entry(
                        time: time, origin: intent?.origin ?? .external, writer: intent?.writer, version: version,
                        changes: changes)))
        }
        return (try? fileSystem.append(data, toPath: path, owner: owner)) != nil
    }

    /// The changes of `keys` between two whole versions, in key order: a key whose value differs (or is there in
    /// one only) with both values. What a writer logs of its own version and what a reader logs of another's when
    /// it held the version before.
    static func changes(
        ofKeys keys: some Sequence<String>, from old: [String: PropertyList], to new: [String: PropertyList]
    ) -> [Change] {
        changes(ofKeys: keys, old: { old[$0] }, new: { new[$0] })
    }

    /// ``changes(ofKeys:from:to:)`` with each version's value of a key given by a lookup (a version kept as the
    /// changed keys' values: ``Held``, ``ReadVersion``).
    static func changes(
        ofKeys keys: some Sequence<String>, old: (String) -> PropertyList?, new: (String) -> PropertyList?
    ) -> [Change] {
        changes(ofChangedKeys: changedKeys(ofKeys: keys, old: old, new: new), old: old, new: new)
    }

    /// Those of `keys` whose value differs between two versions (or is in one only), in key order: what
    /// ``changes(ofKeys:old:new:)`` logs, without encoding a value.
    static func changedKeys(
        ofKeys keys: some Sequence<String>, old: (String) -> PropertyList?, new: (String) -> PropertyList?
    ) -> [String] {
        keys.sorted().filter { old($0) != new($0) }
    }

    /// The changes of keys known to have changed (``changedKeys(ofKeys:old:new:)``), each value as logged.
    static func changes(
        ofChangedKeys keys: [String], old: (String) -> PropertyList?, new: (String) -> PropertyList?
    ) -> [Change] {
        keys.map { key in Change(key: key, old: old(key).map(LoggedValue.init), new: new(key).map(LoggedValue.init)) }
    }

    /// The last value of `key` an entry logged, if it is the one whose digest is `digest`.
    private func lastLoggedValue(ofKey key: String, digest: UInt64?) -> LoggedValue? {
        for entry in entries.reversed() {
            guard let change = entry.changes.last(where: { $0.key == key }) else { continue }
            guard let new = change.new, new.digest == digest else { return nil }
            return new
        }
        return nil
    }
}

/// Who the writes made in a task are logged as, when not this process's own: the fleet agent applying etcd's
/// change sets the revision it applies (``Defaults/attributingWrites(toFleetRevision:_:)``), and the log
/// records the version as `fleet` with that revision.
enum ChangeLogAttribution {
    @TaskLocal static var fleetRevision: Int64?
    /// Why the writes made in a task are made, when the writer says (``Defaults/attributingWrites(reason:_:)``).
    @TaskLocal static var reason: String?
}
