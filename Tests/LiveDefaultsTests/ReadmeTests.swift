import Foundation
import TestProcesses
import Testing

@testable import LiveDefaults
import LiveDefaultsTesting

/// The README's tour, compiled and run against a temporary directory, so that the first code a newcomer
/// reads keeps working.
@Suite("README tour")
struct ReadmeTests {
    @Test("The tour's calls compile and behave as the README says")
    func tour() throws {
        let directory = TemporaryDirectory()
        let defaults = try Defaults(
            configuration: .rooted(
                at: directory.path, applicationDomain: "myserver", arguments: ["-Verbose", "NO"]))
        defaults.register(defaults: ["RateLimit": 100, "Greeting": "Hello"])
        #expect(defaults.integer(forKey: "RateLimit") == 100)
        defaults.set(200, forKey: "RateLimit")
        #expect(defaults.integer(forKey: "RateLimit") == 200)
        #expect(defaults.bool(forKey: "Verbose") == false)
        #expect(defaults.searchList == ["NSArgumentDomain", "myserver", "NSGlobalDomain", "NSRegistrationDomain"])
        defaults.addSuite(named: "com.example.shared")
        try defaults.trySet(["a", "b"], forKey: "Tags")
        #expect(defaults.objectIsForced(forKey: "ProxyURL") == false)
        try defaults.trySetPersistentDomain(["Theme": "dark"], forName: "com.example.other")
        #expect(defaults.synchronize())
        #expect(defaults.persistentDomainNames == ["com.example.other", "myserver"])
    }

    @Test("The tour's stream loops compile and deliver")
    func tourStreams() async throws {
        let directory = TemporaryDirectory()
        let defaults = try Defaults(configuration: .rooted(at: directory.path, applicationDomain: "myserver"))
        defaults.set(200, forKey: "RateLimit")
        var applied: [Int] = []
        func apply(_ limit: Int) { applied.append(limit) }
        for await limit in defaults.updates(forKey: "RateLimit") {
            apply(limit?.integerValue ?? 100)
            break
        }
        #expect(applied == [200])
        // Subscribed before another process writes: an iterator subscribes when it is made.
        let subscription = defaults.changes().makeAsyncIterator()
        #expect(defaults.activeObserverCount == 1)
        let changes = Task {
            var lines: [String] = []
            var iterator = subscription
            while let change = await iterator.next() {
                guard change.origin == .external else { continue }
                lines.append(
                    "\(change.key): \(change.oldValue.map { "\($0)" } ?? "-") → \(change.newValue.map { "\($0)" } ?? "-")"
                )
                break
            }
            return lines
        }
        #expect(try runHelper(["write-keys", directory.path, "myserver", "RateLimit", "1"]).status == 0)
        #expect(await changes.value == ["RateLimit0: - → 0"])
    }

    @Test("The tour's typed part compiles")
    func tourTyped() async throws {
        let directory = TemporaryDirectory()
        let defaults = try Defaults(configuration: .rooted(at: directory.path, applicationDomain: "myserver"))
        struct Handler { @Default<Int> var rateLimit: Int }
        defaults[.rateLimit] = 200
        let handler = Handler(rateLimit: Default(.rateLimit, store: defaults))
        #expect(handler.rateLimit == 200)
        final class Limiter { var rate = 0 }
        let limiter = Limiter()
        for await limit in defaults.updates(.rateLimit) {
            limiter.rate = limit
            break
        }
        #expect(limiter.rate == 200)
        defaults.register(defaults: ["Greeting": "Hello"])
        #expect(defaults.integer(forKey: "RateLimit") == 200)
    }
}
