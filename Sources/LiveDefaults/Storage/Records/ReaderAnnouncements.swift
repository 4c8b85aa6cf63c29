import Dispatch
import Foundation

/// What one process that reads a domain file runs: the version of the file it applied, since when, and the
/// last version it refused (Docs/OnDisk.md, "Readers"). `defaults readers` lists them; `defaults write --wait`
/// waits for every reader to apply or refuse the version it wrote.
struct ReaderAnnouncement: Sendable, Equatable {
    /// The process: its id and start time (``CurrentProcess/startTime(of:)``), which together name it for good.
    var pid: Int32
    var start: UInt64
    /// Its executable's file name.
    var executable: String
    /// The version it applied, in the change log's numbering: the file's digest (``FileVersion``), 0 for no file.
    var applied: UInt64
    /// When it applied that version, in seconds since 1970.
    var since: Double
    /// The last version it refused (``Defaults/addValidator(_:)``), if any.
    var refused: Refusal?
    /// The keys its environment sets (``Defaults/Configuration/environmentPrefix``), with what sets each
    /// ("environment variable MYSERVER_RATE_LIMIT"): a write of one to the file does not change what it reads.
    var pinned: [String: String] = [:]
    /// What it runs instead of the file's version, when it accepted none of the file's (a version refused, or
    /// unreadable, since it started): the change log's version `applied`, or the layers below the file.
    var fallback: Fallback? = nil

    /// What a reader runs instead of the file's version (``DomainFile/Fallback``).
    enum Fallback: String, Sendable, Equatable {
        /// The version `applied`, given back by the change log.
        case log
        /// Nothing of the file: the layers below it (its defaults).
        case defaults
    }

    /// A version a reader refused, and why.
    struct Refusal: Sendable, Equatable {
        var version: UInt64
        var reason: String
        /// When, in seconds since 1970.
        var time: Double
    }

    /// Whether the process that announced this still runs among `processes`: its id names a process that started
    /// when it did.
    func isAlive(in processes: any ProcessTable) -> Bool {
        processes.startTime(of: pid) == start
    }
}

/// The readers' announcements of the domain files of a directory: one small file per process and domain file, in
/// one directory beside them, `.livedefaults-readers/<file name>.<pid>.json` (one directory for all: a program
/// that opens thousands of domains leaves no directory per domain behind).
enum ReaderAnnouncements {
    /// The format of the files this version writes; files of another are skipped.
    static let formatVersion = 1
    /// The most bytes an announcement file is read for: one longer is none of ours.
    static let maximumFileSize = 16 << 10

    /// The directory of the announcements of `path`'s readers.
    static func directory(forDomainFile path: String) -> String {
        "\(PathComponents.directory(of: path))/.livedefaults-readers"
    }

    /// The name of process `pid`'s announcement for the domain file `path`.
    static func name(forDomainFile path: String, pid: Int32) -> String {
        "\(PathComponents.name(of: path)).\(pid).json"
    }

    /// Whether `name` is an announcement for the domain file named `file`: `<file>.<digits>.json`.
    static func isAnnouncement(_ name: String, of file: String) -> Bool {
        parts(ofAnnouncement: name)?.file == file[...]
    }

    /// The process whose announcement `name` is (`<file>.<pid>.json`), nil for any other name.
    static func process(ofAnnouncement name: String) -> Int32? {
        guard let digits = parts(ofAnnouncement: name)?.digits, let pid = Int32(digits), pid > 0 else { return nil }
        return pid
    }

    /// The domain file's name and the digits of an announcement's name `<file>.<digits>.json` (one to ten
    /// digits), nil for any other name.
    private static func parts(ofAnnouncement name: String) -> (file: Substring, digits: Substring)? {
        guard name.hasSuffix(".json") else { return nil }
        let stem = name.dropLast(5)
        guard let dot = stem.lastIndex(of: ".") else { return nil }
        let digits = stem[stem.index(after: dot)...]
        guard !digits.isEmpty, digits.utf8.count <= 10, digits.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else {
            return nil
        }
        return (stem[..<dot], digits)
    }

    /// Removes from `directory` the announcements, of any domain file, of processes that no longer run: a
    /// program killed or crashed leaves its file, which otherwise only a reader of that very domain file (`defaults
    /// readers`, a `--wait`) takes away, and a directory of thousands makes every announcement slower. Whether the
    /// process runs is its id's among `processes` (a reused id keeps a file, which the readers' own check of the
    /// start time skips); `own`, the sweeping process's, is never removed. Returns the names removed.
    @discardableResult
    static func removeDead(
        inDirectory directory: String, on fileSystem: any DefaultsFileSystem, processes: any ProcessTable,
        except own: Int32
    ) -> [String] {
        var removed: [String] = []
        for name in fileSystem.namesInDirectory(directory) {
            guard let pid = process(ofAnnouncement: name), pid != own, !processes.isRunning(pid) else { continue }
            if (try? fileSystem.remove("\(directory)/\(name)")) != nil { removed.append(name) }
        }
        return removed
    }

    /// The announcements of the processes that read `path` now, by process id; a file of a process that no
    /// longer runs is not listed (and removed, when this process may), nor is one that does not read as an
    /// announcement.
    static func read(
        forDomainFile path: String, on fileSystem: any DefaultsFileSystem, processes: any ProcessTable
    ) -> [ReaderAnnouncement] {
        let directory = directory(forDomainFile: path)
        let fileName = PathComponents.name(of: path)
        var found: [ReaderAnnouncement] = []
        for name in fileSystem.namesInDirectory(directory) where isAnnouncement(name, of: fileName) {
            let file = "\(directory)/\(name)"
            guard let contents = try? fileSystem.read(atPath: file), contents.data.count <= maximumFileSize,
                let announcement = decode(contents.data)
            else { continue }
            guard announcement.isAlive(in: processes) else {
                try? fileSystem.remove(file)
                continue
            }
            found.append(announcement)
        }
        return found.sorted { $0.pid < $1.pid }
    }

    /// The version of `path` on disk now, numbered as the announcements number it (its digest, 0 for no file);
    /// nil when it cannot be read.
    static func versionOnDisk(ofDomainFile path: String, on fileSystem: any DefaultsFileSystem) -> UInt64? {
        let contents: FileContents?
        do throws(SystemError) { contents = try fileSystem.read(atPath: path) } catch { return nil }
        return contents.map { FileVersion.digest(of: $0.data) } ?? 0
    }

    /// An announcement's file contents.
    static func encode(_ announcement: ReaderAnnouncement) -> Data {
        var json = JSONLine(capacity: 256)
        json.object { json in
            json.member("applied", FileVersion.hex(announcement.applied))
            json.member("executable", announcement.executable)
            if let fallback = announcement.fallback { json.member("fallback", fallback.rawValue) }
            json.name("pid")
            json.integer(announcement.pid)
            if !announcement.pinned.isEmpty {
                json.name("pinned")
                json.object { json in
                    for (key, source) in announcement.pinned.sorted(by: { $0.key < $1.key }) {
                        json.member(key, source)
                    }
                }
            }
            if let refused = announcement.refused {
                json.name("refused")
                json.object { json in
                    json.member("reason", refused.reason)
                    json.name("time")
                    json.number(refused.time)
                    json.member("version", FileVersion.hex(refused.version))
                }
            }
            json.name("since")
            json.number(announcement.since)
            json.member("start", String(announcement.start))
            json.name("v")
            json.integer(formatVersion)
        }
        return json.line()
    }

    /// An announcement from a file's contents; nil for anything else (another format, a torn or hostile file).
    static func decode(_ data: Data) -> ReaderAnnouncement? {
        struct File: Decodable {
            struct Refused: Decodable {
                var version: String
                var reason: String
                var time: Double
            }
            var v: Int
            var pid: Int32
            var start: String
            var executable: String
            var applied: String
            var since: Double
            var refused: Refused?
            var pinned: [String: String]?
            var fallback: String?
        }
        guard let file = try? JSONDecoder().decode(File.self, from: data), file.v == formatVersion,
            let start = UInt64(file.start), let applied = FileVersion.number(hex: file.applied), file.since.isFinite
        else { return nil }
        var refusal: ReaderAnnouncement.Refusal?
        if let refused = file.refused {
            guard let version = FileVersion.number(hex: refused.version), refused.time.isFinite else { return nil }
            refusal = ReaderAnnouncement.Refusal(version: version, reason: refused.reason, time: refused.time)
        }
        return ReaderAnnouncement(
            pid: file.pid, start: start, executable: file.executable, applied: applied, since: file.since,
            refused: refusal, pinned: file.pinned ?? [:],
            fallback: file.fallback.flatMap(ReaderAnnouncement.Fallback.init(rawValue:)))
    }

    /// The most keys an announcement names as pinned: the file stays well within ``maximumFileSize``.
    static let maximumPinnedKeys = 64
}
