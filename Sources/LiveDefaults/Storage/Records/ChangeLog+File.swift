import Foundation

/// The change log's file: where it lives, appending under the domain's file lock, the rewrite at its bound,
/// and the quick look at its last line.
extension ChangeLog {
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
        on fileSystem: any DefaultsFileSystem, pid: Int32
    ) -> SystemError? {
        append(
            line: line(entry), version: entry.version, contents: contents, previous: previous,
            previousVersion: previousVersion, at: path, owner: owner, through: opened, on: fileSystem, pid: pid)
    }

    /// ``append(_:contents:previous:previousVersion:at:owner:through:on:pid:)`` with the entry's line made already
    /// (``line(_:)``); `version` is the version it records.
    @discardableResult
    static func append(
        line: Data, version: UInt64, contents: [String: PropertyList], previous: [String: PropertyList],
        previousVersion: UInt64, at path: String, owner: (UserID, GroupID)? = nil,
        through opened: AppendingFile? = nil, on fileSystem: any DefaultsFileSystem, pid: Int32
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
                    on: fileSystem, pid: pid)
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
        owner: (UserID, GroupID)? = nil, on fileSystem: any DefaultsFileSystem
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
        owner: (UserID, GroupID)?, on fileSystem: any DefaultsFileSystem, pid: Int32
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
        _ = try fileSystem.replaceAtomically(path, with: data, owner: owner, flush: false, pid: pid)
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
    static func tail(at path: String, on fileSystem: any DefaultsFileSystem) -> Tail {
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
}
