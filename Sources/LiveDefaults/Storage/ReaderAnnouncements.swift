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

    /// Whether the process that announced this still runs: its id names a process that started when it did.
    var isAlive: Bool {
        CurrentProcess.startTime(of: pid) == start
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
    /// process runs is its id's (a reused id keeps a file, which the readers' own check of the start time skips).
    /// Returns the names removed.
    @discardableResult
    static func removeDead(inDirectory directory: String, on fileSystem: any DefaultsFileSystem) -> [String] {
        var removed: [String] = []
        for name in fileSystem.namesInDirectory(directory) {
            guard let pid = process(ofAnnouncement: name), pid != CurrentProcess.id, !CurrentProcess.isRunning(pid)
            else { continue }
            if (try? fileSystem.remove("\(directory)/\(name)")) != nil { removed.append(name) }
        }
        return removed
    }

    /// The announcements of the processes that read `path` now, by process id; a file of a process that no
    /// longer runs is not listed (and removed, when this process may), nor is one that does not read as an
    /// announcement.
    static func read(forDomainFile path: String, on fileSystem: any DefaultsFileSystem) -> [ReaderAnnouncement] {
        let directory = directory(forDomainFile: path)
        let fileName = PathComponents.name(of: path)
        var found: [ReaderAnnouncement] = []
        for name in fileSystem.namesInDirectory(directory) where isAnnouncement(name, of: fileName) {
            let file = "\(directory)/\(name)"
            guard let contents = try? fileSystem.read(atPath: file), contents.data.count <= maximumFileSize,
                let announcement = decode(contents.data)
            else { continue }
            guard announcement.isAlive else {
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

/// Publishes this process's announcement for each domain file a watching store holds (``ReaderAnnouncements``),
/// off the path that reads and delivers versions: a file that adopts or refuses a version tells the announcer,
/// which writes the file's announcement shortly after, once for a burst. A process that cannot write it (a
/// read-only directory) works as before; only `defaults readers` does not list it.
final class ReaderAnnouncer: Sendable {
    static let shared = ReaderAnnouncer()

    private struct Entry {
        weak var file: DomainFile?
        /// How many watching stores hold the file.
        var holders: Int
        /// When its announcement is due (`DispatchTime`'s nanoseconds), if a version is waiting to be announced.
        var due: UInt64?
        /// Whether its file was written (else there is nothing to take away).
        var published = false
        /// When it was last written (`DispatchTime`'s nanoseconds).
        var lastPublished: UInt64 = 0
        /// What was announced last: the version applied, since when, the last refusal.
        var applied: UInt64?
        var since: Double = 0
        var refused: ReaderAnnouncement.Refusal?
        /// The keys each store of the process that holds the file pins by its environment; nil while none does
        /// (a reference: an entry of a store without an environment layer instantiates none of its types).
        var pins: Pins?
    }

    /// The keys each store pins by its environment, by store: each store's keys described when the announcement
    /// is written, on the announcer's queue (describing a deployment's 200 variables is off the open that finds
    /// them). Changed only under the announcer's lock.
    ///
    /// A list, not a dictionary keyed by the store's `ObjectIdentifier`: a process has a store or two per file,
    /// and that dictionary's storage type, instantiated on the open that finds a deployment's variables, cost the
    /// runtime a scan of every loaded conformance for `Hashable` (see ``Announcements/entries``).
    private final class Pins: @unchecked Sendable {
        private(set) var byStore: [Pinned] = []

        /// One store's pins: their description, and the store's number for them (new pins, a new number).
        struct Pinned {
            var store: ObjectIdentifier
            var generation: UInt64
            var keys: @Sendable () -> [String: String]
        }

        /// The generation of `store`'s pins, if it pins keys.
        func generation(of store: ObjectIdentifier) -> UInt64? {
            byStore.first { $0.store == store }?.generation
        }

        /// Sets `store`'s pins.
        func set(_ pinned: Pinned) {
            if let index = byStore.firstIndex(where: { $0.store == pinned.store }) {
                byStore[index] = pinned
            } else {
                byStore.append(pinned)
            }
        }

        /// Takes `store`'s pins away; whether it had any.
        func remove(_ store: ObjectIdentifier) -> Bool {
            guard let index = byStore.firstIndex(where: { $0.store == store }) else { return false }
            byStore.remove(at: index)
            return true
        }

        /// Every store's pinned keys (`stores`, taken from `byStore` under the lock, described outside it), each
        /// with what sets it (the first store's word where two pin one key), at most
        /// ``ReaderAnnouncements/maximumPinnedKeys`` of them, the first by name.
        static func described(_ stores: [@Sendable () -> [String: String]]) -> [String: String] {
            var pinned: [String: String] = [:]
            for keys in stores { pinned.merge(keys()) { first, _ in first } }
            guard pinned.count > ReaderAnnouncements.maximumPinnedKeys else { return pinned }
            let kept = pinned.keys.sorted().prefix(ReaderAnnouncements.maximumPinnedKeys)
            return Dictionary(uniqueKeysWithValues: kept.map { ($0, pinned[$0] ?? "") })
        }
    }

    /// The announced files, and the work waiting for the queue.
    ///
    /// The queue gets one block at a time, not one per file: a block per version or per dropped store (a
    /// thousand stores made and dropped in a row) left that many blocks waiting, and libdispatch keeps what it
    /// allocated for them cached, which the resource-hygiene test saw as memory kept.
    private struct Announcements {
        /// By the file's key (``DefaultsFileSystem/key(forPath:)``): a dictionary keyed by `ObjectIdentifier`
        /// weighed on a fresh process's first open, the runtime instantiating its storage type with a scan of
        /// every loaded conformance for `Hashable` (Docs/Benchmarks.md); `String`'s is known by then.
        var entries: [String: Entry] = [:]
        /// When the pending drain runs (`DispatchTime`'s nanoseconds), if one is on the queue.
        var drainAt: UInt64?
        /// Announcements of files let go, to take away.
        var removals: [(path: String, fileSystem: any DefaultsFileSystem)] = []
    }

    private let state = Lock(Announcements())
    /// The change log's recorder's queue: the process's background records, one at a time.
    private var queue: DispatchQueue { ExternalVersionRecorder.queue }

    /// A watching store holds `file`: announce it (the first holder).
    func start(_ file: DomainFile) {
        let first = state.withLock { state in
            let key = Self.key(file)
            if state.entries[key] != nil {
                state.entries[key]?.holders += 1
                // The file of a path, made again after its last holder went: the entry follows the live one.
                if state.entries[key]?.file !== file { state.entries[key]?.file = file }
                return false
            }
            state.entries[key] = Entry(file: file, holders: 1)
            return true
        }
        if first { changed(file) }
    }

    /// A watching store (`store`) let `file` go: its pins go with it, and the last holder takes the announcement
    /// away.
    func stop(_ file: DomainFile, by store: ObjectIdentifier) {
        let path = Self.file(for: file.path)
        let fileSystem = file.fileSystem
        let (drainNow, unpinned) = state.withLock { state -> (Bool, Bool) in
            let key = Self.key(file)
            guard var entry = state.entries[key] else { return (false, false) }
            entry.holders -= 1
            let unpinned = entry.pins?.remove(store) ?? false
            if entry.holders > 0 {
                state.entries[key] = entry
                return (false, unpinned)
            }
            state.entries.removeValue(forKey: key)
            guard entry.published else { return (false, false) }
            state.removals.append((path, fileSystem))
            return (schedule(&state, at: 0), false)
        }
        if drainNow { queue.async { self.drain() } }
        if unpinned { changed(file) }
    }

    /// The store `store` pins keys of `file` by its environment — `keys` describes them, each with what sets it,
    /// and `generation` numbers them (the store's next pins, the next number) — or no longer pins any (`keys`
    /// nil): new pins are announced with the file's next announcement, which is written soon. Cheap when nothing
    /// changed (a store tells every file at each rebuild): the description is made only when one is written.
    func pin(
        _ file: DomainFile, by store: ObjectIdentifier, generation: UInt64, keys: (@Sendable () -> [String: String])?
    ) {
        let isNew = state.withLock { state -> Bool in
            let key = Self.key(file)
            guard let entry = state.entries[key] else { return false }
            guard let keys else { return entry.pins?.remove(store) ?? false }
            guard entry.pins?.generation(of: store) != generation else { return false }
            let pins = entry.pins ?? Pins()
            pins.set(Pins.Pinned(store: store, generation: generation, keys: keys))
            state.entries[key]?.pins = pins
            return true
        }
        if isNew { changed(file) }
    }

    /// `file` adopted or refused a version: its announcement is written soon, if it is announced.
    func changed(_ file: DomainFile) {
        let key = Self.key(file)
        let now = DispatchTime.now().uptimeNanoseconds
        let drainAt = state.withLock { state -> UInt64? in
            guard let entry = state.entries[key], entry.due == nil else { return nil }
            let due = RecordPacing.due(now: now, lastWritten: entry.published ? entry.lastPublished : nil)
            state.entries[key]?.due = due
            return schedule(&state, at: due) ? due : nil
        }
        guard let drainAt else { return }
        queue.asyncAfter(deadline: DispatchTime(uptimeNanoseconds: drainAt)) { self.drain() }
    }

    /// Writes the announcements scheduled so far (and takes away those of files let go), and waits.
    func waitUntilIdle() {
        queue.sync {}
        queue.sync { drain(everything: true) }
    }

    /// Whether a drain must be put on the queue for work due at `due`: none is pending, or the pending one is
    /// later. (A drain superseded so still runs, and finds less or nothing to do.)
    private func schedule(_ state: inout Announcements, at due: UInt64) -> Bool {
        if let drainAt = state.drainAt, drainAt <= due { return false }
        state.drainAt = due
        return true
    }

    /// On the queue: takes away the announcements of files let go, writes those due (or, with `everything`,
    /// every one waiting), and puts the next drain on the queue for the rest.
    private func drain(everything: Bool = false) {
        let now = DispatchTime.now().uptimeNanoseconds
        let (removals, ready, next) = state.withLock { state in
            state.drainAt = nil
            let removals = state.removals
            state.removals = []
            var ready: [String] = []
            var next: UInt64?
            for (key, entry) in state.entries {
                guard let due = entry.due else { continue }
                if everything || due <= now {
                    ready.append(key)
                } else {
                    next = min(next ?? due, due)
                }
            }
            if let due = next, !schedule(&state, at: due) { next = nil }
            return (removals, ready, next)
        }
        if let next { queue.asyncAfter(deadline: DispatchTime(uptimeNanoseconds: next)) { self.drain() } }
        for removal in removals { try? removal.fileSystem.remove(removal.path) }
        for key in ready { publish(key) }
    }

    /// The announcement file of this process for the domain file `path`.
    static func file(for path: String) -> String {
        "\(ReaderAnnouncements.directory(forDomainFile: path))/"
            + ReaderAnnouncements.name(forDomainFile: path, pid: CurrentProcess.id)
    }

    /// The key of `file`'s entry: its path, and its file system when it is not the system's.
    private static func key(_ file: DomainFile) -> String {
        file.fileSystem.key(forPath: file.path)
    }

    private func publish(_ key: String) {
        guard
            let file = state.withLock({ state -> DomainFile? in
                state.entries[key]?.due = nil
                return state.entries[key]?.file
            })
        else { return }
        let (applied, refused) = file.announcedVersions
        let fallback = file.fallback.map { $0.logged == nil ? ReaderAnnouncement.Fallback.defaults : .log }
        let now = Date().timeIntervalSince1970
        let taken = state.withLock { state -> (ReaderAnnouncement, [@Sendable () -> [String: String]])? in
            guard var entry = state.entries[key] else { return nil }
            if entry.applied != applied {
                entry.applied = applied
                entry.since = now
            }
            entry.published = true
            entry.lastPublished = DispatchTime.now().uptimeNanoseconds
            if let refused, entry.refused?.version != FileVersion.logNumber(refused.version) {
                entry.refused = ReaderAnnouncement.Refusal(
                    version: FileVersion.logNumber(refused.version), reason: refused.reason, time: now)
            }
            state.entries[key] = entry
            let announcement = ReaderAnnouncement(
                pid: CurrentProcess.id, start: CurrentProcess.startTime,
                executable: ChangeLog.thisProcess.executable, applied: applied, since: entry.since,
                refused: entry.refused, fallback: fallback)
            return (announcement, entry.pins.map { $0.byStore.map(\.keys) } ?? [])
        }
        guard let (unpinned, pins) = taken else { return }
        var announcement = unpinned
        if !pins.isEmpty { announcement.pinned = Pins.described(pins) }
        let path = Self.file(for: file.path)
        let fileSystem = file.fileSystem
        // Readable by others: `defaults readers` may run as another user (an operator's shell, root).
        do throws(SystemError) {
            // Not the domain's directory: a file whose directory is gone is not announced.
            let directory = PathComponents.directory(of: path)
            try fileSystem.makeDirectoryIfMissing(directory, permissions: 0o755)
            // What dead processes left there, once per directory: temporaries and their announcements.
            TemporarySweeps.shared.sweepOnce(directory, on: fileSystem) { directory, fileSystem in
                ReaderAnnouncements.removeDead(inDirectory: directory, on: fileSystem)
            }
            _ = try fileSystem.replaceAtomically(
                path, with: ReaderAnnouncements.encode(announcement), owner: file.owner, readableByOthers: true,
                flush: false)
        } catch {
            // A directory this process cannot write: it reads and applies as before, unlisted.
        }
    }
}
