import Foundation
import TestProcesses
import Testing

@testable import LiveDefaults

/// Untyped reads of keys read before come from a lock-free cache (``ValueReadCache``); these tests hold it to
/// the merged view through every kind of change, under concurrent writers, and check that what it retires is
/// released and that it stays bounded.
@Suite("Untyped reads from the lock-free value cache")
struct ValueReadCacheTests {
    /// The cache's answer for a key, without filling it.
    func cached(_ defaults: Defaults, _ key: String) -> ValueReadCache.Lookup {
        defaults.valueCache.lookup(key, hash: FastHash.hash(key))
    }

    /// What the merged view holds, under the lock.
    func merged(_ defaults: Defaults, _ key: String) -> PropertyList? {
        defaults.state.withLock { $0.view.merged[key] }
    }

    /// A read agrees with the merged view, and leaves the key in the cache with that value.
    func agree(_ defaults: Defaults, _ key: String, _ expected: PropertyList?, _ comment: Comment) {
        #expect(defaults.value(forKey: key) == expected, comment)
        #expect(merged(defaults, key) == expected, comment)
        guard case .known(let value) = cached(defaults, key) else {
            // A key the missing-key filter answers is never cached.
            #expect(expected == nil && !defaults.missingKeys.mayContain(key), comment)
            return
        }
        #expect(value == expected, comment)
    }

    @Test("A cached key follows every kind of change to the merged view")
    func followsChanges() async throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store("com.example.cache", languages: ["de"])
        defaults.set("first", forKey: "Name")
        #expect(defaults.synchronize())
        guard case .unknown = cached(defaults, "Name") else {
            Issue.record("a key not read yet is unknown to the cache")
            return
        }
        agree(defaults, "Name", "first", "the first read fills the cache")
        defaults.set(["a", 1] as PropertyList, forKey: "Name")
        agree(defaults, "Name", ["a", 1], "a local set, a collection")
        defaults.register(defaults: ["Name": "registered", "Other": 2] as [String: PropertyList])
        agree(defaults, "Name", ["a", 1], "registration replaced the view; the application domain still wins")
        defaults.removeObject(forKey: "Name")
        agree(defaults, "Name", "registered", "removed: the registered default shows")
        defaults.setVolatileDomain(["Name": "volatile"], forName: "de")
        agree(defaults, "Name", "volatile", "a language's volatile domain is above the registration domain")
        defaults.removeVolatileDomain(forName: "de")
        agree(defaults, "Name", "registered", "and goes")

        // A suite added to the search list.
        let suite = try directory.store("com.example.cache.suite")
        suite.set(Data([1, 2, 3]), forKey: "FromSuite")
        #expect(suite.synchronize())
        agree(defaults, "FromSuite", nil, "not in the search list yet")
        defaults.addSuite(named: "com.example.cache.suite")
        agree(defaults, "FromSuite", .data(Data([1, 2, 3])), "the suite joined the search list")
        suite.set(Data([4]), forKey: "FromSuite")
        agree(defaults, "FromSuite", .data(Data([4])), "another store of this process writes the suite")
        defaults.removeSuite(named: "com.example.cache.suite")
        agree(defaults, "FromSuite", nil, "the suite left")

        // Another process.
        defaults.set("before", forKey: "Shared")
        agree(defaults, "Shared", "before", "cached")
        #expect(defaults.synchronize())
        #expect(try runHelper(["write-sequence", directory.path, "com.example.cache", "Shared", "3"]).status == 0)
        #expect(await waitForValue(defaults, "Shared") { $0 == 3 })
        #expect(defaults.integer(forKey: "Shared") == 3, "another process's write reaches the cache")
        agree(defaults, "Shared", 3, "after another process's write")
        #expect(defaults.valueCache.retiredCount == 0, "nothing waits for release when no reader is present")
    }

    @Test("Readers racing writers see only values that were written, of every kind")
    func concurrentReads() async throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store("com.example.cache.race")
        let rounds = 20_000
        // Strings of several lengths (inline and allocated), integers, data: each value read must be one a
        // writer stored, whole. Meanwhile another writer registers defaults again and again, which replaces
        // the view and empties the cache, and readers read many keys, which grows its table.
        let long = String(repeating: "x", count: 100)
        let writer = Task.detached {
            for round in 0..<rounds {
                switch round % 4 {
                case 0: defaults.set(round, forKey: "Raced")
                case 1: defaults.set("s\(round)", forKey: "Raced")
                case 2: defaults.set("\(long)\(round)", forKey: "Raced")
                default: defaults.set(Data(repeating: UInt8(round % 256), count: 40), forKey: "Raced")
                }
            }
            defaults.set(-1, forKey: "Done")
        }
        let registrar = Task.detached {
            for round in 0..<200 {
                defaults.register(defaults: ["Registered\(round % 7)": .integer(round)] as [String: PropertyList])
            }
        }
        let readers = (0..<3).map { reader in
            Task.detached { () -> Int in
                var bad = 0
                var reads = 0
                repeat {
                    for index in 0..<500 {
                        switch defaults.value(forKey: "Raced") {
                        case nil: break
                        case .integer(let integer):
                            // Read from the bucket's seqlock: a torn read would show another number.
                            if integer % 4 != 0 || integer < 0 || integer >= rounds { bad += 1 }
                        case .string(let string):
                            if !(string.hasPrefix("s") || string.hasPrefix(long)) { bad += 1 }
                        case .data(let data):
                            if data.count != 40 || Set(data).count != 1 { bad += 1 }
                        default: bad += 1
                        }
                        _ = defaults.value(forKey: "Other\(reader)-\(index % 300)")
                        _ = defaults.object(forKey: "Registered\(index % 7)")
                    }
                    reads += 500
                } while defaults.integer(forKey: "Done") != -1 && reads < 20_000_000
                return bad
            }
        }
        await writer.value
        _ = await registrar.result
        for reader in readers { #expect(await reader.value == 0) }
        agree(defaults, "Raced", merged(defaults, "Raced"), "quiet again")
        // With no reader left, the next change releases whatever readers kept waiting.
        defaults.set(0, forKey: "Raced")
        #expect(defaults.valueCache.retiredCount == 0)
    }

    @Test("Scalar reads (loads only) stay whole while the table grows and every key changes")
    func scalarReadsDuringGrowth() async throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store("com.example.cache.grow")
        // 2,000 keys: reading them all grows the table from 16 to 8,192 buckets under the readers, while a
        // writer changes every key again and again (a key's value is always its number plus a multiple of
        // 10,000, a real for odd rounds) and a registrar rewrites every entry (a new view).
        let count = 2_000
        var contents: [String: PropertyList] = [:]
        for index in 0..<count { contents["Key\(index)"] = .integer(index) }
        try defaults.trySetPersistentDomain(contents, forName: "com.example.cache.grow")
        let writer = Task.detached {
            for round in 1...20 {
                for index in 0..<count {
                    let value = index + round * 10_000
                    defaults.set(round % 2 == 0 ? .integer(value) : .real(Double(value)), forKey: "Key\(index)")
                }
            }
            defaults.set(true, forKey: "Done")
        }
        let registrar = Task.detached {
            for round in 0..<50 {
                defaults.register(defaults: ["Registered": .integer(round)] as [String: PropertyList])
            }
        }
        let readers = (0..<3).map { reader in
            Task.detached { () -> Int in
                var bad = 0
                var passes = 0
                repeat {
                    for offset in 0..<count {
                        let index = (offset * 7 + reader * 331) % count
                        let number: Double
                        switch defaults.value(forKey: "Key\(index)") {
                        case .integer(let integer): number = Double(integer)
                        case .real(let real): number = real
                        default:
                            bad += 1
                            continue
                        }
                        if number.truncatingRemainder(dividingBy: 10_000) != Double(index) { bad += 1 }
                    }
                    passes += 1
                } while !defaults.bool(forKey: "Done") && passes < 10_000
                return bad
            }
        }
        await writer.value
        await registrar.value
        for reader in readers { #expect(await reader.value == 0, "every read is a value some writer stored, whole") }
        #expect(defaults.valueCache.capacity >= 4_096, "reading 2,000 keys grew the table")
        for index in 0..<count {
            agree(defaults, "Key\(index)", .integer(index + 20 * 10_000), "quiet again")
        }
    }

    @Test("A cache stays bounded by its view however many absent names are read")
    func bounded() {
        let cache = ValueReadCache()
        for index in 0..<100_000 {
            let key = "Absent\(index)"
            cache.fill(key, hash: FastHash.hash(key), value: nil, viewCount: 10)
            cache.releaseRetired()
        }
        #expect(cache.capacity <= 64, "a 10-key view's cache keeps at most 64 buckets")
        #expect(cache.retiredCount == 0)
        let key = "Present"
        cache.fill(key, hash: FastHash.hash(key), value: 1, viewCount: 10)
        guard case .known(let value) = cache.lookup(key, hash: FastHash.hash(key)) else {
            Issue.record("a filled key is known")
            return
        }
        #expect(value == 1)

        // Present keys fill the rest; a key that finds the table full at its bound is not cached, and its
        // reads go through the lock.
        var cached = 0
        for index in 0..<100 {
            let key = "Present\(index)"
            cache.fill(key, hash: FastHash.hash(key), value: .integer(index), viewCount: 10)
            if case .known(.integer(index)) = cache.lookup(key, hash: FastHash.hash(key)) { cached += 1 }
        }
        #expect(cache.capacity <= 64)
        #expect(cached > 0 && cached < 100, "\(cached) present keys found room, then the table was full")
    }

    @Test("A store reads correctly through the lock once its cache is full")
    func fullCacheStillReads() throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store("com.example.cache.full")
        // Names that come and go: each read while present (cached), then removed. The view never holds
        // more than two keys, which bounds the table (at 8 buckets, half of them usable).
        defaults.set(0, forKey: "Stays")
        for index in 0..<8 {
            defaults.set(index, forKey: "Gone\(index)")
            #expect(defaults.integer(forKey: "Gone\(index)") == index)
            defaults.removeObject(forKey: "Gone\(index)")
            #expect(defaults.object(forKey: "Gone\(index)") == nil, "a cached key follows its removal")
        }
        #expect(defaults.valueCache.capacity == ValueReadCache.capacityBound(2))
        defaults.set(9, forKey: "Late")
        #expect(defaults.integer(forKey: "Late") == 9)
        guard case .unknown = cached(defaults, "Late") else {
            Issue.record("the table is full at its bound: the new key is not cached")
            return
        }
        defaults.set(10, forKey: "Late")
        #expect(defaults.integer(forKey: "Late") == 10, "read through the lock")
        #expect(defaults.integer(forKey: "Stays") == 0)
    }
}
