import BenchmarkSupport
import Foundation
import LiveDefaults

/// Many domains watched at once: another process writes one of them; how long until its observer has it,
/// compared with a single watched domain.
enum ManyDomains {
    static func measure(directory: String, domains: Int, changes: Int) -> (single: Timing, many: Timing) {
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
        withExtendedLifetime(stores) {}
        return (single, many)
    }
}
