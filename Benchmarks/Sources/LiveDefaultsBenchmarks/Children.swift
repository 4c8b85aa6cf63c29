import BenchmarkSupport
import Foundation
import Glibc
import LiveDefaults

/// The modes the suite runs in fresh processes (the environment is the parent's).
func runChild(_ arguments: [String]) -> Never {
    // getenv, not ProcessInfo: a child measuring a cold open must not have warmed Foundation up first (its
    // first `ProcessInfo` is costly, which Foundation's UserDefaults and any library asking it pay).
    let directory = getenv("XDG_CONFIG_HOME").map { String(cString: $0) } ?? ""
    switch (arguments.first, arguments.count) {
    case ("--child-cold-open", 4), ("--child-memory", 4):
        var (mode, domain, key) = (arguments[1], arguments[2], arguments[3])
        // `-warm`: a process that has used Foundation before it opens the domain (its environment read through
        // `ProcessInfo`: the runtime's first dictionary, first conformance scan and Foundation's own start
        // done): the store's own cost without the runtime's and Foundation's start.
        if mode.hasSuffix("-warm") {
            mode.removeLast("-warm".count)
            _ = ProcessInfo.processInfo.environment
        }
        // Only the memory child reads its resident size first: reading it pages in Foundation's file reading.
        let before = arguments[0] == "--child-memory" ? residentBytes() : 0
        let start = now()
        var value = 0
        var elapsed: UInt64 = 0
        // Each store stays alive until after the measurement: its release is not part of opening it.
        switch mode {
        case "live":
            // As a program opens a suite: the process's own configuration (user, home, languages, arguments)
            // and the user's files under $XDG_CONFIG_HOME, every other layer where it really is.
            guard let store = Defaults(suiteName: domain) else { exit(3) }
            value = store.integer(forKey: key)
            elapsed = now() - start
            if arguments[0] == "--child-memory" { print(residentBytes() - before) }
            withExtendedLifetime(store) {}
        case "environment", "environment-none":
            // As `live`, configured as a deployment's program is: with an environment prefix and a directory of
            // key files (`environment`), in a process whose environment holds 200 variables of the prefix, or the
            // same process without either set (`environment-none`): what the deployment's layers add to opening.
            var configuration = Defaults.Configuration(applicationDomain: domain)
            if mode == "environment" {
                configuration.environmentPrefix = "BENCH_"
                if let keys = getenv("LIVEDEFAULTS_BENCH_KEYS") {
                    configuration.keyFileDirectories = [String(cString: keys)]
                }
            }
            guard let store = try? Defaults(configuration: configuration) else { exit(3) }
            value = store.integer(forKey: key)
            elapsed = now() - start
            withExtendedLifetime(store) {}
        case "unwatched":
            // The same store without its watcher (`.off`): what watching adds to opening.
            var configuration = Defaults.Configuration(applicationDomain: domain)
            configuration.watching = .off
            guard let store = try? Defaults(configuration: configuration) else { exit(3) }
            value = store.integer(forKey: key)
            elapsed = now() - start
            withExtendedLifetime(store) {}
        case "floor":
            // The floor: the file read and parsed by the library's reader, the key looked up — no store, no
            // search list, no watcher, no locks.
            // The file read with open/fstat/read, as the store reads it (not FileManager, whose first use in a
            // process costs more than the read).
            guard let integer = floorRead("\(directory)/\(domain).plist", key) else { exit(3) }
            value = integer
            elapsed = now() - start
        case "floor-watched":
            // The floor of a watched open: the floor's read, parse and lookup, and the least any store that
            // sees another process's write at once must set up besides — an inotify descriptor, a watch on the
            // file's directory, a thread waiting on the descriptor. No search list, no store, no locks.
            guard let integer = floorRead("\(directory)/\(domain).plist", key),
                startWatchingFloor(directory: directory)
            else { exit(3) }
            value = integer
            elapsed = now() - start
        case "keyfiles-floor":
            // The floor of the deployment's key files: each regular file of the directory (its `..data`
            // version, as the layer reads a kubelet's volume) read with open/fstat/read/close, nothing parsed,
            // no store: what reading the files costs by itself, against the goal's budget.
            guard let keys = getenv("LIVEDEFAULTS_BENCH_KEYS").map({ String(cString: $0) }),
                let version = realpath(keys + "/..data", nil)
            else { exit(3) }
            let bytes = readKeyFilesFloor(String(cString: version))
            free(version)
            elapsed = now() - start
            value = (bytes ?? 0) > 0 ? Int(key.dropFirst(3)) ?? 0 : 0
        case "foundation":
            guard let store = UserDefaults(suiteName: domain + ".foundation") else { exit(3) }
            value = store.integer(forKey: key)
            elapsed = now() - start
            if arguments[0] == "--child-memory" { print(residentBytes() - before) }
            withExtendedLifetime(store) {}
        default:
            value = Int(key.dropFirst(3)) ?? 0
        }
        // The time from opening the domain to having the value, in this fresh process.
        if arguments[0] == "--child-cold-open" { print(elapsed) }
        // _exit: no exit handlers; the read is what is measured.
        fflush(nil)
        // The keys of the suite's domains hold their own number (Key50 = 50, Key5000 = 5000).
        _exit(value == Int(key.dropFirst(3)) ? 0 : 4)
    case ("--child-reads", 6):
        // For instruction counts (Benchmarks/instructions): open the domain, then read `count` times. Two runs
        // with different counts differ by exactly the reads.
        let (mode, domain, key, kind) = (arguments[1], arguments[2], arguments[3], arguments[5])
        let count = Int(arguments[4]) ?? 0
        var sink = 0
        switch mode {
        case "live":
            guard let store = try? Defaults(configuration: .rooted(at: directory, applicationDomain: domain)) else {
                exit(3)
            }
            let typed = DefaultsKey<Int>(key, default: -1)
            // The open's background work (the watcher's first look, the change log's record of the version read,
            // the readers' announcement, each a moment later) done before the reads in both runs: else it fell
            // inside one run's life and not the other's, by a few million instructions either way.
            if count > 0 { Thread.sleep(forTimeInterval: 2) }
            let start = now()
            defer {
                // Per read, in nanoseconds, on standard error (a cross-check of the harness's figures).
                FileHandle.standardError.write(Data("\(Double(now() - start) / Double(max(1, count)))\n".utf8))
            }
            for _ in 0..<count {
                switch kind {
                case "typed": sink &+= store[typed]
                case "untyped": sink &+= store.integer(forKey: key)
                default: sink &+= store.integer(forKey: "Missing")
                }
            }
            withExtendedLifetime(store) {}
        case "foundation":
            guard let store = UserDefaults(suiteName: domain + ".foundation") else { exit(3) }
            for _ in 0..<count { sink &+= store.integer(forKey: kind == "missing" ? "Missing" : key) }
            withExtendedLifetime(store) {}
        default:
            exit(2)
        }
        print(sink)
        fflush(nil)
        _exit(0)
    case ("--child-key-writer", 5):
        ConcurrentWriters.runWriter(
            directory: arguments[1], domain: arguments[2], index: Int(arguments[3]) ?? 0, keys: Int(arguments[4]) ?? 0)
    case ("--child-writer", 5):
        CrossProcess.runWriter(directory: arguments[1], domain: arguments[2], keys: Int(arguments[3]) ?? 1)
    case ("--child-store-writer", 5):
        CrossProcess.runStoreWriter(
            directory: arguments[1], domain: arguments[2], keys: Int(arguments[3]) ?? 1,
            changeLog: arguments[4].hasPrefix("log"), watching: !arguments[4].hasSuffix("-unwatched"))
    case ("--child-transaction-writer", 3):
        CrossProcess.runTransactionWriter(directory: arguments[1], domain: arguments[2])
    case ("--child-volume-writer", 4):
        VolumeSwap.runWriter(volume: arguments[1], domain: arguments[2], keys: Int(arguments[3]) ?? 1)
    default:
        FileHandle.standardError.write(Data("unknown child mode \(arguments)\n".utf8))
        exit(2)
    }
}

/// Reads every file of `directory` whose name does not start with a dot, as ``withFileBytes(_:_:)`` reads one;
/// returns the bytes read, nil when the directory cannot be listed.
private func readKeyFilesFloor(_ directory: String) -> Int? {
    guard let stream = opendir(directory) else { return nil }
    var names: [String] = []
    while let entry = readdir(stream) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        if !name.hasPrefix(".") { names.append(name) }
    }
    closedir(stream)
    var total = 0
    for name in names { total += withFileBytes(directory + "/" + name) { $0.count } ?? 0 }
    return total
}

/// The floors' read: the file's bytes (open/fstat/read), parsed by the library's reader, the key's integer.
private func floorRead(_ path: String, _ key: String) -> Int? {
    guard let data = withFileBytes(path, { Data($0) }),
        case .dictionary(let entries)? = try? PropertyList.decode(data).value,
        case .integer(let integer)? = entries[key]
    else { return nil }
    return integer
}
