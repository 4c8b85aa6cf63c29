import Foundation
import LiveDefaults
import LiveDefaultsTesting

/// The stores the threads of `standard-race` got; behind an `NSLock`, which ThreadSanitizer sees.
final class SeenStores: @unchecked Sendable {
    // @unchecked: `identities` is only touched under `lock`.
    private let lock = NSLock()
    private var identities: [ObjectIdentifier] = []

    func append(_ identity: ObjectIdentifier) { lock.withLock { identities.append(identity) } }
    var all: Set<ObjectIdentifier> { lock.withLock { Set(identities) } }
}

/// The keys `publish-schema` declares: one of every kind a schema describes.
enum ExampleKeys {
    enum Theme: String, DefaultsSerializable, CaseIterable { case light, dark, system }
    struct Limits: Codable, DefaultsSerializable {
        var perMinute = 60
        var burst = 10
    }

    static let rateLimit = DefaultsKey<Int>(
        "RateLimit", default: 100, summary: "Requests per minute per client.", range: 1...100_000)
    static let theme = DefaultsKey<Theme>("Theme", default: .system, summary: "The colour scheme of the pages.")
    static let apiToken = DefaultsKey<String>(
        "APIToken", default: "", summary: "The token sent to the upstream API.", isSecret: true)
    static let ratio = DefaultsKey<Double>("Ratio", default: 0.5, summary: "Share of traffic sampled.", range: 0...1)
    static let verbose = DefaultsKey<Bool>("Verbose", default: false, summary: "Log every request.")
    static let banner = DefaultsKey<String>("Banner", default: "Welcome", summary: "The banner shown on every page.")
    static let lastSync = DefaultsKey<Date?>("LastSync", summary: "When the settings were last synchronised.")
    static let hosts = DefaultsKey<[String]>("Hosts", default: [], summary: "Upstream hosts.")
    static let limits = DefaultsKey<Limits>("Limits", default: Limits(), summary: "Burst limits.")
    static let team = DefaultsKey<String>(
        "Team", default: "core", suite: "com.example.shared", summary: "The owning team.")

    static let all: [AnyDefaultsKey] = [
        rateLimit, theme, apiToken, ratio, verbose, banner, lastSync, hosts, limits, team,
    ]
}

/// The `hygiene` mode: rounds of stores made, followed, written and dropped, with the process's resources
/// printed before the measured rounds and after each. A warm-up round of the same kind first, so that what is
/// made once per process (the watcher's thread and instance, the background writer, the runtime's metadata and
/// caches) is in every figure; more than one measured round, because what the library keeps for each store grows
/// the heap in every round, while what is made once on a path only a busy machine's timing takes shows in one.
func hygiene(kind: String, count: Int) async -> Never {
    guard ["distinct", "same", "subscriptions"].contains(kind) else { fail("unknown kind \(kind)") }
    let kept = kind == "subscriptions" ? Defaults(suiteName: "com.acme.tenant.kept") : nil
    var next = 0
    /// One store (or, for `subscriptions`, the kept one), a task following its key until it has the value just
    /// written, the write, and the task's end.
    func round(_ stores: Int) async {
        for _ in 0..<stores {
            next += 1
            let name = kind == "same" ? "com.acme.tenant.same" : "com.acme.tenant.\(next)"
            guard let defaults = kept ?? Defaults(suiteName: name) else { fail("no store for \(name)") }
            let value = next
            // Registered before the write: the stream's iterator subscribes when it is made.
            var updates = defaults.updates(forKey: "Limit").makeAsyncIterator()
            let follower = Task.detached {
                while let seen = await updates.next() {
                    if seen == .integer(value) { return true }
                }
                return false
            }
            defaults.set(value, forKey: "Limit")
            guard await follower.value else { fail("the write of \(value) was not delivered") }
        }
        // Every pending write on disk: what stays after it is what the library keeps.
        guard Defaults(suiteName: "com.acme.tenant.flush")?.synchronize() == true else { fail("a write failed") }
        // And the records the library writes in the background (change log, readers' announcements) written.
        Defaults.waitUntilRecordsAreWritten()
    }
    await round(count)
    let before = ProcessResources.settled()
    print("before", before.heapBytes, before.openFileDescriptors, before.inotifyWatches)
    for measured in 1...2 {
        await round(count)
        // The stores' watches are removed on the watcher's thread after the last store of a directory went.
        var after = ProcessResources.settled()
        for _ in 0..<500
        where after.inotifyWatches > before.inotifyWatches || after.openFileDescriptors > before.openFileDescriptors {
            usleep(10_000)
            after = ProcessResources.settled()
        }
        print("after\(measured)", after.heapBytes, after.openFileDescriptors, after.inotifyWatches)
    }
    withExtendedLifetime(kept) {}
    exit(0)
}
