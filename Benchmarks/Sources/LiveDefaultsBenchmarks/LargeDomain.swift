import BenchmarkSupport
import Foundation
import LiveDefaults

/// A domain of 1 MB or 10 MB (keys holding about 100-byte strings): a new process opening it and reading one
/// key, and one key changed + flushed to disk, for LiveDefaults and Foundation on domains of the same size.
enum LargeDomain {
    struct Result {
        var keys: Int
        var coldOpen: Timing
        var foundationColdOpen: Timing
        var flush: Timing
        var foundationFlush: Timing
    }

    static func measure(directory: String, megabytes: Int, runs: Int) -> Result {
        let domain = "com.example.bench.mb\(megabytes)"
        // An XML entry of a key and a 100-byte string takes about 140 bytes.
        let keys = megabytes * 1_000_000 / 140
        let text = String(repeating: "x", count: 92)
        var contents: [String: PropertyList] = [:]
        for index in 0..<keys { contents["Key\(index)"] = .string(text + String(format: "%08d", index)) }
        contents["Key5000"] = .integer(5_000)  // what the cold-open child reads
        let failed = Result(
            keys: keys, coldOpen: .notApplicable, foundationColdOpen: .notApplicable, flush: .notApplicable,
            foundationFlush: .notApplicable)
        // Foundation's copy is written as a file in its place (the same XML): its setPersistentDomain stores
        // key by key and serialises the whole domain on each, which at 70,000 keys ran for many minutes.
        guard let live = try? Defaults(configuration: .rooted(at: directory, applicationDomain: domain)),
            (try? live.trySetPersistentDomain(contents, forName: domain)) != nil,
            (try? live.trySetPersistentDomain(contents, forName: domain + ".foundation")) != nil,
            live.synchronize(),
            let foundation = UserDefaults(suiteName: domain + ".foundation")
        else { return failed }

        func coldOpen(_ mode: String) -> Timing {
            var samples: [Double] = []
            for _ in 0..<runs {
                let output = spawnSelfOutput(["--child-cold-open", mode, domain, "Key5000"])
                if let nanoseconds = Double(output.trimmingCharacters(in: .whitespacesAndNewlines)) {
                    samples.append(nanoseconds)
                }
            }
            return Harness.summary(samples)
        }
        let harness = Harness(iterations: 1, rounds: runs)
        var value = 0
        let flush = harness.measure {
            value += 1
            live.set(value, forKey: "Flushed")
            live.synchronize()
            return value
        }
        let foundationFlush = harness.measure {
            value += 1
            foundation.set(value, forKey: "Flushed")
            foundation.synchronize()
            return value
        }
        return Result(
            keys: keys, coldOpen: coldOpen("live"), foundationColdOpen: coldOpen("foundation"), flush: flush,
            foundationFlush: foundationFlush)
    }
}
