import BenchmarkSupport
import Foundation
import LiveDefaults

/// Many domains watched at once: another process writes one of them; how long until its observer has it,
/// compared with a single watched domain. The domains share one directory, so the process holds one
/// inotify watch for them, not one per file.
enum ManyDomains {
    static func measure(directory: String, domains: Int, changes: Int) -> (single: Timing, many: Timing, watches: Int) {
        let root = directory + "/many-domains"
        try? FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        try? FileManager.default.createDirectory(atPath: directory + "/one-domain", withIntermediateDirectories: true)
        let single = CrossProcess.measure(directory: directory + "/one-domain", keys: 10, writes: changes).live
        // Open (and so watch) many domains in one directory, then measure one of them.
        var stores: [Defaults] = []
        for index in 0..<domains {
            if let store = try? Defaults(
                configuration: .rooted(at: root, applicationDomain: "com.example.bench.domain\(index)"))
            {
                stores.append(store)
            }
        }
        let many = CrossProcess.measure(directory: root, keys: 10, writes: changes).live
        // One watch per directory, not per file: count this process's inotify watches.
        let watches = inotifyWatchCount()
        withExtendedLifetime(stores) {}
        return (single, many, watches)
    }
}

/// The inotify watches this process holds (the `inotify wd:` lines of its descriptors' fdinfo).
func inotifyWatchCount() -> Int {
    let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fdinfo")) ?? []
    var watches = 0
    for descriptor in descriptors {
        guard let info = try? String(contentsOfFile: "/proc/self/fdinfo/\(descriptor)", encoding: .utf8) else {
            continue
        }
        watches += info.split(separator: "\n").filter { $0.hasPrefix("inotify wd:") }.count
    }
    return watches
}
