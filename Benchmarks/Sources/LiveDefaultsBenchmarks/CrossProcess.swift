import BenchmarkSupport
import Foundation
import Glibc
import LiveDefaults
import LiveDefaultsTesting
import Synchronization

/// Another process writes a domain file of `keys` keys (temp file + rename), paced; an observer here
/// timestamps each arrival of the changed value. Timed from just before the writer starts each write.
///
/// Two observers take turns on the same writer in the same run: first the physical floor — a minimal
/// watcher on the raw inotify API that reads the file on `IN_MOVED_TO`/`IN_CLOSE_WRITE` and finds the value's
/// text in it (``RawInotifyWatcher``) — then a LiveDefaults store's `updates(forKey:)` loop. What we add over
/// the floor is ours: waking a Dispatch source, comparing the file's stamp, parsing the whole property list,
/// diffing it, and resuming a task.
enum CrossProcess {
    struct Result {
        var live: Timing
        var floor: Timing
        var lost: Int
    }

    static func domain(keys: Int) -> String { "com.example.bench.crossprocess.n\(keys)" }

    /// Who writes the file in ``measure(directory:keys:writes:writer:changeLog:)``.
    enum Writer: String {
        /// A program that knows nothing of LiveDefaults: the whole file written to a temporary file and renamed
        /// over it, as editors, configuration-management tools and scripts do.
        case script
        /// A LiveDefaults store in the other process: `set` + `synchronize()` (file lock, temp file, fdatasync,
        /// rename, its change log's lines). The store watches its files, as a program's does by default.
        case liveDefaults
        /// The same store without watching, as the `defaults` command writes (`Watching.off`): no watcher
        /// thread of its own waking on its own rename.
        case command
    }

    /// `writer` changes `Value` in a domain of `keys` keys, paced; `changeLog` switches the change log on or off
    /// in both processes (`Defaults.changeLogEnabled`): what recording versions costs the reader's path. With
    /// `validated`, the store here has a validator (`addValidator`) that reads two keys of every version: what
    /// judging a whole version costs its delivery.
    static func measure(
        directory: String, keys: Int, writes: Int, writer: Writer = .script, changeLog: Bool = true,
        validated: Bool = false
    ) -> Result {
        let domain =
            domain(keys: keys) + (writer == .script ? "" : ".\(writer)") + (changeLog ? "" : ".nolog")
            + (validated ? ".validated" : "")
        let mode = writer == .script ? "--child-writer" : "--child-store-writer"
        let options = (changeLog ? "log" : "nolog") + (writer == .command ? "-unwatched" : "")
        Defaults.changeLogEnabled = changeLog
        defer { Defaults.changeLogEnabled = true }
        return race(
            writer: [mode, directory, domain, "\(keys)", options], writes: writes,
            floor: { RawInotifyWatcher(path: "\(directory)/\(domain).plist", arrivals: $0) },
            store: {
                let store = try? Defaults(configuration: .rooted(at: directory, applicationDomain: domain))
                if validated { store?.addValidator(Self.validator) }
                return store
            })
    }

    /// A validator such as a program adds: two keys read through the typed subscript, compared.
    @Sendable static func validator(_ candidate: DefaultsSnapshot) throws {
        struct Refused: Error {}
        guard candidate[value] >= -1, candidate[first] >= 0 else { throw Refused() }
    }
    static let value = DefaultsKey<Int>("Value", default: 0)
    static let first = DefaultsKey<Int>("Key0", default: 0)

    /// The writer of ``measure(directory:keys:writes:writer:changeLog:)`` with a LiveDefaults store: fills the
    /// domain, says "ready", then for each value read sets `Value` and synchronizes, timed from before the `set`.
    static func runStoreWriter(directory: String, domain: String, keys: Int, changeLog: Bool, watching: Bool) -> Never {
        Defaults.changeLogEnabled = changeLog
        var configuration = Defaults.Configuration.rooted(at: directory, applicationDomain: domain)
        if !watching { configuration.watching = .off }
        guard let store = try? Defaults(configuration: configuration) else { exit(3) }
        for index in 0..<max(0, keys - 1) { store.set(index, forKey: "Key\(index)") }
        store.set(0, forKey: "Value")
        guard store.synchronize() else { exit(3) }
        print("ready")
        fflush(nil)
        while let line = readLine(), let value = Int(line) {
            announceStart()
            store.set(value, forKey: "Value")
            guard store.synchronize() else { exit(3) }
        }
        exit(0)
    }

    /// Another process commits transactions of two keys (`Value` and `Partner`, both set to the value), paced;
    /// a snapshot observer here (`updates(of:)`) timestamps each arrival of a snapshot holding both. The floor
    /// is the raw watcher on the same writer, which reads the file the transaction wrote.
    static func measureTransactions(directory: String, writes: Int) -> Result {
        let domain = "com.example.bench.crossprocess.transactions"
        let value = DefaultsKey<Int>("Value", default: -1)
        let partner = DefaultsKey<Int>("Partner", default: -1)
        return race(
            writer: ["--child-transaction-writer", directory, domain], writes: writes,
            floor: { RawInotifyWatcher(path: "\(directory)/\(domain).plist", arrivals: $0) },
            store: { try? Defaults(configuration: .rooted(at: directory, applicationDomain: domain)) },
            follow: { store, arrivals in
                let iterator = store.updates(of: value, partner, emitCurrentValue: false).makeAsyncIterator()
                return Task.detached {
                    var iterator = iterator
                    while let snapshot = await iterator.next() {
                        // Only whole transactions count (the tests prove no snapshot mixes two).
                        if snapshot[value] == snapshot[partner] { arrivals.record(snapshot[value]) }
                    }
                }
            })
    }

    /// The writer of ``measureTransactions(directory:writes:)``: a LiveDefaults store that commits a
    /// transaction of `Value` and `Partner` for each value read, timed from before the transaction.
    static func runTransactionWriter(directory: String, domain: String) -> Never {
        guard let store = try? Defaults(configuration: .rooted(at: directory, applicationDomain: domain)) else {
            exit(3)
        }
        func commit(_ value: Int) -> Bool {
            do {
                try store.transaction { tx in
                    tx.set(PropertyList.integer(value), forKey: "Value")
                    tx.set(PropertyList.integer(value), forKey: "Partner")
                }
                return true
            } catch {
                return false
            }
        }
        guard commit(0) else { exit(3) }
        print("ready")
        fflush(nil)
        while let line = readLine(), let value = Int(line) {
            announceStart()
            guard commit(value) else { exit(3) }
        }
        exit(0)
    }

    /// A store's `updates(forKey: "Value")`, recording each integer that arrives.
    static func followValue(_ store: Defaults, _ arrivals: Arrivals) -> Task<Void, Never> {
        let iterator = store.updates(forKey: "Value", emitCurrentValue: false).makeAsyncIterator()
        return Task.detached {
            var iterator = iterator
            while let value = await iterator.next() {
                if case .integer(let integer)? = value { arrivals.record(integer) }
            }
        }
    }

    /// Writes in a block of ``race(writer:writes:floor:store:follow:)``: the floor and the store take turns,
    /// at least three each, so that a smoke run's few writes are not one block of the floor followed by one of
    /// the store (the VM's drift between the two then fell on one side of the difference the goal is on).
    static func block(writes: Int) -> Int { min(50, max(5, writes / 3)) }

    /// Starts a writer (this executable with `writer` as its arguments: it prepares its file, says "ready",
    /// then for each value read prints the time and changes the file), and times `writes` paced changes
    /// twice: seen by the `floor` watcher and by the `store` through `follow` (`updates(forKey: "Value")`
    /// unless given), in turns of ``block(writes:)`` writes each.
    static func race(
        writer arguments: [String], writes: Int, floor makeFloor: (Arrivals) -> RawInotifyWatcher?,
        store makeStore: () -> Defaults?,
        follow: (Defaults, Arrivals) -> Task<Void, Never> = CrossProcess.followValue
    ) -> Result {
        let writer = Process()
        writer.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        writer.arguments = arguments
        let commands = Pipe()
        let reports = Pipe()
        writer.standardInput = commands
        writer.standardOutput = reports
        let failed = Result(live: .notApplicable, floor: .notApplicable, lost: writes)
        do { try writer.run() } catch { return failed }
        defer {
            try? commands.fileHandleForWriting.close()
            writer.waitUntilExit()
        }
        // The writer has written its file (value 0) before it says so.
        guard readLine(from: reports) == "ready" else { return failed }

        func pass(_ values: ClosedRange<Int>, _ arrivals: Arrivals) -> (samples: [Double], lost: Int) {
            var samples: [Double] = []
            var lost = 0
            for value in values {
                commands.fileHandleForWriting.write(Data("\(value)\n".utf8))
                guard let start = readLine(from: reports).flatMap({ UInt64($0) }) else { break }
                if let arrival = arrivals.wait(for: value, seconds: 2) {
                    samples.append(Double(Int64(arrival) - Int64(start)))
                } else {
                    lost += 1
                }
            }
            return (samples, lost)
        }

        // The floor and LiveDefaults take turns, a block of writes each, so that the VM's drift during a row
        // falls on both alike; only one of them watches at a time (a store alive during the floor's block would
        // compete with it for the cores).
        var floor: (samples: [Double], lost: Int) = ([], 0)
        var live: (samples: [Double], lost: Int) = ([], 0)
        var next = 1
        var each = 0
        while each < writes {
            let size = min(Self.block(writes: writes), writes - each)
            each += size
            // Each watcher gets one write first, not counted: the first change after a watcher starts also waits
            // for what starting takes (a store's watch is added on the watcher's thread after its open returns, a
            // follower's task may be the first on its thread), once per block. The rows measure a running
            // program's changes, and both sides alike.
            let floorArrivals = Arrivals()
            guard let raw = makeFloor(floorArrivals) else { return failed }
            _ = pass(next...next, floorArrivals)
            next += 1
            let floorBlock = pass(next...(next + size - 1), floorArrivals)
            raw.stop()
            floor.samples += floorBlock.samples
            floor.lost += floorBlock.lost
            next += size
            // A store opened now reads the floor's last value: the block's first value is a change for it.
            guard let store = makeStore() else { return failed }
            let arrivals = Arrivals()
            let task = follow(store, arrivals)
            _ = pass(next...next, arrivals)
            next += 1
            let liveBlock = pass(next...(next + size - 1), arrivals)
            task.cancel()
            withExtendedLifetime(store) {}
            live.samples += liveBlock.samples
            live.lost += liveBlock.lost
            next += size
        }
        return Result(live: Harness.summary(live.samples), floor: Harness.summary(floor.samples), lost: live.lost)
    }

    /// The writer process: writes the domain with `keys` keys once, says "ready", then for each value read
    /// from standard input prints the time and writes the whole domain again with that value.
    static func runWriter(directory: String, domain: String, keys: Int) -> Never {
        let path = "\(directory)/\(domain).plist"
        var contents: [String: PropertyList] = [:]
        for index in 0..<max(0, keys - 1) { contents["Key\(index)"] = .integer(index) }
        func write(_ value: Int) -> Bool {
            contents["Value"] = .integer(value)
            guard let data = try? PropertyList.dictionary(contents).encoded(as: .xml) else { return false }
            return writeFile(path, data, inPlace: false) == nil
        }
        guard write(0) else { exit(3) }
        print("ready")
        fflush(nil)
        while let line = readLine(), let value = Int(line) {
            contents["Value"] = .integer(value)
            guard let data = try? PropertyList.dictionary(contents).encoded(as: .xml) else { exit(3) }
            announceStart()
            writeFile(path, data, inPlace: false)
        }
        exit(0)
    }
}

/// The physical floor of "another process wrote a file → a process here has the value": one inotify watch on
/// the directory, a thread blocked in `poll`, and on `IN_MOVED_TO` or `IN_CLOSE_WRITE` for the file (or the
/// name given as the trigger), read the file and find the text of `<key>Value</key><integer>…</integer>` — no property-list parser, no diff, no
/// task to resume.
final class RawInotifyWatcher: @unchecked Sendable {
    // @unchecked: the descriptors are set once in init and only read afterwards; `thread` is joined in stop().
    private let descriptor: Int32
    private let stopPipe: (read: Int32, write: Int32)
    private var thread = pthread_t()

    /// Watches `path`'s directory and reads `path` (through any links) when an event names `trigger` (by
    /// default the file's own name; `..data` for a Kubernetes volume, whose files are never named).
    init?(path: String, trigger: String? = nil, arrivals: Arrivals) {
        let directory = (path as NSString).deletingLastPathComponent
        let name = trigger ?? (path as NSString).lastPathComponent
        descriptor = inotify_init1(Int32(IN_CLOEXEC))
        var fds: [Int32] = [0, 0]
        guard descriptor >= 0, pipe(&fds) == 0,
            inotify_add_watch(descriptor, directory, UInt32(IN_MOVED_TO | IN_CLOSE_WRITE)) >= 0
        else { return nil }
        stopPipe = (fds[0], fds[1])
        let context = Context(descriptor: descriptor, stop: fds[0], name: name, path: path, arrivals: arrivals)
        let box = Unmanaged.passRetained(context).toOpaque()
        guard
            pthread_create(
                &thread, nil,
                { raw in
                    let context = Unmanaged<Context>.fromOpaque(raw!).takeRetainedValue()
                    context.run()
                    return nil
                }, box) == 0
        else { return nil }
    }

    /// Ends the thread and closes the descriptors.
    func stop() {
        var byte: UInt8 = 1
        _ = write(stopPipe.write, &byte, 1)
        pthread_join(thread, nil)
        close(descriptor)
        close(stopPipe.read)
        close(stopPipe.write)
    }

    private final class Context {
        let descriptor: Int32
        let stop: Int32
        let name: [UInt8]
        let path: String
        let arrivals: Arrivals

        init(descriptor: Int32, stop: Int32, name: String, path: String, arrivals: Arrivals) {
            self.descriptor = descriptor
            self.stop = stop
            self.name = Array(name.utf8)
            self.path = path
            self.arrivals = arrivals
        }

        func run() {
            var buffer = [UInt8](repeating: 0, count: 64 * 1024)
            var fds = [
                pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0),
                pollfd(fd: stop, events: Int16(POLLIN), revents: 0),
            ]
            while true {
                guard poll(&fds, 2, -1) > 0 else { continue }
                if fds[1].revents != 0 { return }
                let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                guard count > 0 else { continue }
                var offset = 0
                var touched = false
                while offset + MemoryLayout<inotify_event>.size <= count {
                    let length = buffer.withUnsafeBytes {
                        Int($0.loadUnaligned(fromByteOffset: offset, as: inotify_event.self).len)
                    }
                    let start = offset + MemoryLayout<inotify_event>.size
                    if buffer[start..<(start + length)].prefix(while: { $0 != 0 }).elementsEqual(name) {
                        touched = true
                    }
                    offset = start + length
                }
                if touched, let value = Self.value(in: path) { arrivals.record(value) }
            }
        }

        /// The integer after `<key>Value</key>` in the file: the file read with `open`/`fstat`/`read` into one
        /// buffer and the marker found with `memmem` (glibc's vectorised search). The least any reader does; an
        /// earlier version read through `FileManager` and searched byte by byte in Swift, which at 10,000 keys
        /// cost more than the library's whole reload and made the "floor" slower than the library.
        static func value(in path: String) -> Int? {
            withFileBytes(path) { bytes -> Int? in
                let filled = bytes.count
                guard var position = markerEnd(in: bytes) else { return nil }
                while position < filled, bytes[position] != UInt8(ascii: ">") { position += 1 }
                position += 1  // past "<integer>"
                var value = 0
                var digits = 0
                while position < filled, bytes[position] >= 48, bytes[position] <= 57, digits < 18 {
                    value = value * 10 + Int(bytes[position] - 48)
                    position += 1
                    digits += 1
                }
                return digits > 0 ? value : nil
            }
        }

        /// Where `<key>Value</key>` ends: `memchr` (vectorised) for its rare "V", then the whole marker compared
        /// (memmem, which would do the same, is not in Swift's Glibc module).
        static func markerEnd(in bytes: UnsafeRawBufferPointer) -> Int? {
            let marker = Array("<key>Value</key>".utf8)
            let anchor = 5  // the "V"
            guard let base = bytes.baseAddress else { return nil }
            var from = anchor
            while from < bytes.count, let hit = memchr(base + from, Int32(marker[anchor]), bytes.count - from) {
                let start = UnsafeRawPointer(hit) - base - anchor
                if start + marker.count <= bytes.count, memcmp(base + start, marker, marker.count) == 0 {
                    return start + marker.count
                }
                from = start + anchor + 1
            }
            return nil
        }
    }
}
