import BenchmarkSupport
import Foundation
import Glibc
import LiveDefaults

/// Another process updates a Kubernetes-style volume the way the kubelet's atomic writer does — a new
/// timestamped directory holding the file, `..data_tmp` linked to it, renamed over `..data`, the old
/// directory removed — and an observer here timestamps the arrival of the changed value. The volume is the
/// store's managed directory, so the domain's file is `volume/<domain>.plist -> ..data/<domain>.plist`. No
/// event ever names that file: the store follows the link chain.
///
/// As in ``CrossProcess``, the floor runs first on the same writer: a raw inotify watch on the volume that
/// reacts to the `..data` rename and reads the file through its links, finding the value's text.
enum VolumeSwap {
    static func domain(keys: Int) -> String { "com.example.bench.volume.n\(keys)" }

    static func measure(directory: String, keys: Int, writes: Int) -> CrossProcess.Result {
        let domain = domain(keys: keys)
        let volume = "\(directory)/volume-n\(keys)"
        let writer = Process()
        writer.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        writer.arguments = ["--child-volume-writer", volume, domain, "\(keys)"]
        let commands = Pipe()
        let reports = Pipe()
        writer.standardInput = commands
        writer.standardOutput = reports
        let failed = CrossProcess.Result(live: .notApplicable, floor: .notApplicable, lost: writes)
        do { try writer.run() } catch { return failed }
        defer {
            try? commands.fileHandleForWriting.close()
            writer.waitUntilExit()
        }
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

        let path = "\(volume)/\(domain).plist"
        let floorArrivals = Arrivals()
        guard let raw = RawInotifyWatcher(path: path, trigger: "..data", arrivals: floorArrivals) else {
            return failed
        }
        let floor = pass(1...writes, floorArrivals)
        raw.stop()

        var configuration = Defaults.Configuration.rooted(at: directory, applicationDomain: domain)
        configuration.locations.managedDirectory = volume
        guard let store = try? Defaults(configuration: configuration) else { return failed }
        let arrivals = Arrivals()
        let iterator = store.updates(forKey: "Value", emitCurrentValue: false).makeAsyncIterator()
        let task = Task.detached {
            var iterator = iterator
            while let value = await iterator.next() {
                if case .integer(let integer)? = value { arrivals.record(integer) }
            }
        }
        let live = pass((writes + 1)...(2 * writes), arrivals)
        task.cancel()
        withExtendedLifetime(store) {}
        return CrossProcess.Result(
            live: Harness.summary(live.samples), floor: Harness.summary(floor.samples), lost: live.lost)
    }

    /// The writer process: lays the volume out with the domain's file (`keys` keys, value 0), says "ready",
    /// then for each value read from standard input prints the time and swaps in a new version.
    static func runWriter(volume: String, domain: String, keys: Int) -> Never {
        let name = "\(domain).plist"
        var contents: [String: PropertyList] = [:]
        for index in 0..<max(0, keys - 1) { contents["Key\(index)"] = .integer(index) }
        var version = 0
        var current: String?
        func swap(_ value: Int) -> Bool {
            contents["Value"] = .integer(value)
            guard let data = try? PropertyList.dictionary(contents).encoded(as: .xml) else { return false }
            version += 1
            let stamp = "..2026_11_25_00_00_00.\(version)"
            guard mkdir("\(volume)/\(stamp)", 0o755) == 0,
                writeFile("\(volume)/\(stamp)/\(name)", data, inPlace: true) == nil,
                symlink(stamp, "\(volume)/..data_tmp") == 0,
                rename("\(volume)/..data_tmp", "\(volume)/..data") == 0
            else { return false }
            if let current {
                unlink("\(volume)/\(current)/\(name)")
                rmdir("\(volume)/\(current)")
            }
            current = stamp
            return true
        }
        mkdir(volume, 0o755)
        guard swap(0), symlink("..data/\(name)", "\(volume)/\(name)") == 0 else { exit(3) }
        print("ready")
        fflush(nil)
        while let line = readLine(), let value = Int(line) {
            let start = now()
            guard swap(value) else { exit(3) }
            print(start)
            fflush(nil)
        }
        exit(0)
    }
}
