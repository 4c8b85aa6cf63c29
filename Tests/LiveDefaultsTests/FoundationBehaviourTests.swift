import Foundation
import Synchronization
import TestProcesses
import Testing

@testable import LiveDefaults

/// Behaviours where code ported from Foundation's UserDefaults expects Foundation's answer (checked against
/// swift-corelibs-foundation's own test cases and against Foundation on Linux).
@Suite("Behaves as Foundation does where code is ported from it", .blockingWork)
struct FoundationBehaviourTests {
    @Test("setPersistentDomain and removePersistentDomain post didChangeNotification once per call, as Foundation")
    func persistentDomainNotifications() async throws {
        let directory = TemporaryDirectory()
        let first = try directory.store("com.example.app")
        let second = try directory.store("com.example.app")
        let sentinel = try directory.store("com.example.sentinel")
        let posts = Observed([ObjectIdentifier: Int]())
        let observer = NotificationCenter.default.addObserver(
            forName: Defaults.didChangeNotification, object: nil, queue: nil
        ) { notification in
            guard let store = notification.object as? Defaults else { return }
            posts.update { $0[ObjectIdentifier(store), default: 0] += 1 }
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        @Sendable func count(_ store: Defaults) -> Int { posts.current[ObjectIdentifier(store)] ?? 0 }
        // Foundation's own test: removing a domain that does not exist, setting it, removing it from another
        // store, in quick succession, posts exactly three notifications.
        first.removePersistentDomain(forName: "com.example.elsewhere")
        first.setPersistentDomain(["Key": 1, "Other": "x"], forName: "com.example.elsewhere")
        #expect(second.persistentDomain(forName: "com.example.elsewhere")?["Key"] as? Int == 1)
        second.removePersistentDomain(forName: "com.example.elsewhere")
        // Gone at once, as in Foundation, though the file's removal is written in the background.
        #expect(first.persistentDomain(forName: "com.example.elsewhere") == nil)
        // A store that called posts at once; a store whose view another store changed posts after the short
        // gathering wait: the sentinel's post, made last, can arrive before that one. Each count is waited for,
        // and a count above the expected one fails as well.
        sentinel.removePersistentDomain(forName: "com.example.sentinel")
        #expect(await posts.wait { _ in count(sentinel) == 1 && count(first) >= 2 && count(second) >= 1 })
        #expect(count(first) == 2)
        #expect(count(second) == 1)
        // The application domain (in both stores' search list) through a whole-domain call: one post from the
        // store that called, one from the other store, whose view changed.
        first.setPersistentDomain(["Shown": true], forName: "com.example.app")
        sentinel.removePersistentDomain(forName: "com.example.sentinel")
        #expect(await posts.wait { _ in count(sentinel) == 2 && count(first) >= 3 && count(second) >= 2 })
        #expect(count(first) == 3)
        #expect(count(second) == 2)
        // Sets are still gathered: a burst of them posts far fewer notifications than it has sets.
        for index in 0..<200 { first.set(index, forKey: "Burst") }
        sentinel.removePersistentDomain(forName: "com.example.sentinel")
        #expect(await posts.wait { _ in count(sentinel) == 3 && count(first) > 3 })
        #expect(count(first) - 3 < 50)
        #expect(count(first) > 3)
    }

    @Test("string(forKey:) of a number or a Boolean is its string value")
    func stringOfNumbers() throws {
        let defaults = try TemporaryDirectory().store()
        let cases: [(Any, String)] = [
            (42, "42"), (12.34, "12.34"), (1e20, "1e+20"), (-0.0, "-0.0"), (true, "1"), (false, "0"),
        ]
        for (value, expected) in cases {
            defaults.set(value, forKey: "Value")
            #expect(defaults.string(forKey: "Value") == expected)
        }
        defaults.set(Date(), forKey: "Value")
        #expect(defaults.string(forKey: "Value") == nil)
        defaults.set(["a"], forKey: "Value")
        #expect(defaults.string(forKey: "Value") == nil)
    }

    @Test("register(defaults:) and set(_: Any?) accept URL and NSURL, stored as set(_: URL?) stores them")
    func urls() throws {
        let defaults = try TemporaryDirectory().store()
        let web = URL(string: "https://example.com/x")!
        defaults.register(defaults: ["Web": web, "File": URL(fileURLWithPath: "/tmp/a b"), "Plain": 1])
        #expect(defaults.url(forKey: "Web") == web)
        #expect(defaults.url(forKey: "File")?.path == "/tmp/a b")
        #expect(defaults.string(forKey: "File") == "/tmp/a b")
        #expect(defaults.integer(forKey: "Plain") == 1)
        defaults.set(NSURL(string: "https://example.com/y")!, forKey: "Bridged")
        #expect(defaults.url(forKey: "Bridged") == URL(string: "https://example.com/y"))
        defaults.set(web as Any, forKey: "Any")
        #expect(defaults.url(forKey: "Any") == web)
        defaults.setVolatileDomain(["VolatileWeb": web], forName: "scratch")
        // Archived as set(_: URL?) archives it (keyed archives need not be byte-identical).
        #expect(Coercion.url(defaults.volatileDomainValues(forName: "scratch")["VolatileWeb"]) == web)
    }

    @Test(
        "setVolatileDomain with Foundation values does not throw; where Foundation raises (an existing name) it refuses, keeps the contents and reports"
    )
    func volatileDomainLikeFoundation() throws {
        let defaults = try TemporaryDirectory().store()
        defaults.setVolatileDomain(["A": 1] as [String: Any], forName: "scratch")
        defaults.setVolatileDomain(["A": 2] as [String: Any], forName: "scratch")
        #expect(defaults.volatileDomainValues(forName: "scratch") == ["A": 1])
        #expect(defaults.lastError == .volatileDomainExists("scratch"))
        // The registration domain exists from the start: registered defaults are never replaced this way.
        defaults.register(defaults: ["Registered": true] as [String: Any])
        defaults.setVolatileDomain(["Other": 1] as [String: Any], forName: Defaults.registrationDomain)
        #expect(defaults.bool(forKey: "Registered"))
        #expect(defaults.lastError == .volatileDomainExists(Defaults.registrationDomain))
        defaults.setVolatileDomain(["Flag": 1] as [String: Any], forName: Defaults.argumentDomain)
        #expect(defaults.lastError == .volatileDomainExists(Defaults.argumentDomain))
        // A value with no property-list form changes nothing and is reported.
        defaults.removeVolatileDomain(forName: "scratch")
        defaults.setVolatileDomain(["A": 3, "Bad": NSObject()] as [String: Any], forName: "scratch")
        #expect(defaults.volatileDomainNames.contains("scratch") == false)
        guard let error = defaults.lastError, error.code == .notAPropertyList, let key = error.key else {
            Issue.record("expected notAPropertyList, got \(String(describing: defaults.lastError))")
            return
        }
        #expect(key == "Bad")
        defaults.setVolatileDomain(["A": 2] as [String: Any], forName: "scratch")
        #expect(defaults.volatileDomainValues(forName: "scratch") == ["A": 2])
        // Both forms keep refusing an existing name: the Foundation-typed one reports it, the other throws.
        defaults.setVolatileDomain(["A": 4] as [String: Any], forName: "scratch")
        #expect(defaults.lastError == DefaultsError.volatileDomainExists("scratch"))
        #expect(defaults.volatileDomainValues(forName: "scratch") == ["A": 2])
        #expect(throws: DefaultsError.volatileDomainExists("scratch")) {
            try defaults.trySetVolatileDomain(["A": 4] as [String: PropertyList], forName: "scratch")
        }
    }

    @Test("a Float reads back as Foundation's: \"12.34\" as a string, the float's own value as a double")
    func floatDigits() throws {
        let defaults = try TemporaryDirectory().store()
        defaults.set(Float(12.34), forKey: "Float")
        #expect(defaults.string(forKey: "Float") == "12.34")
        #expect(defaults.double(forKey: "Float") == Double(Float(12.34)))
        #expect(defaults.float(forKey: "Float") == Float(12.34))
        // A double that no Float holds exactly prints as the double.
        defaults.set(12.34, forKey: "Double")
        #expect(defaults.string(forKey: "Double") == "12.34")
        #expect(defaults.double(forKey: "Double") == 12.34)
        defaults.set(0.1 + 0.2, forKey: "Sum")
        #expect(defaults.string(forKey: "Sum") == "0.30000000000000004")
        defaults.set(Float(0.1) as Any, forKey: "Any")
        #expect(defaults.string(forKey: "Any") == "0.1")
        defaults.set(Float.greatestFiniteMagnitude, forKey: "Large")
        #expect(defaults.float(forKey: "Large") == .greatestFiniteMagnitude)
        defaults.set(Float.infinity, forKey: "Infinite")
        #expect(defaults.double(forKey: "Infinite") == .infinity)
        defaults.set(Float.nan, forKey: "NaN")
        #expect(defaults.double(forKey: "NaN").isNaN)
        defaults.set(-Float.leastNonzeroMagnitude, forKey: "Tiny")
        #expect(defaults.float(forKey: "Tiny") == -Float.leastNonzeroMagnitude)
    }

    @Test("a persistent domain set by one store reads back exactly from another, dates to the sub-second")
    func persistentDomainReadsBackExactly() throws {
        let directory = TemporaryDirectory()
        let first = try directory.store()
        let second = try directory.store()
        let date = Date(timeIntervalSince1970: 1_700_000_000.123_456)
        first.setPersistentDomain(["When": date, "Nested": ["When": date]], forName: "com.example.outside")
        // Written to disk (where an XML date keeps whole seconds), then asked for through another store.
        #expect(first.synchronize())
        let read = second.persistentDomain(forName: "com.example.outside")
        #expect(read?["When"] as? Date == date)
        #expect((read?["Nested"] as? [String: Any])?["When"] as? Date == date)
        // Another process's write to the kept file is still seen.
        let other = TemporaryDirectory()
        let writer = try other.store("com.example.outside")
        writer.set(42, forKey: "Other")
        #expect(writer.synchronize())
        try FileManager.default.removeItem(atPath: directory.file("com.example.outside.plist"))
        try FileManager.default.copyItem(
            atPath: other.file("com.example.outside.plist"), toPath: directory.file("com.example.outside.plist"))
        #expect(second.persistentDomain(forName: "com.example.outside")?["Other"] as? Int == 42)
    }

    @Test("of callers creating one volatile domain at once, exactly one succeeds", .blockingWork)
    func volatileDomainCreatedOnce() throws {
        let defaults = try TemporaryDirectory().store()
        for round in 0..<50 {
            let name = "race-\(round)"
            let successes = Atomic<Int>(0)
            DispatchQueue.concurrentPerform(iterations: 8) { caller in
                if (try? defaults.trySetVolatileDomain(["Caller": .integer(caller)], forName: name)) != nil {
                    successes.add(1, ordering: .relaxed)
                }
            }
            #expect(successes.load(ordering: .relaxed) == 1, "round \(round)")
        }
    }
}
