import Foundation
import PlistOracle
import Synchronization
import TestProcesses
import Testing

@testable import LiveDefaults
import LiveDefaultsTesting

@Suite("Domains and the search list, as the seeds describe them", .blockingWork)
struct SearchListTests {
    @Test("The search list: arguments, application, suites, global, languages, registration")
    func order() throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store("com.example.app", languages: ["de_DE", "de"])
        defaults.addSuite(named: "com.example.shared")
        #expect(
            defaults.searchList == [
                "NSArgumentDomain", "com.example.app", "com.example.shared", "NSGlobalDomain", "de_DE", "de",
                "NSRegistrationDomain",
            ])
        defaults.removeSuite(named: "com.example.shared")
        #expect(!defaults.searchList.contains("com.example.shared"))
    }

    @Test("The first domain that has a key wins")
    func precedence() throws {
        let directory = TemporaryDirectory()
        try directory.write(".GlobalPreferences.plist", try Self.xml(["Key": "global", "OnlyGlobal": "g"]))
        try directory.write("com.example.suite.plist", try Self.xml(["Key": "suite", "OnlySuite": "s"]))
        let defaults = try directory.store("com.example.app", arguments: ["-Key", "argument"], languages: ["fr"])
        defaults.register(defaults: ["Key": "registered", "OnlyRegistered": "r"] as [String: PropertyList])
        try defaults.trySetVolatileDomain(
            ["Key": "language", "OnlyLanguage": "l"] as [String: PropertyList], forName: "fr")
        #expect(defaults.string(forKey: "Key") == "argument")
        #expect(defaults.string(forKey: "OnlyGlobal") == "g")
        #expect(defaults.string(forKey: "OnlySuite") == nil)
        defaults.addSuite(named: "com.example.suite")
        #expect(defaults.string(forKey: "OnlySuite") == "s")
        #expect(defaults.string(forKey: "OnlyLanguage") == "l")
        #expect(defaults.string(forKey: "OnlyRegistered") == "r")

        let withoutArguments = try directory.store("com.example.app", languages: ["fr"])
        withoutArguments.register(defaults: ["Key": "registered"] as [String: PropertyList])
        #expect(withoutArguments.string(forKey: "Key") == "global")
        withoutArguments.addSuite(named: "com.example.suite")
        #expect(withoutArguments.string(forKey: "Key") == "suite")
        withoutArguments.set("application", forKey: "Key")
        #expect(withoutArguments.string(forKey: "Key") == "application")
        withoutArguments.removeObject(forKey: "Key")
        #expect(withoutArguments.string(forKey: "Key") == "suite")

        let all = withoutArguments.dictionaryRepresentation()
        #expect(all["Key"] as? String == "suite")
        #expect(all["OnlyGlobal"] as? String == "g")
        #expect(all["OnlySuite"] as? String == "s")
    }

    @Test("Arguments: -Key value pairs, values starting like a plist parsed as old-style")
    func arguments() throws {
        let parsed = Defaults.parseArguments([
            "positional", "-Numbers", "(1, 2)", "-Name", "A B", "-Flag", "YES", "-Dict", "{ a = 1; }",
            "-Lone", "-Quoted", "\"q\"", "-Broken", "(1,", "-Data", "<0aff>", "-Last",
        ])
        #expect(
            parsed == [
                "Numbers": ["1", "2"], "Name": "A B", "Flag": "YES", "Dict": ["a": "1"], "Quoted": "q", "Broken": "(1,",
                "Data": .data(Data([0x0A, 0xFF])),
            ])
        let directory = TemporaryDirectory()
        let defaults = try directory.store(arguments: ["-Flag", "YES", "-Limit", "12"])
        #expect(defaults.bool(forKey: "Flag"))
        #expect(defaults.integer(forKey: "Limit") == 12)
        #expect(defaults.volatileDomain(forName: "NSArgumentDomain")["Limit"] as? String == "12")
        // Arguments shadow writes, and are never written.
        defaults.set(99, forKey: "Limit")
        #expect(defaults.integer(forKey: "Limit") == 12)
        #expect(defaults.persistentDomainValues(forName: "com.example.test")?["Limit"] == 99)
    }

    @Test("Arguments read from bytes agree with Character and CharacterSet rules on tricky text")
    func argumentsAgreeWithCharacterRules() {
        // The reading before bytes were used for the common case: Characters, and Foundation's trimming.
        func reference(_ arguments: [String]) -> [String: PropertyList] {
            var result: [String: PropertyList] = [:]
            var index = 0
            while index + 1 < arguments.count {
                let (current, next) = (arguments[index], arguments[index + 1])
                guard current.hasPrefix("-"), current.count > 1, !next.hasPrefix("-") else {
                    index += 1
                    continue
                }
                let value = next.trimmingCharacters(in: .whitespacesAndNewlines)
                if let first = value.first, "{([<\"".contains(first), let parsed = try? PropertyList(parsing: value) {
                    result[String(current.dropFirst())] = parsed
                } else {
                    result[String(current.dropFirst())] = .string(value)
                }
                index += 2
            }
            return result
        }
        let texts = [
            "-", "-a", "-\u{301}x", "-\u{301}", "-é", "-\r\n", "\r\n", "x", "", " ", " v ", "\u{A0}v\u{A0}",
            "v\u{2003}",
            "\tv\n", "(1, 2)", "(\u{301}1)", "\"q\"", "\"\u{301}q\"", "{ a = 1; }", "<0aff>", "[x]", "-(1)", "é", "--x",
        ]
        for first in texts {
            for second in texts {
                for third in ["-Key", "value", "-\u{301}"] {
                    let arguments = [first, second, third, first]
                    #expect(Defaults.parseArguments(arguments) == reference(arguments), "\(arguments)")
                }
            }
        }
        // Random arguments from the characters the byte reading decides on and those it leaves to Characters.
        let pieces = [
            "-", "-", "a", "K", " ", "\t", "\r", "\n", "\u{A0}", "\u{2003}", "\u{301}", "é", "(", "{", "[", "<",
            "\"", ")", "1", ",", "=", ";",
        ]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let arguments = (0..<Int.random(in: 0...5, using: &generator)).map { _ in
                (0..<Int.random(in: 0...6, using: &generator)).map { _ in pieces.randomElement(using: &generator)! }
                    .joined()
            }
            #expect(Defaults.parseArguments(arguments) == reference(arguments), "\(arguments)")
            _ = Defaults.Configuration.preferredLanguages(lookup: { _ in arguments.joined(separator: ":") })
        }
    }

    @Test("The process's own arguments reach a real process's argument domain")
    func processArguments() throws {
        let (status, output) = try runHelper(["print-arguments", "-Numbers", "(1, 2)", "-Name", "A B", "-Flag", "YES"])
        #expect(status == 0)
        let printed = try PropertyList(parsing: output)
        #expect(printed == ["Numbers": ["1", "2"], "Name": "A B", "Flag": "YES"])
    }

    @Test("Registration: last in the search list, never persisted, merged on repeat")
    func registration() throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store()
        defaults.register(defaults: ["A": 1, "B": "two"] as [String: Any])
        defaults.register(defaults: ["B": "three"] as [String: PropertyList])
        #expect(defaults.integer(forKey: "A") == 1)
        #expect(defaults.string(forKey: "B") == "three")
        defaults.set(5, forKey: "A")
        #expect(defaults.integer(forKey: "A") == 5)
        defaults.removeObject(forKey: "A")
        #expect(defaults.integer(forKey: "A") == 1)
        defaults.synchronize()
        #expect(defaults.persistentDomain(forName: "com.example.test")?["B"] == nil)
        #expect(!FileManager.default.fileExists(atPath: directory.file("NSRegistrationDomain.plist")))
    }

    @Test("Volatile domains: created once, read, removed, listed; a language domain is searched")
    func volatileDomains() throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store(languages: ["pt"])
        try defaults.trySetVolatileDomain(["Greeting": "Olá"] as [String: PropertyList], forName: "pt")
        #expect(throws: DefaultsError.volatileDomainExists("pt")) {
            try defaults.trySetVolatileDomain(["Greeting": "Oi"] as [String: PropertyList], forName: "pt")
        }
        #expect(defaults.string(forKey: "Greeting") == "Olá")
        #expect(defaults.volatileDomain(forName: "pt")["Greeting"] as? String == "Olá")
        #expect(defaults.volatileDomainNames == ["NSArgumentDomain", "NSRegistrationDomain", "pt"])
        // A volatile domain not in the search list is kept but not searched.
        defaults.setVolatileDomain(["Hidden": true] as [String: Any], forName: "scratch")
        #expect(defaults.object(forKey: "Hidden") == nil)
        #expect(defaults.volatileDomain(forName: "scratch")["Hidden"] as? Bool == true)
        defaults.removeVolatileDomain(forName: "pt")
        #expect(defaults.string(forKey: "Greeting") == nil)
        #expect(defaults.volatileDomain(forName: "pt").isEmpty)
        // A value with no property-list form: reported, nothing made.
        defaults.setVolatileDomain(["Bad": NSObject()] as [String: Any], forName: "other")
        #expect(defaults.lastError?.code == .notAPropertyList)
        #expect(!defaults.volatileDomainNames.contains("other"))
    }

    @Test("Preferred languages come from LANGUAGE, else LC_ALL, LC_MESSAGES, LANG")
    func languages() {
        typealias Configuration = Defaults.Configuration
        #expect(
            Configuration.preferredLanguages(environment: ["LANGUAGE": "fr_CA:en", "LANG": "de_DE.UTF-8"])
                == ["fr_CA", "fr", "en", "de_DE", "de"])
        #expect(Configuration.preferredLanguages(environment: ["LANG": "de_DE.UTF-8"]) == ["de_DE", "de"])
        #expect(Configuration.preferredLanguages(environment: ["LC_ALL": "C", "LANG": "de_DE"]) == [])
        #expect(Configuration.preferredLanguages(environment: ["LANG": "sr_RS@latin"]) == ["sr_RS", "sr"])
        #expect(Configuration.preferredLanguages(environment: [:]) == [])
        // Empty parts and repeats of LANGUAGE are passed over; POSIX names none; a dash ends the language too.
        #expect(
            Configuration.preferredLanguages(environment: ["LANGUAGE": "::fr:POSIX:fr::pt-BR", "LC_ALL": "C.UTF-8"])
                == ["fr", "pt-BR", "pt"])
        #expect(Configuration.preferredLanguages(environment: ["LANG": "C.UTF-8"]) == [])
        #expect(Configuration.preferredLanguages(environment: ["LANG": ".UTF-8"]) == [])
        #expect(Configuration.preferredLanguages(environment: ["LANG": "_x"]) == ["_x"], "an empty language is skipped")
        #expect(Configuration.preferredLanguages(environment: ["LANG": "\u{E9}l_GR"]) == ["\u{E9}l_GR", "\u{E9}l"])
        #expect(Configuration.preferredLanguages(environment: ["LC_MESSAGES": "..", "LANG": "de"]) == [])
    }

    @Test("The default languages read the same four variables as ProcessInfo's environment gives")
    func languageEnvironment() {
        let environment = ProcessInfo.processInfo.environment
        let expected = environment.filter { ["LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG"].contains($0.key) }
        #expect(Defaults.Configuration.languageEnvironment == expected)
        #expect(
            Defaults.Configuration.preferredLanguages()
                == Defaults.Configuration.preferredLanguages(environment: environment))
        #expect(
            Defaults.Configuration.processLanguages
                == Defaults.Configuration.preferredLanguages(environment: environment))
    }

    @Test("getenv through a name's own bytes: short and long names, a one-scalar name, an unset one")
    func environmentValues() {
        let environment = ProcessInfo.processInfo.environment
        // Names of up to 15 bytes are the ones a String would have held inline, with no NUL after them.
        #expect(Environment.value("HOME") == environment["HOME"])
        #expect(Environment.value("PATH") == environment["PATH"])
        #expect(Environment.value("XDG_CONFIG_HOME") == environment["XDG_CONFIG_HOME"])
        #expect(Environment.value("LIVEDEFAULTS_MANAGED_DIRECTORY") == environment["LIVEDEFAULTS_MANAGED_DIRECTORY"])
        #expect(Environment.value(StaticString(unicodeScalarLiteral: "_")) == environment["_"])
        #expect(Environment.value("LIVEDEFAULTS_SURELY_UNSET_VARIABLE_4711") == nil)
    }

    @Test("Persistent domains: names, contents, replace, remove")
    func persistentDomains() throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store()
        #expect(defaults.persistentDomain(forName: "com.example.other") == nil)
        try defaults.trySetPersistentDomain(["X": 1, "Y": "y"], forName: "com.example.other")
        #expect(defaults.persistentDomain(forName: "com.example.other")?["X"] as? Int == 1)
        defaults.setPersistentDomain(["Z": true] as [String: Any], forName: "com.example.third")
        defaults.set(1, forKey: "Own")
        defaults.set(2, forKey: "G")
        defaults.synchronize()
        #expect(defaults.persistentDomainNames == ["com.example.other", "com.example.test", "com.example.third"])
        try defaults.trySetPersistentDomain(["Q": 1], forName: NSGlobalDomainName)
        defaults.synchronize()
        #expect(defaults.persistentDomainNames.contains("NSGlobalDomain"))
        #expect(FileManager.default.fileExists(atPath: directory.file(".GlobalPreferences.plist")))
        #expect(defaults.integer(forKey: "Q") == 1)

        // A domain another store uses sees the replacement at once.
        let other = try directory.store("com.example.other")
        #expect(other.integer(forKey: "X") == 1)
        try defaults.trySetPersistentDomain(["X": 2], forName: "com.example.other")
        #expect(other.integer(forKey: "X") == 2)
        #expect(other.string(forKey: "Y") == nil)

        defaults.removePersistentDomain(forName: "com.example.other")
        defaults.synchronize()
        #expect(defaults.persistentDomain(forName: "com.example.other") == nil)
        #expect(!FileManager.default.fileExists(atPath: directory.file("com.example.other.plist")))
        #expect(other.object(forKey: "X") == nil)
        #expect(!defaults.persistentDomainNames.contains("com.example.other"))
    }

    @Test("Per-host and any-user layers: ByHost beats the user file, which beats any-user files")
    func layers() throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store("com.example.layers")
        let locations = defaults.configuration.locations
        #expect(
            locations.path(forDomain: "com.example.layers", layer: .currentUserCurrentHost)
                == directory.path + "/ByHost/com.example.layers..plist")
        #expect(
            locations.path(forDomain: "NSGlobalDomain", layer: .anyUser)
                == directory.path + "/AnyUser/.GlobalPreferences.plist")
        try defaults.trySet("any-user", forKey: "K", inDomain: "com.example.layers", layer: .anyUser)
        #expect(defaults.string(forKey: "K") == "any-user")
        try defaults.trySet("any-user-host", forKey: "K", inDomain: "com.example.layers", layer: .anyUserCurrentHost)
        #expect(defaults.string(forKey: "K") == "any-user-host")
        defaults.set("user", forKey: "K")
        #expect(defaults.string(forKey: "K") == "user")
        try defaults.trySet("host", forKey: "K", inDomain: "com.example.layers", layer: .currentUserCurrentHost)
        #expect(defaults.string(forKey: "K") == "host")
        defaults.synchronize()
        for layer in [PreferenceLayer.anyUser, .anyUserCurrentHost, .currentUser, .currentUserCurrentHost] {
            #expect(
                FileManager.default.fileExists(atPath: locations.path(forDomain: "com.example.layers", layer: layer)))
        }
        // A fresh store reads all four layers from disk in the same order.
        let fresh = try directory.store("com.example.layers")
        #expect(fresh.string(forKey: "K") == "host")
        try fresh.trySet(nil, forKey: "K", inDomain: "com.example.layers", layer: .currentUserCurrentHost)
        #expect(fresh.string(forKey: "K") == "user")
        #expect(defaults.string(forKey: "K") == "user")
    }

    @Test("Forced keys: an administrator's value wins and refuses writes")
    func forcedKeys() throws {
        let directory = TemporaryDirectory()
        try FileManager.default.createDirectory(
            atPath: directory.file("Managed/\(DefaultsLocations.currentUserName)"), withIntermediateDirectories: true)
        try directory.write("Managed/com.example.managed.plist", try Self.xml(["Locked": 5]))
        try directory.write(
            "Managed/\(DefaultsLocations.currentUserName)/.GlobalPreferences.plist", try Self.xml(["GlobalLock": "on"]))
        try directory.write("com.example.managed.plist", try Self.xml(["Locked": 1, "Free": 1]))
        let errors = Lock<[DefaultsError]>([])
        var configuration = Defaults.Configuration.rooted(
            at: directory.path, applicationDomain: "com.example.managed", arguments: ["-Locked", "7"])
        configuration.errorHandler = { error in errors.withLock { $0.append(error) } }
        let defaults = try Defaults(configuration: configuration)
        #expect(defaults.integer(forKey: "Locked") == 5, "forced values win even over arguments")
        #expect(defaults.objectIsForced(forKey: "Locked"))
        #expect(defaults.objectIsForced(forKey: "Locked", inDomain: "com.example.managed"))
        #expect(!defaults.objectIsForced(forKey: "Locked", inDomain: "com.example.elsewhere"))
        #expect(!defaults.objectIsForced(forKey: "Free"))
        #expect(defaults.objectIsForced(forKey: "GlobalLock"))
        #expect(defaults.string(forKey: "GlobalLock") == "on")

        #expect(throws: DefaultsError.forcedKey(key: "Locked", domain: "com.example.managed")) {
            try defaults.trySet(9, forKey: "Locked")
        }
        defaults.set(9, forKey: "Locked")
        #expect(defaults.integer(forKey: "Locked") == 5)
        #expect(errors.withLock { $0 } == [.forcedKey(key: "Locked", domain: "com.example.managed")])
        #expect(defaults.lastError == .forcedKey(key: "Locked", domain: "com.example.managed"))
        defaults.set(2, forKey: "Free")
        defaults.synchronize()
        #expect(try pythonPlist(directory.file("com.example.managed.plist")) == #"{"Free": 2, "Locked": 1}"#)
    }

    @Test("Layers whose directories are missing at open are read as empty, and found when they appear")
    func layerDirectoriesMissingAtOpen() async throws {
        let directory = TemporaryDirectory()
        let domain = "com.example.latelayers"
        try directory.write("\(domain).plist", try Self.xml(["K": "user"]))
        // Watched: every layer's directory created after the open, the highest layer last.
        let defaults = try directory.store(domain)
        #expect(defaults.string(forKey: "K") == "user")
        let locations = DefaultsLocations.rooted(at: directory.path)
        for (layer, value) in [
            (PreferenceLayer.anyUser, "anyUser"), (.anyUserCurrentHost, "anyUserHost"),
            (.currentUserCurrentHost, "host"), (.managed, "managed"), (.managedUser, "managedUser"),
        ] {
            let path = locations.path(forDomain: domain, layer: layer)
            try FileManager.default.createDirectory(
                atPath: PathComponents.directory(of: path), withIntermediateDirectories: true)
            try Self.xml(["K": .string(value), value: true]).write(toFile: path, atomically: true, encoding: .utf8)
            #expect(await waitForValue(defaults, value, timeout: .seconds(10)) { $0 == true }, "\(layer) is read")
        }
        #expect(defaults.string(forKey: "K") == "managedUser")
        // Unwatched: the files are there at the next open, and synchronize() finds a layer that appears later.
        var configuration = Defaults.Configuration.rooted(at: directory.path, applicationDomain: domain)
        configuration.watching = .off
        let unwatched = try Defaults(configuration: configuration)
        #expect(unwatched.string(forKey: "K") == "managedUser")
        let other = TemporaryDirectory()
        try other.write("\(domain).plist", try Self.xml(["K": "user"]))
        var otherConfiguration = Defaults.Configuration.rooted(at: other.path, applicationDomain: domain)
        otherConfiguration.watching = .off
        let late = try Defaults(configuration: otherConfiguration)
        #expect(late.string(forKey: "K") == "user")
        try FileManager.default.createDirectory(atPath: other.file("AnyUser/ByHost"), withIntermediateDirectories: true)
        try Self.xml(["Late": true]).write(
            toFile: other.file("AnyUser/ByHost/\(domain)..plist"), atomically: true, encoding: .utf8)
        #expect(!late.bool(forKey: "Late"))
        late.synchronize()
        #expect(late.bool(forKey: "Late"))
    }

    @Test("Invalid domain names are refused and never reach the file system")
    func invalidNames() throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store()
        let bad = ["", ".", "..", "../escape", "a/b", ".hidden", "nul\u{0}byte", String(repeating: "x", count: 256)]
        for name in bad {
            #expect(throws: DefaultsError.self, "\(name.debugDescription)") { try DomainName.validate(name) }
            #expect(throws: DefaultsError.self) { try defaults.trySetPersistentDomain(["A": 1], forName: name) }
            #expect(throws: DefaultsError.self) {
                try defaults.trySet(1, forKey: "A", inDomain: name, layer: .currentUser)
            }
            #expect(Defaults(suiteName: name, locations: .rooted(at: directory.path)) == nil)
            #expect(defaults.persistentDomainValues(forName: name) == nil)
        }
        #expect(throws: DefaultsError.self) {
            try Defaults(configuration: .rooted(at: directory.path, applicationDomain: "../x"))
        }
        #expect(Defaults(suiteName: "NSGlobalDomain", locations: .rooted(at: directory.path)) == nil)
        defaults.addSuite(named: "../up")
        #expect(!defaults.searchList.contains("../up"))
        defaults.synchronize()
        let parent = (directory.path as NSString).deletingLastPathComponent
        #expect(!FileManager.default.fileExists(atPath: parent + "/escape.plist"))
        #expect(!FileManager.default.fileExists(atPath: parent + "/up.plist"))
        do {
            try DomainName.validate("a/b")
        } catch {
            #expect("\(error)".contains("a/b") && "\(error)".contains("/"))
        }
    }

    @Test("A value that is not a property list is refused with an error naming the key")
    func notAPropertyList() throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store()
        #expect(throws: DefaultsError.self) { try defaults.trySet(NSObject(), forKey: "Object") }
        #expect(throws: DefaultsError.self) { try defaults.trySet([1: "x"], forKey: "IntKeys") }
        #expect(throws: DefaultsError.self) { try defaults.trySet(["ok", NSObject()] as [Any], forKey: "Nested") }
        do {
            try defaults.trySet(NSObject(), forKey: "Object")
        } catch {
            #expect("\(error)".contains("\"Object\""))
        }
        defaults.set(NSObject(), forKey: "Object")
        #expect(defaults.object(forKey: "Object") == nil)
        if let error = defaults.lastError, error.code == .notAPropertyList {
            #expect(error.key == "Object")
        } else {
            Issue.record("lastError is \(String(describing: defaults.lastError))")
        }
        try defaults.trySet([1, "a", 2.5, true] as [Any], forKey: "Mixed")
        #expect(defaults.value(forKey: "Mixed") == [1, "a", 2.5, true])
    }

    @Test("didChangeNotification is posted after a persistent domain changes, once per burst, not for volatile ones")
    func notification() async throws {
        // On the simulated machine: a post waits on the store's clock, and a settle lets it pass and delivers it.
        let machine = SimulatedMachine(seed: 11)
        let defaults = try #require(machine.process("app").defaults(suiteName: "com.example.notified"))
        let count = Lock(0)
        let seen = Lock(0)
        let observer = NotificationCenter.default.addObserver(
            forName: Defaults.didChangeNotification, object: defaults, queue: nil
        ) { _ in
            count.withLock { $0 += 1 }
            seen.withLock { $0 = defaults.integer(forKey: "A") }
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        defaults.set(1, forKey: "A")
        await machine.settle()
        #expect(count.withLock { $0 } == 1)
        defaults.set(1, forKey: "A")
        await machine.settle()
        #expect(count.withLock { $0 } == 1, "an unchanged value posts nothing")
        for value in 2...50 { defaults.set(value, forKey: "A") }
        await machine.settle()
        #expect(count.withLock { $0 } <= 50, "never more posts than changes (a burst may share one)")
        #expect(seen.withLock { $0 } == 50, "a post always follows the last change")
        let before = count.withLock { $0 }
        try defaults.trySetPersistentDomain(["G": 1], forName: "NSGlobalDomain")
        await machine.settle()
        #expect(count.withLock { $0 } == before + 1)
        defaults.register(defaults: ["R": 1] as [String: PropertyList])
        await machine.settle()
        #expect(count.withLock { $0 } == before + 1)
    }

    @Test("Suites: init(suiteName:) writes to the suite; the global domain is not a suite")
    func suites() throws {
        let directory = TemporaryDirectory()
        let suite = try #require(Defaults(suiteName: "group.example.shared", locations: .rooted(at: directory.path)))
        suite.set("s", forKey: "Shared")
        suite.synchronize()
        #expect(try pythonPlist(directory.file("group.example.shared.plist")) == #"{"Shared": "s"}"#)
        let app = try directory.store("com.example.app")
        #expect(app.string(forKey: "Shared") == nil)
        app.addSuite(named: "group.example.shared")
        app.addSuite(named: "group.example.shared")
        #expect(app.searchList.filter { $0 == "group.example.shared" }.count == 1)
        #expect(app.string(forKey: "Shared") == "s")
        suite.set("t", forKey: "Shared")
        #expect(app.string(forKey: "Shared") == "t")
    }

    @Test("init?(user:) opens the current user's defaults and refuses unknown users")
    func otherUser() throws {
        #expect(Defaults(user: "no-such-user-\(UUID().uuidString.prefix(8))") == nil)
        let me = try #require(Defaults(user: NSUserName()))
        #expect(me.configuration.locations.userDirectory.hasSuffix("/.config"))
        if getuid() != 0 {
            #expect(Defaults(user: "root") == nil, "a normal user cannot read root's defaults")
        }
    }

    @Test("resetStandardUserDefaults() writes pending changes and forgets the shared search list")
    func resetStandard() throws {
        let directory = TemporaryDirectory()
        let (status, output) = try runHelper(
            ["standard-reset", "Color", "blue"], environment: ["XDG_CONFIG_HOME": directory.path])
        #expect(status == 0)
        let domain = output.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(domain == "LiveDefaultsTestHelper")
        #expect(try pythonPlist(directory.file("LiveDefaultsTestHelper.plist")) == #"{"Color": "blue"}"#)
    }

    static func xml(_ values: [String: PropertyList]) throws -> String {
        String(decoding: try PropertyList.dictionary(values).encoded(as: .xml), as: UTF8.self)
    }
}

private let NSGlobalDomainName = Defaults.globalDomain
