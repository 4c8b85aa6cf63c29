import BenchmarkSupport
import Foundation
import LiveDefaults

/// Many processes write distinct keys of one domain at once, each key set and flushed (`synchronize()`):
/// keys per second in all, and whether any key was lost (each write re-reads the file under the lock and
/// applies only its own edits).
enum ConcurrentWriters {
    static let domain = "com.example.bench.writers"

    struct Result {
        /// Wall time per key written, all processes together.
        var perKey: Timing
        var keysPerSecond: Double
        var total: Int
        var lost: Int
    }

    static func measure(directory: String, processes: Int, keysEach: Int) -> Result {
        var children: [(process: Process, input: Pipe, output: Pipe)] = []
        for index in 0..<processes {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
            process.arguments = ["--child-key-writer", directory, domain, "\(index)", "\(keysEach)"]
            let input = Pipe()
            let output = Pipe()
            process.standardInput = input
            process.standardOutput = output
            guard (try? process.run()) != nil else { continue }
            children.append((process, input, output))
        }
        // Every writer has opened the domain before any starts.
        for child in children { _ = readLine(from: child.output) }
        let start = now()
        for child in children { child.input.fileHandleForWriting.write(Data("go\n".utf8)) }
        for child in children { child.process.waitUntilExit() }
        let elapsed = Double(now() - start)
        let total = processes * keysEach
        let store = try? Defaults(configuration: .rooted(at: directory, applicationDomain: domain))
        store?.synchronize()
        let present = store?.persistentDomainValues(forName: domain)?.keys.filter { $0.hasPrefix("P") }.count ?? 0
        let perKey = elapsed / Double(total)
        return Result(
            perKey: Timing(median: perKey, p99: perKey), keysPerSecond: Double(total) / (elapsed / 1e9), total: total,
            lost: total - present)
    }

    /// One writer: opens the domain, says "ready", waits for "go", then sets and flushes its keys one by one.
    static func runWriter(directory: String, domain: String, index: Int, keys: Int) -> Never {
        guard let store = try? Defaults(configuration: .rooted(at: directory, applicationDomain: domain)) else {
            exit(3)
        }
        print("ready")
        fflush(nil)
        guard readLine() == "go" else { exit(4) }
        for key in 0..<keys {
            store.set(key, forKey: "P\(index)K\(key)")
            store.synchronize()
        }
        exit(0)
    }
}
