import Foundation
import LiveDefaultsTesting
import PlistOracle
import TestProcesses
import Testing

@testable import LiveDefaults

enum TransactionKeys {
    static let host = DefaultsKey<String>("UpstreamHost", default: "db1")
    static let port = DefaultsKey<Int>("UpstreamPort", default: 5432, range: 1...65535)
    static let counter = DefaultsKey<Int>("Counter", default: 0)
    static let pairA = DefaultsKey<Int>("PairA", default: 0)
    static let pairB = DefaultsKey<Int>("PairB", default: 0)
    static let elsewhere = DefaultsKey<Int>("Elsewhere", default: 0, suite: "com.example.tx.other")
}

@Suite("Transactions and snapshots: changes made together are seen together", .blockingWork)
struct TransactionTests {
    typealias Keys = TransactionKeys

    /// Replaces the domain file as another program would (a new file renamed into place).
    static func replaceFile(_ path: String, with contents: [String: PropertyList]) throws {
        let data = try PropertyList.dictionary(contents).encoded(as: .xml)
        try data.write(to: URL(fileURLWithPath: path), options: .atomic)
    }

    // MARK: In one process

    @Test("A transaction's changes are visible at once, on disk when it returns, and its result is returned")
    func commitsTogether() throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store("com.example.tx")
        let result = try defaults.transaction { tx in
            tx[Keys.host] = "db2"
            tx[Keys.port] = 5433
            tx.set("plain", forKey: "Untyped")
            return tx[Keys.host] + ":\(tx[Keys.port])"
        }
        #expect(result == "db2:5433")
        #expect(defaults[Keys.host] == "db2" && defaults[Keys.port] == 5433)
        #expect(
            try pythonPlist(directory.file("com.example.tx.plist"))
                == #"{"Untyped": "plain", "UpstreamHost": "db2", "UpstreamPort": 5433}"#)
    }

    @Test("Reads inside see the transaction's own writes and removals, then the domain, then the search list")
    func readsSeeOwnWrites() throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store("com.example.tx.reads")
        defaults.register(defaults: ["Registered": 7, "Gone": "registered"])
        defaults.set("stored", forKey: "Gone")
        try defaults.transaction { tx in
            #expect(tx.value(forKey: "Registered") == 7)
            #expect(tx.object(forKey: "Gone") as? String == "stored")
            tx.removeObject(forKey: "Gone")
            #expect(tx.value(forKey: "Gone") == "registered", "the registration domain shows through")
            tx.set(8, forKey: "Registered")
            #expect(tx.value(forKey: "Registered") == 8)
            #expect(Set(tx.changedKeys) == ["Gone", "Registered"])
            #expect(defaults.integer(forKey: "Registered") == 7, "nothing is visible before the commit")
        }
        #expect(defaults.integer(forKey: "Registered") == 8)
        #expect(defaults.string(forKey: "Gone") == "registered")
    }

    @Test("A value a typed key refuses commits nothing and throws, naming the key")
    func refusedValueCommitsNothing() throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store("com.example.tx.refused")
        #expect {
            try defaults.transaction { tx in
                tx[Keys.host] = "db2"
                tx[Keys.port] = 70_000
            }
        } throws: { error in
            (error as? DefaultsError)?.code == .invalidValue && (error as? DefaultsError)?.key == "UpstreamPort"
        }
        #expect(defaults[Keys.host] == "db1" && defaults[Keys.port] == 5432)
        #expect(defaults.synchronize())
        #expect(!FileManager.default.fileExists(atPath: directory.file("com.example.tx.refused.plist")))
    }

    @Test("An error thrown by the closure commits nothing and is rethrown as it is")
    func closureErrorCommitsNothing() throws {
        struct Cancelled: Error {}
        let directory = TemporaryDirectory()
        let defaults = try directory.store("com.example.tx.cancelled")
        #expect(throws: Cancelled.self) {
            try defaults.transaction { tx in
                tx[Keys.host] = "db2"
                throw Cancelled()
            }
        }
        #expect(defaults[Keys.host] == "db1")
    }

    @Test("A key of another suite, a value with no property-list form and a forced key are refused")
    func refusals() throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store("com.example.tx.refusals")
        #expect {
            try defaults.transaction { tx in tx[Keys.elsewhere] = 1 }
        } throws: { error in
            let error = error as? DefaultsError
            return error?.code == .transactionSpansDomains && error?.key == "Elsewhere"
                && "\(error!)".contains("com.example.tx.other")
        }
        #expect {
            try defaults.transaction { tx in tx.set(NSObject(), forKey: "Object") }
        } throws: { ($0 as? DefaultsError)?.code == .notAPropertyList }

        try FileManager.default.createDirectory(
            atPath: directory.file("Managed"), withIntermediateDirectories: true)
        try Self.replaceFile(directory.file("Managed/com.example.tx.refusals.plist"), with: ["Locked": 1])
        #expect(defaults.synchronize())
        #expect {
            try defaults.transaction { tx in
                tx.set(1, forKey: "Free")
                tx.set(2, forKey: "Locked")
            }
        } throws: { ($0 as? DefaultsError)?.code == .forcedKey }
        #expect(defaults.object(forKey: "Free") == nil)
        #expect(throws: DefaultsError.self) { try defaults.transaction(inDomain: "../escape") { _ in } }
    }

    @Test("A key read and changed by another writer before the commit: the closure runs again on the new version")
    func conflictRunsAgain() throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store("com.example.tx.conflict")
        let path = directory.file("com.example.tx.conflict.plist")
        var runs = 0
        let result = try defaults.transaction { tx in
            runs += 1
            let seen = tx[Keys.counter]
            // Another program writes the counter while the first run is under way.
            if runs == 1 { try Self.replaceFile(path, with: ["Counter": 41, "Other": "kept"]) }
            tx[Keys.counter] = seen + 1
            return seen
        }
        #expect(runs == 2 && result == 41)
        #expect(defaults[Keys.counter] == 42 && defaults.string(forKey: "Other") == "kept")
        #expect(try pythonPlist(path) == #"{"Counter": 42, "Other": "kept"}"#)
    }

    @Test("A key not read may change meanwhile: it is kept, and the closure runs once")
    func unreadKeysDoNotConflict() throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store("com.example.tx.unread")
        let path = directory.file("com.example.tx.unread.plist")
        var runs = 0
        try defaults.transaction { tx in
            runs += 1
            if runs == 1 { try Self.replaceFile(path, with: ["Other": "theirs"]) }
            tx[Keys.host] = "db2"
        }
        #expect(runs == 1)
        #expect(try pythonPlist(path) == #"{"Other": "theirs", "UpstreamHost": "db2"}"#)
        #expect(defaults.string(forKey: "Other") == "theirs")
    }

    @Test("A domain that keeps changing under every attempt: transactionConflict, nothing committed")
    func conflictGivesUp() throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store("com.example.tx.busy")
        let path = directory.file("com.example.tx.busy.plist")
        var runs = 0
        #expect {
            try defaults.transaction { tx in
                runs += 1
                let seen = tx[Keys.counter]
                try Self.replaceFile(path, with: ["Counter": .integer(1000 + runs)])
                tx[Keys.counter] = seen + 1
            }
        } throws: { error in
            (error as? DefaultsError)?.code == .transactionConflict
                && "\(error)".contains("\(Defaults.transactionAttempts) attempts")
        }
        #expect(runs == Defaults.transactionAttempts)
        #expect(try pythonPlist(path) == #"{"Counter": \#(1000 + runs)}"#)
    }

    @Test("This process's edits made before a transaction are written with it; those made after stay pending")
    func pendingEditsRideAlong() throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store("com.example.tx.pending")
        defaults.set("before", forKey: "Before")
        try defaults.transaction { tx in
            #expect(tx.value(forKey: "Before") == "before")
            tx[Keys.host] = "db2"
        }
        #expect(
            try pythonPlist(directory.file("com.example.tx.pending.plist"))
                == #"{"Before": "before", "UpstreamHost": "db2"}"#)
        defaults.set("after", forKey: "After")
        #expect(defaults.synchronize())
        #expect(
            try pythonPlist(directory.file("com.example.tx.pending.plist"))
                == #"{"After": "after", "Before": "before", "UpstreamHost": "db2"}"#)
    }

    @Test("A transaction of another domain changes that domain's file")
    func otherDomain() throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store("com.example.tx.app")
        let value = try defaults.transaction(inDomain: "com.example.tx.else") { tx in
            tx.set(3, forKey: "N")
            return tx.value(forKey: "N")
        }
        #expect(value == 3)
        #expect(try pythonPlist(directory.file("com.example.tx.else.plist")) == #"{"N": 3}"#)
        #expect(defaults.object(forKey: "N") == nil, "not in the search list")
    }

    @Test("A change stream tells which changes came together: one batch per transaction")
    func changesCarryBatches() async throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store("com.example.tx.batches")
        var iterator = defaults.changes().makeAsyncIterator()
        try defaults.transaction { tx in
            tx[Keys.host] = "db2"
            tx[Keys.port] = 5433
        }
        let first = try #require(await iterator.next())
        let second = try #require(await iterator.next())
        // Taken after the first two: a change of a key still pending in the stream would be coalesced with it.
        defaults[Keys.host] = "db3"
        let third = try #require(await iterator.next())
        #expect(Set([first.key, second.key]) == ["UpstreamHost", "UpstreamPort"])
        #expect(first.batch == second.batch && first.origin == .local)
        #expect(third.key == "UpstreamHost" && third.batch > first.batch)
    }

    @Test("One didChangeNotification for a transaction")
    func oneNotification() throws {
        // On a manual clock: the post is due a moment after the change, and nothing else is due after it.
        let clock = ManualDefaultsClock()
        var configuration = Defaults.Configuration.rooted(
            at: TemporaryDirectory().path, applicationDomain: "com.example.tx.notification")
        configuration.clock = clock
        let defaults = try Defaults(configuration: configuration)
        let posts = Lock(0)
        let observer = NotificationCenter.default.addObserver(
            forName: Defaults.didChangeNotification, object: defaults, queue: nil
        ) { _ in posts.withLock { $0 += 1 } }
        defer { NotificationCenter.default.removeObserver(observer) }
        try defaults.transaction { tx in
            for index in 0..<20 { tx.set(index, forKey: "K\(index)") }
        }
        #expect(posts.withLock { $0 } == 0, "posted a moment later, not from inside the transaction")
        clock.advanceAndWait(by: Defaults.notificationDelay)
        #expect(posts.withLock { $0 } == 1)
        clock.advanceAndWait(by: .seconds(1))
        #expect(posts.withLock { $0 } == 1)
    }

    @Test("Threads committing A = B while others read snapshots: no snapshot ever mixes two versions")
    func snapshotsInOneProcess() async throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store("com.example.tx.threads")
        let done = Lock(false)
        let mixed = Lock(0)
        let reader = Thread {
            while !done.withLock({ $0 }) {
                let snapshot = defaults.snapshot(of: Keys.pairA, Keys.pairB)
                if snapshot[Keys.pairA] != snapshot[Keys.pairB] { mixed.withLock { $0 += 1 } }
            }
        }
        reader.start()
        // The commits start once the watcher has its first snapshot (it subscribes when it starts iterating): a
        // task that began iterating only after the last commit saw one snapshot on a loaded machine.
        let (subscribed, signal) = AsyncStream<Void>.makeStream()
        let watcher = Task {
            var seen = 0
            var mixedSnapshots = 0
            for await snapshot in defaults.updates(of: Keys.pairA, Keys.pairB) {
                if seen == 0 { signal.yield() }
                seen += 1
                if snapshot[Keys.pairA] != snapshot[Keys.pairB] { mixedSnapshots += 1 }
                if snapshot[Keys.pairA] == 400 { break }
            }
            return (seen, mixedSnapshots)
        }
        for await _ in subscribed { break }
        DispatchQueue.concurrentPerform(iterations: 4) { thread in
            for round in 0..<100 {
                let value = round * 4 + thread + 1
                _ = try? defaults.transaction { tx in
                    tx[Keys.pairA] = value
                    tx[Keys.pairB] = value
                }
            }
        }
        try defaults.transaction { tx in
            tx[Keys.pairA] = 400
            tx[Keys.pairB] = 400
        }
        let (seen, mixedSnapshots) = await watcher.value
        done.withLock { $0 = true }
        #expect(seen > 1 && mixedSnapshots == 0)
        #expect(mixed.withLock { $0 } == 0)
    }

    // MARK: Across processes

    /// Starts the helper in a mode that prints "ready" and waits for a line on standard input.
    static func startWaiting(_ arguments: [String]) throws -> (process: Process, go: FileHandle) {
        let process = try helperProcess(arguments)
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        var seen = Data()
        while !String(decoding: seen, as: UTF8.self).contains("ready") {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            seen += chunk
        }
        return (process, input.fileHandleForWriting)
    }

    @Test("Another process commits 10,000 A = B transactions: a snapshot stream here never sees A ≠ B")
    func pairsAcrossProcesses() async throws {
        let directory = TemporaryDirectory()
        let domain = "com.example.tx.pairs"
        let count = 10_000
        // The writer waits after every 1,000th transaction until the stream here has seen it: at least ten
        // versions reach the stream however late its task runs (a ThreadSanitizer build beside a busy machine
        // once saw only the last), and between those pauses as many as the watcher reads.
        let block = 1_000
        let defaults = try directory.store(domain)
        let writer = try Self.startWaiting(["tx-pairs", directory.path, domain, "\(count)", "every:\(block)"])
        let mixedReads = Lock(0)
        let reads = Lock(0)
        let done = Lock(false)
        let reader = Thread {
            while !done.withLock({ $0 }) {
                let snapshot = defaults.snapshot(of: Keys.pairA, Keys.pairB)
                reads.withLock { $0 += 1 }
                if snapshot[Keys.pairA] != snapshot[Keys.pairB] { mixedReads.withLock { $0 += 1 } }
                RealTime.pause(blocking: .microseconds(100))
            }
        }
        reader.start()
        // Subscribed before the writer starts: a task scheduled late on a busy machine would otherwise subscribe
        // after the last version arrived, and wait for a change that never comes.
        let snapshots = defaults.updates(of: Keys.pairA, Keys.pairB, emitCurrentValue: false).makeAsyncIterator()
        let go = writer.go
        let watcher = Task {
            var seen = 0
            var mixed = 0
            var snapshots = snapshots
            while let snapshot = await snapshots.next() {
                seen += 1
                if snapshot[Keys.pairA] != snapshot[Keys.pairB] { mixed += 1 }
                if snapshot[Keys.pairA] == count { break }
                // The writer waits at this version: on with the next block.
                if snapshot[Keys.pairA] % block == 0 { try? go.write(contentsOf: Data("next\n".utf8)) }
            }
            return (seen, mixed)
        }
        try writer.go.write(contentsOf: Data("go\n".utf8))
        let (seen, mixed) = await watcher.value
        done.withLock { $0 = true }
        writer.process.waitUntilExit()
        #expect(writer.process.terminationStatus == 0)
        // One at each pause at least; usually hundreds (fewer when polled without inotify), none mixed.
        #expect(seen >= count / block, "the stream saw \(seen) versions")
        #expect(mixed == 0)
        #expect(mixedReads.withLock { $0 } == 0 && reads.withLock { $0 } > 100)
        #expect(defaults[Keys.pairA] == count && defaults[Keys.pairB] == count)
    }

    @Test("4 processes × 1,000 transactions of counter += 1: the counter ends at 4,000")
    func countersAcrossProcesses() throws {
        let directory = TemporaryDirectory()
        let domain = "com.example.tx.counter"
        let writers = try (0..<4).map { _ in
            try Self.startWaiting(["tx-increment", directory.path, domain, "Counter", "1000"])
        }
        for writer in writers { try writer.go.write(contentsOf: Data("go\n".utf8)) }
        for writer in writers {
            writer.process.waitUntilExit()
            #expect(writer.process.terminationStatus == 0)
        }
        #expect(try pythonPlist(directory.file("\(domain).plist")) == #"{"Counter": 4000}"#)
        let defaults = try directory.store(domain)
        #expect(defaults[Keys.counter] == 4000)
    }
}
