import BenchmarkSupport
import Foundation
import Glibc
import LiveDefaults
import Synchronization

/// Another process writes a domain file (temp file + rename), paced; an `updates(forKey:)` loop here
/// timestamps each arrival. Timed from just before the writer starts each write.
enum CrossProcess {
    static let domain = "com.example.bench.crossprocess"

    static func measure(directory: String, writes: Int) -> (measurement: Timing, lost: Int) {
        guard let store = try? Defaults(configuration: .rooted(at: directory, applicationDomain: domain)) else {
            return (.notApplicable, writes)
        }
        let arrivals = Arrivals()
        let iterator = store.updates(forKey: "Value", emitCurrentValue: false).makeAsyncIterator()
        let task = Task.detached {
            var iterator = iterator
            while let value = await iterator.next() {
                if case .integer(let integer)? = value { arrivals.record(integer) }
            }
        }
        let writer = Process()
        writer.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        writer.arguments = ["--child-writer", directory, domain]
        let commands = Pipe()
        let reports = Pipe()
        writer.standardInput = commands
        writer.standardOutput = reports
        do { try writer.run() } catch { return (.notApplicable, writes) }
        var samples: [Double] = []
        var lost = 0
        for value in 1...writes {
            commands.fileHandleForWriting.write(Data("\(value)\n".utf8))
            guard let start = readLine(from: reports).flatMap({ UInt64($0) }) else { break }
            if let arrival = arrivals.wait(for: value, seconds: 2) {
                samples.append(Double(Int64(arrival) - Int64(start)))
            } else {
                lost += 1
            }
        }
        try? commands.fileHandleForWriting.close()
        writer.waitUntilExit()
        task.cancel()
        return (Harness.summary(samples), lost)
    }

    /// The writer process: for each value read from standard input, print the time, then write the file.
    static func runWriter(directory: String, domain: String) -> Never {
        let path = "\(directory)/\(domain).plist"
        while let line = readLine(), let value = Int(line),
            let data = try? PropertyList.dictionary(["Value": .integer(value)]).encoded(as: .xml)
        {
            let start = now()
            writeFile(path, data, inPlace: false)
            print(start)
            fflush(nil)
        }
        exit(0)
    }
}
