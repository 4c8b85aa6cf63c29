// A second process for the cross-process tests. Each mode does one thing and exits 0 on success:
//
//   write-keys <dir> <domain> <prefix> <count>     set <prefix>0 … <prefix>N-1 through LiveDefaults
//   write-forever <dir> <domain> <key>             rewrite a large value in a loop until killed
//   foundation-write <xdg> <domain> <key> <json>   Foundation.UserDefaults: set + synchronize
//   foundation-read <xdg> <domain> <key>           Foundation.UserDefaults: print the value as JSON
//   standard-reset <key> <value>                   Defaults.standard: set, resetStandardUserDefaults()
//   standard-race <threads>                        Defaults.standard first used from many threads at once:
//                                                  print "shared <n>" when all got one store
//   write-sequence <dir> <domain> <key> <count>    set the key to 1 … count, each on disk before the next
//   typed-read <dir> <domain> <n>                  read DefaultsKey<Int>("RateLimit", default: 100) n times
//   await-value <dir> <domain> <key> <value>       print "ready", wait (20 s at most) until the key's value
//                                                  is the string, print "seen"; exit 1 on timeout
//   write-string <dir> <domain> <key> <value>      set the key to the string and synchronize
//   write-after-input <dir> <domain> <key> <value> open the domain, print "ready", wait for a line on standard
//                                                  input, then set the key to the string and synchronize
//
//   machine-trace <seed>                           print the trace of a seed's run on a simulated machine
//
//   publish-schema <domain>                        declare the example keys below (every kind: range,
//                                                  choices, secret, optional, collection, Codable) and
//                                                  publish their schema where Defaults.standard's
//                                                  locations say; print each path written
//   typed-watch <dir> <domain> <n>                 print "ready", then the first n values of the typed
//                                                  key RateLimit (Int, 1…100000, default 100) as they
//                                                  arrive; print the errors reported on standard error
//
// The Foundation and standard modes need XDG_CONFIG_HOME in their environment (Foundation reads it at
// start-up) and refuse to run without it, so that a test can never write into the real home.
//   validate <dir> <domain> <limit>                a watching store with a validator: MinPool ≤ MaxPool and
//                                                  MaxPool ≤ limit; print "ready", then for each line read
//                                                  "MinPool <n> MaxPool <n>" as it serves them, until
//                                                  standard input ends
//   print-arguments -Key value …                   print the argument domain as an old-style plist
//   env-reader <dir> <domain> <prefix>             a store of the domain whose environment prefix is <prefix>;
//                                                  print "ready", then for each line read (a key) print
//                                                  "<key> = <value> from <source>" until standard input ends
//   hygiene <xdg> <kind> <count>                   make and drop <count> stores, each followed by a task
//                                                  that waits for the store's write of its key, after a
//                                                  warm-up of the same kind; print the process's resources
//                                                  (ProcessResources) before and after as "before|after heap
//                                                  fds watches". Kinds: distinct (a store per domain
//                                                  com.acme.tenant.<n>, Defaults(suiteName:)), same (every
//                                                  store of one domain), subscriptions (one store, each
//                                                  round a subscription and a write on it)
//   tx-pairs <dir> <domain> <count> [<pause>]     print "ready", wait for a line on standard input, then
//                                                  commit transactions setting PairA = PairB = 1 … count,
//                                                  each one a transaction of both keys; with <pause>, after
//                                                  that transaction wait for another line (so that a reader
//                                                  sees a version between the first and the last); with
//                                                  every:<n>, after every n-th but the last (a reader sees
//                                                  count / n versions at least, however late it runs)
//   tx-increment <dir> <domain> <key> <count>      wait for a line on standard input (after "ready"), then
//                                                  count transactions of `tx[key] += 1` (typed Int, 0)
//   soak-writer <dir> <domain> <host> <keys> <seconds> <seed> <log>
//                                                  random sets (80 %) and deletes of keys K0 … K<keys-1>
//                                                  for that long, 10-40 ms apart; each set's value is
//                                                  "<host>-<n>", unique; after each operation reached the
//                                                  file (synchronize), one line in the log:
//                                                  n TAB key TAB value or "-" (deleted) TAB the value it
//                                                  replaced or "-"; exit 0
import Foundation
import LiveDefaults
import LiveDefaultsTesting

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data((message + "\n").utf8))
    exit(2)
}

let arguments = CommandLine.arguments
guard arguments.count >= 2 else { fail("usage: LiveDefaultsTestHelper <mode> …") }

/// Foundation caches the directory at start-up: the environment must already point at the test directory.
func requireConfigHome(_ directory: String) {
    guard ProcessInfo.processInfo.environment["XDG_CONFIG_HOME"] == directory else {
        fail("XDG_CONFIG_HOME must be \(directory) in the environment")
    }
}

func store(_ directory: String, _ domain: String) -> Defaults {
    do {
        return try Defaults(configuration: .rooted(at: directory, applicationDomain: domain))
    } catch {
        fail("\(error)")
    }
}

/// Prints "ready", waits for a line on standard input, then commits `count` transactions (rounds 1 … count)
/// and exits: the cross-process transaction modes.
func transactionsAfterInput(
    _ defaults: Defaults, _ count: Int, pausingAfter pause: Int? = nil, pausingEvery every: Int? = nil,
    _ body: (Int, DefaultsTransaction) -> Void
) -> Never {
    print("ready")
    fflush(nil)
    _ = readLine()
    do {
        for round in 1...max(count, 1) {
            try defaults.transaction { tx in body(round, tx) }
            if round == pause { _ = readLine() }
            if let every, every > 0, round % every == 0, round < count { _ = readLine() }
        }
    } catch {
        fail("\(error)")
    }
    exit(0)
}

switch arguments[1] {
case "soak-writer":
    guard arguments.count == 9, let keys = Int(arguments[5]), keys > 0, let seconds = Double(arguments[6]),
        let seed = UInt64(arguments[7])
    else { fail("soak-writer <dir> <domain> <host> <keys> <seconds> <seed> <log>") }
    let defaults = store(arguments[2], arguments[3])
    let host = arguments[4]
    guard FileManager.default.createFile(atPath: arguments[8], contents: nil),
        let log = FileHandle(forWritingAtPath: arguments[8])
    else { fail("cannot write \(arguments[8])") }
    var generator = SeededRandom(seed: seed)
    let deadline = Date().addingTimeInterval(seconds)
    var count = 0
    while Date() < deadline {
        count += 1
        let key = "K\(Int.random(in: 0..<keys, using: &generator))"
        let previous = defaults.string(forKey: key)
        let value: String?
        if Int.random(in: 0..<10, using: &generator) < 8 {
            value = "\(host)-\(count)"
            defaults.set(value, forKey: key)
        } else {
            value = nil
            defaults.removeObject(forKey: key)
        }
        // Acknowledged only once it is in the file.
        if defaults.synchronize() {
            log.write(Data("\(count)\t\(key)\t\(value ?? "-")\t\(previous ?? "-")\n".utf8))
        }
        usleep(useconds_t(Int.random(in: 10_000...40_000, using: &generator)))
    }
    try? log.close()
    exit(0)

case "tx-pairs":
    guard (5...6).contains(arguments.count), let count = Int(arguments[4]) else {
        fail("tx-pairs <dir> <domain> <count> [<pause>]")
    }
    let option = arguments.count == 6 ? arguments[5] : nil
    let every = option.flatMap { $0.hasPrefix("every:") ? Int($0.dropFirst(6)) : nil }
    let pause = every == nil ? option.flatMap { Int($0) } : nil
    let defaults = store(arguments[2], arguments[3])
    let first = DefaultsKey<Int>("PairA", default: 0)
    let second = DefaultsKey<Int>("PairB", default: 0)
    transactionsAfterInput(defaults, count, pausingAfter: pause, pausingEvery: every) { round, tx in
        tx[first] = round
        tx[second] = round
    }

case "tx-increment":
    guard arguments.count == 6, let count = Int(arguments[5]) else {
        fail("tx-increment <dir> <domain> <key> <count>")
    }
    let defaults = store(arguments[2], arguments[3])
    let counter = DefaultsKey<Int>(arguments[4], default: 0)
    transactionsAfterInput(defaults, count) { _, tx in tx[counter] += 1 }

case "write-keys":
    guard arguments.count == 6, let count = Int(arguments[5]) else {
        fail("write-keys <dir> <domain> <prefix> <count>")
    }
    let defaults = store(arguments[2], arguments[3])
    for index in 0..<count { defaults.set(index, forKey: "\(arguments[4])\(index)") }
    // No synchronize(): pending writes must reach the disk at normal exit by themselves.
    exit(0)

case "write-forever":
    guard arguments.count == 5 else { fail("write-forever <dir> <domain> <key>") }
    let defaults = store(arguments[2], arguments[3])
    let payload = String(repeating: "x", count: 64 * 1024)
    // The first write is on disk before "ready": the test's kill always meets a file that exists.
    defaults.set("0:\(payload)", forKey: arguments[4])
    defaults.synchronize()
    print("ready")
    fflush(nil)
    var round = 0
    while true {
        round += 1
        defaults.set("\(round):\(payload)", forKey: arguments[4])
        defaults.synchronize()
    }

case "foundation-write":
    guard arguments.count == 6 else { fail("foundation-write <xdg> <domain> <key> <json>") }
    requireConfigHome(arguments[2])
    guard let foundation = UserDefaults(suiteName: arguments[3]) else { fail("no suite") }
    let value = try JSONSerialization.jsonObject(with: Data(arguments[5].utf8), options: [.fragmentsAllowed])
    foundation.set(value, forKey: arguments[4])
    guard foundation.synchronize() else { fail("synchronize failed") }
    exit(0)

case "foundation-read":
    guard arguments.count == 5 else { fail("foundation-read <xdg> <domain> <key>") }
    requireConfigHome(arguments[2])
    guard let foundation = UserDefaults(suiteName: arguments[3]) else { fail("no suite") }
    guard let value = foundation.object(forKey: arguments[4]) else {
        print("null")
        exit(0)
    }
    let data = try JSONSerialization.data(withJSONObject: value, options: [.fragmentsAllowed, .sortedKeys])
    print(String(decoding: data, as: UTF8.self))
    exit(0)

case "standard-race":
    guard arguments.count == 3, let threads = Int(arguments[2]), threads > 0,
        let home = ProcessInfo.processInfo.environment["XDG_CONFIG_HOME"]
    else { fail("standard-race <threads> with XDG_CONFIG_HOME set") }
    requireConfigHome(home)
    let seen = SeenStores()
    let start = DispatchSemaphore(value: 0)
    let group = DispatchGroup()
    for _ in 0..<threads {
        group.enter()
        Thread.detachNewThread {
            start.wait()
            let store = Defaults.standard
            _ = store.string(forKey: "Anything")
            seen.append(ObjectIdentifier(store))
            group.leave()
        }
    }
    for _ in 0..<threads { start.signal() }
    guard group.wait(timeout: .now() + 60) == .success else { fail("Defaults.standard did not return on every thread") }
    let identities = seen.all
    guard identities.count == 1, identities.first == ObjectIdentifier(Defaults.standard) else {
        fail("threads got \(identities.count) different stores")
    }
    print("shared \(threads)")

case "standard-reset":
    guard arguments.count == 4, let home = ProcessInfo.processInfo.environment["XDG_CONFIG_HOME"] else {
        fail("standard-reset <key> <value> with XDG_CONFIG_HOME set")
    }
    requireConfigHome(home)
    let first = Defaults.standard
    guard first === Defaults.standard else { fail("standard is not shared") }
    first.addSuite(named: "com.example.suite")
    first.set(arguments[3], forKey: arguments[2])
    Defaults.resetStandardUserDefaults()
    let second = Defaults.standard
    guard second !== first else { fail("resetStandardUserDefaults kept the old store") }
    guard !second.searchList.contains("com.example.suite") else { fail("the new store kept the old search list") }
    print(second.configuration.applicationDomain)
    fflush(nil)
    // _exit skips atexit handlers: the value must already be on disk because reset synchronized.
    _exit(second.string(forKey: arguments[2]) == arguments[3] ? 0 : 3)

case "write-sequence":
    guard arguments.count == 6, let count = Int(arguments[5]) else {
        fail("write-sequence <dir> <domain> <key> <count>")
    }
    let defaults = store(arguments[2], arguments[3])
    for value in 1...max(1, count) {
        defaults.set(value, forKey: arguments[4])
        defaults.synchronize()
    }
    exit(0)

case "write-string":
    guard arguments.count == 6 else { fail("write-string <dir> <domain> <key> <value>") }
    let defaults = store(arguments[2], arguments[3])
    defaults.set(arguments[5], forKey: arguments[4])
    exit(defaults.synchronize() ? 0 : 1)

case "write-after-input":
    guard arguments.count == 6 else { fail("write-after-input <dir> <domain> <key> <value>") }
    let defaults = store(arguments[2], arguments[3])
    _ = defaults.dictionaryRepresentation()
    print("ready")
    fflush(nil)
    _ = readLine()
    defaults.set(arguments[5], forKey: arguments[4])
    exit(defaults.synchronize() ? 0 : 1)

case "await-value":
    guard arguments.count == 6 else { fail("await-value <dir> <domain> <key> <value>") }
    let defaults = store(arguments[2], arguments[3])
    let key = arguments[4]
    let expected = PropertyList.string(arguments[5])
    let seen = DispatchSemaphore(value: 0)
    // Detached: top-level code runs on the main actor, whose thread waits on the semaphore below.
    let task = Task.detached {
        for await value in defaults.updates(forKey: key) where value == expected {
            seen.signal()
            return
        }
    }
    print("ready")
    fflush(nil)
    let result = seen.wait(timeout: .now() + 20)
    task.cancel()
    print(result == .success ? "seen" : "timeout")
    fflush(nil)
    exit(result == .success ? 0 : 1)

case "validate":
    guard arguments.count == 5, let limit = Int(arguments[4]) else { fail("validate <dir> <domain> <limit>") }
    var configuration = Defaults.Configuration.rooted(at: arguments[2], applicationDomain: arguments[3])
    configuration.errorHandler = { error in FileHandle.standardError.write(Data("error: \(error)\n".utf8)) }
    let minPool = DefaultsKey<Int>("MinPool", default: 1)
    let maxPool = DefaultsKey<Int>("MaxPool", default: 10)
    struct RuleBroken: Error, CustomStringConvertible { var description: String }
    // Given with the configuration: the first read already comes from a version the rule accepts.
    configuration.validators = [
        { candidate in
            guard candidate[minPool] <= candidate[maxPool] else {
                throw RuleBroken(description: "MinPool \(candidate[minPool]) is above MaxPool \(candidate[maxPool])")
            }
            guard candidate[maxPool] <= limit else {
                throw RuleBroken(description: "MaxPool \(candidate[maxPool]) is above this program's limit of \(limit)")
            }
        }
    ]
    let defaults: Defaults
    do { defaults = try Defaults(configuration: configuration) } catch { fail("\(error)") }
    // The first thing it serves, read before anything else can happen (a refused value must never show, not
    // once), and told after "ready", the line every test reads first.
    let serving: @Sendable () -> String = { "MinPool \(defaults[minPool]) MaxPool \(defaults[maxPool])" }
    let first = serving()
    // Said once the program is listed by `defaults readers` (its announcement written).
    Defaults.waitUntilRecordsAreWritten()
    print("ready")
    print("first \(first)")
    fflush(nil)
    // What the program serves, for each line read, until standard input ends (or the test kills it). A line
    // "=<what>" first waits (on the store's changes, 30 s at most) until it serves <what>.
    while let line = readLine() {
        if line.hasPrefix("=") {
            let wanted = String(line.dropFirst())
            let reached = DispatchSemaphore(value: 0)
            let changes = defaults.changes().makeAsyncIterator()
            let waiting = Task.detached {
                var changes = changes
                while serving() != wanted {
                    guard await changes.next() != nil else { return }
                }
                reached.signal()
            }
            _ = reached.wait(timeout: .now() + 30)
            waiting.cancel()
        }
        print(serving())
        fflush(nil)
    }
    exit(0)

case "env-reader":
    guard arguments.count == 5 else { fail("env-reader <dir> <domain> <prefix>") }
    var configuration = Defaults.Configuration.rooted(at: arguments[2], applicationDomain: arguments[3])
    configuration.environmentPrefix = arguments[4]
    configuration.errorHandler = { error in FileHandle.standardError.write(Data("error: \(error)\n".utf8)) }
    let defaults: Defaults
    do { defaults = try Defaults(configuration: configuration) } catch { fail("\(error)") }
    // Said once the program is listed by `defaults readers`, with the keys its environment pins.
    Defaults.waitUntilRecordsAreWritten()
    print("ready")
    fflush(nil)
    // For each line read (a key), the key's value and where it comes from, until standard input ends.
    while let key = readLine() {
        let value =
            defaults.value(forKey: key).map { $0.openStepText().split(separator: "\n").joined(separator: " ") }
            ?? "(none)"
        print("\(key) = \(value) from \(defaults.source(ofKey: key).map { "\($0)" } ?? "nowhere")")
        fflush(nil)
    }
    exit(0)

case "typed-read":
    guard arguments.count == 5, let count = Int(arguments[4]) else { fail("typed-read <dir> <domain> <n>") }
    let defaults = store(arguments[2], arguments[3])
    let key = DefaultsKey<Int>("RateLimit", default: 100)
    for _ in 0..<count { print(defaults[key]) }
    exit(0)

case "publish-schema":
    guard arguments.count == 3 else { fail("publish-schema <domain>") }
    let environment = ProcessInfo.processInfo.environment
    // A home the test gave (`HOME` not the user database's) is not the real one either.
    guard let config = environment["XDG_CONFIG_HOME"],
        environment["XDG_DATA_HOME"]?.isEmpty == false || environment["LIVEDEFAULTS_SCHEMA_PATH"]?.isEmpty == false
            || environment["HOME"].map({ $0 != NSHomeDirectory() }) == true
    else {
        fail(
            "publish-schema needs XDG_CONFIG_HOME and XDG_DATA_HOME, LIVEDEFAULTS_SCHEMA_PATH or a HOME of its own"
                + " (never the real home)")
    }
    let defaults: Defaults
    do {
        defaults = try Defaults(
            configuration: .init(
                locations: DefaultsLocations(userDirectory: config), applicationDomain: arguments[2], arguments: [],
                languages: []))
    } catch { fail("\(error)") }
    do {
        for path in try defaults.publishSchema(for: ExampleKeys.all) { print(path) }
    } catch { fail("\(error)") }
    exit(0)

case "typed-watch":
    guard arguments.count == 5, let count = Int(arguments[4]) else { fail("typed-watch <dir> <domain> <n>") }
    var configuration = Defaults.Configuration.rooted(at: arguments[2], applicationDomain: arguments[3])
    configuration.errorHandler = { error in FileHandle.standardError.write(Data("error: \(error)\n".utf8)) }
    let defaults: Defaults
    do { defaults = try Defaults(configuration: configuration) } catch { fail("\(error)") }
    let done = DispatchSemaphore(value: 0)
    // Detached: top-level code is the main actor's, and the main thread waits below.
    let task = Task.detached {
        var seen = 0
        for await value in defaults.updates(ExampleKeys.rateLimit) {
            print(value)
            fflush(nil)
            if seen == 0 {
                print("ready")
                fflush(nil)
            }
            seen += 1
            if seen == count { break }
        }
        done.signal()
    }
    let finished = done.wait(timeout: .now() + 30)
    task.cancel()
    exit(finished == .success ? 0 : 1)

case "hygiene":
    guard arguments.count == 5, let count = Int(arguments[4]), count > 0 else { fail("hygiene <xdg> <kind> <count>") }
    requireConfigHome(arguments[2])
    await hygiene(kind: arguments[3], count: count)

case "machine-trace":
    // A seed's run on a simulated machine, its trace printed: three processes with stores of four suites each,
    // writing, another program rewriting a file in place, settled round after round.
    guard arguments.count == 3, let seed = UInt64(arguments[2]) else { fail("machine-trace <seed>") }
    let machine = SimulatedMachine(seed: seed)
    let suites = (0..<4).map { "com.example.trace\($0)" }
    let stores = ["a", "b", "c"].flatMap { name in suites.compactMap { machine.process(name).defaults(suiteName: $0) } }
    guard stores.count == 12 else { fail("no store") }
    for round in 0..<20 {
        for (index, store) in stores.enumerated() where index % 3 != 2 { store.set(round, forKey: "K\(index % 3)") }
        if round % 5 == 0 {
            machine.write(
                try PropertyList.dictionary(["C": .integer(round)]).encoded(as: .binary),
                to: "\(machine.userDirectory)/\(suites[round % 4]).plist", as: .inPlace)
        }
        machine.settleNow()
        for (index, store) in stores.enumerated() where index % 3 == 2 { _ = store.dictionaryRepresentation() }
    }
    print(machine.trace.joined(separator: "\n"))
    exit(0)

case "print-arguments":
    let parsed = Defaults.parseArguments(Array(arguments.dropFirst(2)))
    print(PropertyList.dictionary(parsed))
    exit(0)

default:
    fail("unknown mode \(arguments[1])")
}
