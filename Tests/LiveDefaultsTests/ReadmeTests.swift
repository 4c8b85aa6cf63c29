import Foundation
import Testing

@testable import LiveDefaults

/// The README's tour, compiled and run against a temporary directory, so that the first code a newcomer
/// reads keeps working.
@Suite("README tour")
struct ReadmeTests {
    @Test("The tour's calls compile and behave as the README says")
    func tour() throws {
        let directory = TemporaryDirectory()
        let defaults = try Defaults(configuration: .rooted(
            at: directory.path, applicationDomain: "myserver", arguments: ["-Verbose", "NO"]))
        defaults.register(defaults: ["RateLimit": 100, "Greeting": "Hello"])
        #expect(defaults.integer(forKey: "RateLimit") == 100)
        defaults.set(200, forKey: "RateLimit")
        #expect(defaults.integer(forKey: "RateLimit") == 200)
        #expect(defaults.bool(forKey: "Verbose") == false)
        #expect(defaults.searchList == ["NSArgumentDomain", "myserver", "NSGlobalDomain", "NSRegistrationDomain"])
        defaults.addSuite(named: "com.example.shared")
        try defaults.setValue(["a", "b"], forKey: "Tags")
        #expect(defaults.objectIsForced(forKey: "ProxyURL") == false)
        try defaults.setPersistentDomainContents(["Theme": "dark"], forName: "com.example.other")
        #expect(defaults.synchronize())
        #expect(defaults.persistentDomainNames == ["com.example.other", "myserver"])
    }
}
