import Foundation
import TestProcesses
import Testing

@testable import LiveDefaults
import LiveDefaultsTesting

@Suite("Change streams: current value, newest wins, lifetime")
struct StreamTests {
    @Test("updates(forKey:) starts with the current value, then follows changes")
    func currentValueFirst() async throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store()
        defaults.set(1, forKey: "K")
        var iterator = defaults.updates(forKey: "K").makeAsyncIterator()
        #expect(await iterator.next() == .some(1))
        defaults.set(2, forKey: "K")
        #expect(await iterator.next() == .some(2))
        defaults.removeObject(forKey: "K")
        #expect(await iterator.next() == .some(nil), "a removal is a nil element, not the end")
    }

    @Test("emitCurrentValue: false yields changes only")
    func skipCurrentValue() async throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store()
        defaults.set(1, forKey: "K")
        var iterator = defaults.updates(forKey: "K", emitCurrentValue: false).makeAsyncIterator()
        defaults.set(5, forKey: "K")
        #expect(await iterator.next() == .some(5))
    }

    @Test("Equal consecutive values are dropped, also after coalescing")
    func equalValuesDropped() async throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store()
        defaults.set(1, forKey: "K")
        var iterator = defaults.updates(forKey: "K").makeAsyncIterator()
        #expect(await iterator.next() == .some(1))
        defaults.set(1, forKey: "K")  // no change
        defaults.set(2, forKey: "K")
        defaults.set(1, forKey: "K")  // back where the consumer was: nothing to deliver
        defaults.set(3, forKey: "K")
        #expect(await iterator.next() == .some(3))
    }

    @Test("A slow consumer skips intermediate values, holds one at most, and ends on the latest")
    func newestWins() async throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store()
        var iterator = defaults.updates(forKey: "K", emitCurrentValue: false).makeAsyncIterator()
        for value in 1...10_000 { defaults.set(value, forKey: "K") }
        #expect(await iterator.next() == .some(10_000))
        defaults.set("done", forKey: "K")
        #expect(await iterator.next() == .some("done"))
    }

    @Test("The changes stream coalesces per key: bounded by keys, from first old to newest new")
    func changesCoalesce() async throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store()
        var iterator = defaults.changes().makeAsyncIterator()
        for value in 1...1_000 {
            defaults.set(value, forKey: "A")
            defaults.set(-value, forKey: "B")
        }
        defaults.set("x", forKey: "C")
        defaults.removeObject(forKey: "C")  // cancels out: never delivered
        defaults.set("end", forKey: "D")
        // The consumer starts late: the first change was handed over directly, the rest coalesced.
        var received: [KeyChange] = []
        while received.last?.key != "D", let change = await iterator.next() { received.append(change) }
        #expect(received.count <= 4)
        #expect(received.last(where: { $0.key == "A" })?.newValue == 1_000)
        #expect(received.last(where: { $0.key == "B" })?.newValue == -1_000)
        #expect(!received.contains { $0.key == "C" })
        #expect(received.allSatisfy { $0.origin == .local && $0.domain == "com.example.test" })
    }

    @Test("Registration and volatile changes reach streams when they change the effective value")
    func volatileChanges() async throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store(languages: ["fr"])
        var updates = defaults.updates(forKey: "Greeting").makeAsyncIterator()
        #expect(await updates.next() == .some(nil))
        defaults.register(defaults: ["Greeting": "Hello"] as [String: PropertyList])
        #expect(await updates.next() == .some("Hello"))
        try defaults.trySetVolatileDomain(["Greeting": "Bonjour"] as [String: PropertyList], forName: "fr")
        #expect(await updates.next() == .some("Bonjour"))
        defaults.removeVolatileDomain(forName: "fr")
        #expect(await updates.next() == .some("Hello"))
    }

    @Test("Cancelling the task finishes the stream and unregisters it")
    func cancellation() async throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store()
        let received = Observed(0)
        // An iterator subscribes when it is made, so all seven are registered before any task runs.
        let tasks = (0..<5).map { _ in
            let updates = defaults.updates(forKey: "K").makeAsyncIterator()
            return Task {
                var updates = updates
                var count = 0
                while await updates.next() != nil {
                    if count == 0 { received.update { $0 += 1 } }
                    count += 1
                }
                return count
            }
        }
        let changesIterator = defaults.changes().makeAsyncIterator()
        let domainIterator = try defaults.changes(inDomain: "com.example.elsewhere").makeAsyncIterator()
        #expect(defaults.activeObserverCount == 7)
        let changes = Task {
            var iterator = changesIterator
            while await iterator.next() != nil {}
        }
        let domain = Task {
            var iterator = domainIterator
            while await iterator.next() != nil {}
        }
        // Each stream has handed its current value over before it is cancelled.
        #expect(await received.wait { $0 == 5 })
        for task in tasks { task.cancel() }
        changes.cancel()
        domain.cancel()
        for task in tasks { #expect(await task.value >= 1) }
        _ = await changes.value
        _ = await domain.value
        #expect(defaults.activeObserverCount == 0)
    }

    @Test("Leaving a loop early unregisters too")
    func breakUnregisters() async throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store()
        defaults.set(1, forKey: "K")
        for await value in defaults.updates(forKey: "K") {
            #expect(value == 1)
            break
        }
        // The loop's iterator ended with the loop, and its subscription with it.
        #expect(defaults.activeObserverCount == 0)
    }

    @Test("Streams finish when the store goes away")
    func storeGoesAway() async throws {
        let directory = TemporaryDirectory()
        var defaults: Defaults? = try directory.store()
        let updates = try #require(defaults?.updates(forKey: "K"))
        let changes = try #require(defaults?.changes())
        let valueIterator = updates.makeAsyncIterator()
        let changeIterator = changes.makeAsyncIterator()
        #expect(defaults?.activeObserverCount == 2)
        let received = Observed(0)
        let valueTask = Task {
            var iterator = valueIterator
            while await iterator.next() != nil { received.update { $0 += 1 } }
            return received.current
        }
        let changeTask = Task {
            var iterator = changeIterator
            while await iterator.next() != nil {}
        }
        #expect(await received.wait { $0 == 1 }, "the current value is handed over first")
        defaults = nil
        #expect(await valueTask.value == 1)
        await changeTask.value
        // Iterating a sequence of a store that is gone ends at once.
        var iterator = updates.makeAsyncIterator()
        #expect(await iterator.next() == nil)
    }

    @Test("A domain's stream follows that domain, in the search list or not")
    func domainStream() async throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store("com.example.app")
        var elsewhere = try defaults.changes(inDomain: "com.example.elsewhere").makeAsyncIterator()
        var own = try defaults.changes(inDomain: "com.example.app").makeAsyncIterator()
        #expect(throws: DefaultsError.self) { try defaults.changes(inDomain: "../x") }
        // Another process writes the domain this store does not search.
        #expect(try runHelper(["write-keys", directory.path, "com.example.elsewhere", "E", "1"]).status == 0)
        let change = await elsewhere.next()
        #expect(
            change
                == KeyChange(domain: "com.example.elsewhere", key: "E0", oldValue: nil, newValue: 0, origin: .external))
        #expect(defaults.object(forKey: "E0") == nil)
        // The application domain's own value, even where an argument would shadow it.
        defaults.set("v", forKey: "Mine")
        #expect(
            await own.next()
                == KeyChange(domain: "com.example.app", key: "Mine", oldValue: nil, newValue: "v", origin: .local))
        // A per-host value beats the user file inside the domain too.
        try defaults.trySet("host", forKey: "Mine", inDomain: "com.example.app", layer: .currentUserCurrentHost)
        #expect(await own.next()?.newValue == "host")
        defaults.set("shadowed", forKey: "Mine")
        try defaults.trySet(nil, forKey: "Mine", inDomain: "com.example.app", layer: .currentUserCurrentHost)
        #expect(
            await own.next()
                == KeyChange(
                    domain: "com.example.app", key: "Mine", oldValue: "host", newValue: "shadowed", origin: .local))
    }

    @Test("Change streams are Sendable and usable from any task")
    func sendable() async throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store()
        let updates: any AsyncSequence & Sendable = defaults.updates(forKey: "K")
        let changes: any AsyncSequence & Sendable = defaults.changes()
        _ = (updates, changes)
        let value = await Task.detached {
            var iterator = defaults.updates(forKey: "K").makeAsyncIterator()
            return await iterator.next()
        }.value
        #expect(value == .some(nil))
    }

    @Test("finishStreams ends every stream after what it was given; a later stream ends at once")
    func finishStreams() async throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store("com.example.finish")
        defaults.set(1, forKey: "Value")
        let valueIterator = defaults.updates(forKey: "Value").makeAsyncIterator()
        let changeIterator = defaults.changes().makeAsyncIterator()
        #expect(defaults.activeObserverCount == 2)
        let values = Task {
            var iterator = valueIterator
            var seen: [Int] = []
            while let value = await iterator.next() { seen.append(value?.integerValue ?? -1) }
            return seen
        }
        let changes = Task {
            var iterator = changeIterator
            var keys: [String] = []
            while let change = await iterator.next() { keys.append(change.key) }
            return keys
        }
        defaults.set(2, forKey: "Value")
        defaults.finishStreams()
        #expect(defaults.streamsFinished)
        let seen = await values.value
        #expect(seen.last == 2, "the last value was delivered before the end: \(seen)")
        #expect(await changes.value.contains("Value"))
        // Later streams end at once (after the current value), and reads and writes go on.
        var later: [PropertyList?] = []
        for await value in defaults.updates(forKey: "Value") { later.append(value) }
        #expect(later == [2])
        defaults.set(3, forKey: "Value")
        #expect(defaults.integer(forKey: "Value") == 3)
        // Every loop has ended, and each subscription with its iterator.
        #expect(defaults.activeObserverCount == 0)
    }
}
