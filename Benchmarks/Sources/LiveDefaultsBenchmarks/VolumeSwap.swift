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
        return CrossProcess.race(
            writer: ["--child-volume-writer", volume, domain, "\(keys)"], writes: writes,
            floor: { RawInotifyWatcher(path: "\(volume)/\(domain).plist", trigger: "..data", arrivals: $0) },
            store: {
                var configuration = Defaults.Configuration.rooted(at: directory, applicationDomain: domain)
                configuration.locations.managedDirectory = volume
                return try? Defaults(configuration: configuration)
            })
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
            announceStart()
            guard swap(value) else { exit(3) }
        }
        exit(0)
    }
}
