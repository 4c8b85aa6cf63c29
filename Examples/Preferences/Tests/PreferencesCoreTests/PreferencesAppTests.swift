import Foundation
import LiveDefaults
import PreferencesCore
import Synchronization
import Testing

@Suite("The preferences example")
struct PreferencesAppTests {
    /// A temporary directory for one test's files, removed when the test process exits (a local may be
    /// released right after its last use, long before the test is done with its files).
    final class Directory: Sendable {
        let path = NSTemporaryDirectory() + "preferences-example-\(UUID().uuidString)"
        static let all = Mutex<[(path: String, apps: [PreferencesApp])]>([])

        func app(_ arguments: [String] = []) throws -> PreferencesApp {
            let app = try PreferencesApp(locations: .rooted(at: path), arguments: arguments)
            let first = Self.all.withLock { all in
                all.append((path, [app]))
                return all.count == 1
            }
            if first {
                atexit {
                    // Pending writes first, or they would recreate the directories after they are gone.
                    for (path, apps) in Directory.all.withLock({ $0 }) {
                        for app in apps { app.defaults.synchronize() }
                        try? FileManager.default.removeItem(atPath: path)
                    }
                }
            }
            return app
        }
    }

    @Test("Registered defaults apply until a value is stored; launches are remembered between runs")
    func remembers() throws {
        let directory = Directory()
        let first = try directory.app()
        #expect(try first.run([]).hasPrefix("Hello, world!\nThis is launch number 1."))
        #expect(first.defaults.synchronize())
        let second = try directory.app()
        #expect(try second.run([]).contains("launch number 2"))
        _ = try second.run(["set", "Name", "Ada"])
        #expect(second.defaults.synchronize())
        let third = try directory.app()
        #expect(try third.run([]).hasPrefix("Hello, Ada!"))
        #expect(third.source(of: "Name") == PreferencesApp.domain)
        #expect(third.source(of: "Greeting") == "registered default")
        #expect(third.describe("Name") == "Ada  [com.example.preferences]")
        let fresh = try Directory().app()
        #expect(fresh.describe("Name") == "world  [key default]", "no domain has it: the key's default")
    }

    @Test("A -Key value argument wins for one run and is never stored")
    func argumentsOverride() throws {
        let directory = Directory()
        let app = try directory.app(["-Greeting", "Howdy", "-Shout", "YES"])
        #expect(try app.run([]).hasPrefix("HOWDY, WORLD!"))
        #expect(app.source(of: "Greeting") == "command line")
        #expect(app.defaults.synchronize())
        #expect(try directory.app().run([]).hasPrefix("Hello, world!"))
    }

    @Test("The shared suite shows through when the application domain has no value")
    func suite() throws {
        let directory = Directory()
        let app = try directory.app()
        _ = try app.run(["share", "Name", "Team"])
        #expect(app.defaults.string(forKey: "Name") == "Team")
        #expect(app.source(of: "Name") == PreferencesApp.sharedSuite)
        _ = try app.run(["set", "Name", "Ada"])
        #expect(app.defaults.string(forKey: "Name") == "Ada")
        #expect(try app.run(["remove", "Name"]).hasPrefix("Name is now Team  [com.example.shared]"))
        _ = try app.run(["reset"])
        #expect(app.defaults.synchronize())
        #expect(app.defaults.persistentDomain(forName: PreferencesApp.domain) == nil)
    }

    @Test("Values are parsed like defaults write: numbers, YES/NO, old-style arrays, strings")
    func values() throws {
        let directory = Directory()
        let app = try directory.app()
        _ = try app.run(["set", "Count", "42"])
        _ = try app.run(["set", "Shout", "yes"])
        _ = try app.run(["set", "Tags", "(a, b)"])
        _ = try app.run(["set", "Motto", "two words"])
        #expect(app.defaults.integer(forKey: "Count") == 42)
        #expect(app.defaults.bool(forKey: "Shout"))
        #expect(app.defaults.stringArray(forKey: "Tags") == ["a", "b"])
        #expect(app.defaults.string(forKey: "Motto") == "two words")
        #expect(try app.run(["bogus"]) == PreferencesApp.usage)
    }
}
