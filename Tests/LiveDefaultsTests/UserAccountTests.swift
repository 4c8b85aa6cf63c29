import Foundation
import Synchronization
import Testing

@testable import LiveDefaults

/// The user database lookup behind `Defaults(user:)`: getpwnam_r, into buffers of its own.
@Suite("User accounts (getpwnam_r)")
struct UserAccountTests {
    @Test("root and the current user are found with their home and ids; unknown and malformed names are not")
    func lookups() throws {
        let root = try #require(UserAccount(named: "root"))
        #expect(root.uid == 0)
        #expect(root.home == "/root")
        let me = try #require(UserAccount(named: NSUserName()))
        #expect(me.uid == geteuid())
        #expect(UserAccount(named: "no-such-user-\(UUID().uuidString.prefix(8))") == nil)
        #expect(UserAccount(named: "") == nil)
        #expect(UserAccount(named: "ro\0ot") == nil)
    }

    @Test("lookups from many threads at once each see their own account")
    func concurrentLookups() throws {
        let names = ["root", NSUserName(), "no-such-user-x"]
        let expected = names.map { UserAccount(named: $0) }
        let mismatches = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            for round in 0..<300 {
                let index = (thread + round) % names.count
                if UserAccount(named: names[index]) != expected[index] { mismatches.add(1, ordering: .relaxed) }
            }
        }
        #expect(mismatches.load(ordering: .relaxed) == 0)
    }
}
