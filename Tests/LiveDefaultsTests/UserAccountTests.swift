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

/// The current user's name read from /etc/nsswitch.conf and /etc/passwd, only where NSS would say the same.
@Suite("User name from the user database's files")
struct UserDatabaseFilesTests {
    private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    @Test("the files give the same name as NSS (NSUserName) for this process's user")
    func agreesWithNSS() {
        let effective = geteuid()
        let user = effective != 0 ? effective : getuid()
        // On this machine NSS consults the files first; where it does not, the files give no answer.
        if let name = UserDatabaseFiles.userName(ofUser: user) {
            #expect(name == NSUserName())
        }
        #expect(UserDatabaseFiles.userName(ofUser: 0) == UserAccountTests.rootNameIfFilesFirst())
    }

    @Test("the current user's name: $USER, else the database's (kept for the id), as Foundation's NSUserName")
    func currentUserName() {
        let expected = ProcessInfo.processInfo.environment["USER"] ?? NSUserName()
        #expect(DefaultsLocations.currentUserName == expected)
        #expect(DefaultsLocations.currentUserName == expected, "the kept answer is the same")
    }

    @Test("nsswitch.conf: only a single passwd line whose first source is files, with no action after it")
    func switchRules() {
        #expect(UserDatabaseFiles.consultsFilesFirst(bytes("passwd:         files systemd\ngroup: files\n")))
        #expect(UserDatabaseFiles.consultsFilesFirst(bytes("# comment\n  passwd: files # trailing\n")))
        #expect(UserDatabaseFiles.consultsFilesFirst(bytes("passwd:files\n")))
        #expect(UserDatabaseFiles.consultsFilesFirst(bytes("passwd:\tfiles\tldap\n")))
        #expect(!UserDatabaseFiles.consultsFilesFirst(bytes("passwd: sss files\n")))
        #expect(!UserDatabaseFiles.consultsFilesFirst(bytes("passwd: compat\n")))
        #expect(!UserDatabaseFiles.consultsFilesFirst(bytes("passwd: files [SUCCESS=continue] ldap\n")))
        #expect(!UserDatabaseFiles.consultsFilesFirst(bytes("passwd: files\npasswd: ldap\n")))
        #expect(!UserDatabaseFiles.consultsFilesFirst(bytes("group: files\n")))
        #expect(!UserDatabaseFiles.consultsFilesFirst(bytes("passwd:\n")))
        #expect(!UserDatabaseFiles.consultsFilesFirst(bytes("#passwd: files\n")))
        #expect(!UserDatabaseFiles.consultsFilesFirst(bytes("shadow: files\npasswdx files\n")))
        #expect(!UserDatabaseFiles.consultsFilesFirst([]))
        #expect(!UserDatabaseFiles.consultsFilesFirst([0xFF, 0xFE, 0x00, 0x0A]))
    }

    @Test("passwd: the first line with the id wins; odd lines leave the answer to NSS")
    func passwdRules() {
        let file =
            "root:x:0:0:root:/root:/bin/bash\n# a comment\n\napp:x:1000:1000::/home/app:/bin/sh\ndup:x:1000:1000::/:\n"
        #expect(UserDatabaseFiles.name(ofUser: 0, inPasswd: bytes(file)) == "root")
        #expect(UserDatabaseFiles.name(ofUser: 1000, inPasswd: bytes(file)) == "app")
        #expect(UserDatabaseFiles.name(ofUser: 4242, inPasswd: bytes(file)) == nil)
        // Lines glibc might read differently: no answer at all.
        #expect(UserDatabaseFiles.name(ofUser: 0, inPasswd: bytes("root:x: 0:0::/:\n")) == nil)
        #expect(UserDatabaseFiles.name(ofUser: 0, inPasswd: bytes("root:x:0:0::/:\n+::::::\n")) == nil)
        #expect(UserDatabaseFiles.name(ofUser: 0, inPasswd: bytes("-bad\nroot:x:0:0::/:\n")) == nil)
        #expect(UserDatabaseFiles.name(ofUser: 0, inPasswd: bytes(":x:0:0::/:\n")) == nil)
        #expect(UserDatabaseFiles.name(ofUser: 0, inPasswd: bytes("root:x\n")) == nil)
        // The user's line must have a group id glibc reads; another line's does not matter.
        #expect(UserDatabaseFiles.name(ofUser: 0, inPasswd: bytes("root:x:0:\nroot2:x:0:0::/:\n")) == nil)
        #expect(UserDatabaseFiles.name(ofUser: 0, inPasswd: bytes("root:x:0\n")) == nil)
        #expect(UserDatabaseFiles.name(ofUser: 0, inPasswd: bytes("root:x:0:g::/:\n")) == nil)
        #expect(UserDatabaseFiles.name(ofUser: 0, inPasswd: bytes("a:x:5:g::/:\nroot:x:0:0\n")) == "root")
        #expect(UserDatabaseFiles.name(ofUser: 0, inPasswd: bytes("big:x:4294967296:0::/:\n")) == nil)
        #expect(UserDatabaseFiles.name(ofUser: 0, inPasswd: bytes("big:x:99999999999999999999:0::/:\n")) == nil)
        #expect(UserDatabaseFiles.name(ofUser: UInt32.max, inPasswd: bytes("max:x:4294967295:0::/:\n")) == "max")
        #expect(UserDatabaseFiles.name(ofUser: 0, inPasswd: [0xC3, 0x28, 0x3A, 0x78, 0x3A, 0x30, 0x3A]) == nil)
    }

    @Test("passwd: the home directory is the sixth field of the user's first line, when it has one")
    func passwdHome() {
        let file = "root:x:0:0:root:/root:/bin/bash\napp:x:1000:1000:An App:/srv/app\nbare:x:7:7:\nother:x:1000:1:::\n"
        #expect(UserDatabaseFiles.home(ofUser: 0, inPasswd: bytes(file)) == "/root")
        #expect(UserDatabaseFiles.home(ofUser: 1000, inPasswd: bytes(file)) == "/srv/app", "no shell field, first line")
        #expect(UserDatabaseFiles.home(ofUser: 7, inPasswd: bytes(file)) == nil, "no sixth field")
        #expect(UserDatabaseFiles.name(ofUser: 7, inPasswd: bytes(file)) == "bare", "the name stands without it")
        #expect(UserDatabaseFiles.home(ofUser: 9, inPasswd: bytes(file)) == nil)
        #expect(
            UserDatabaseFiles.home(ofUser: 5, inPasswd: bytes("u:x:5:5::/home/\u{E9}t\u{E9}:/bin/sh\n"))
                == "/home/\u{E9}t\u{E9}")
        let badHome = bytes("u:x:5:5::/home/") + [0xC3, 0x28] + bytes(":/bin/sh\n")
        #expect(UserDatabaseFiles.home(ofUser: 5, inPasswd: badHome) == nil, "not valid UTF-8")
        #expect(UserDatabaseFiles.name(ofUser: 5, inPasswd: badHome) == "u")
    }

    @Test("the current home directory is NSHomeDirectory()'s, read from the files where that is certain")
    func currentHomeDirectory() {
        #expect(DefaultsLocations.currentHomeDirectory == NSHomeDirectory())
        #expect(DefaultsLocations.currentHomeDirectory == NSHomeDirectory(), "the kept answer is the same")
        let effective = geteuid()
        let user = effective != 0 ? effective : getuid()
        // Where the files answer, that answer is Foundation's.
        if let home = UserDatabaseFiles.entry(ofUser: user)?.home, DefaultsLocations.isStandardAbsolutePath(home) {
            #expect(home == NSHomeDirectory())
        }
    }

    @Test("a home directory is taken from the files only when it is already a standard absolute path")
    func standardPaths() {
        for path in ["/root", "/home/app", "/srv/a.b/c..d", "/x/...", "/home/\u{E9}t\u{E9}", "/private", "/var/auto"] {
            #expect(DefaultsLocations.isStandardAbsolutePath(path), "\(path)")
        }
        for path in [
            "", "/", "root", "~", "~/x", "/home/", "//home", "/home//app", "/home/./app", "/home/..", "/.", "/a/../b",
            "/private/home", "/var/automount/home",
        ] {
            #expect(!DefaultsLocations.isStandardAbsolutePath(path), "\(path)")
        }
    }

    @Test("any bytes give a name or none, never a trap (random lines of digits, colons, NIS marks and junk)")
    func hostileBytes() {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("0123456789:+-#\n \tpasswdfiles[]/".utf8) + [0x00, 0xC3, 0xFF]
        for _ in 0..<3_000 {
            let count = Int.random(in: 0...200, using: &generator)
            let input = (0..<count).map { _ in alphabet.randomElement(using: &generator)! }
            _ = UserDatabaseFiles.consultsFilesFirst(input)
            _ = UserDatabaseFiles.name(ofUser: UInt32.random(in: 0...20, using: &generator), inPasswd: input)
            _ = UserDatabaseFiles.home(ofUser: UInt32.random(in: 0...20, using: &generator), inPasswd: input)
        }
    }

    @Test("files that are absent or larger than the bound give no answer")
    func absentAndLargeFiles() throws {
        let directory = TemporaryDirectory()
        try directory.write("nsswitch.conf", "passwd: files\n")
        try directory.write("passwd", "someone:x:4242:4242::/:\n")
        let nsswitch = directory.file("nsswitch.conf")
        let passwd = directory.file("passwd")
        #expect(UserDatabaseFiles.userName(ofUser: 4242, nsswitch: nsswitch, passwd: passwd) == "someone")
        #expect(UserDatabaseFiles.userName(ofUser: 4242, nsswitch: directory.file("none"), passwd: passwd) == nil)
        #expect(UserDatabaseFiles.userName(ofUser: 4242, nsswitch: nsswitch, passwd: directory.file("none")) == nil)
        let large = String(repeating: "#\n", count: UserDatabaseFiles.largestFile / 2 + 1) + "someone:x:4242:4242::/:\n"
        try directory.write("passwd", large)
        #expect(UserDatabaseFiles.userName(ofUser: 4242, nsswitch: nsswitch, passwd: passwd) == nil)
    }
}

extension UserAccountTests {
    /// root's name as the files give it, when this machine's NSS consults the files first.
    static func rootNameIfFilesFirst() -> String? {
        guard let conf = FileManager.default.contents(atPath: "/etc/nsswitch.conf"),
            UserDatabaseFiles.consultsFilesFirst(Array(conf))
        else { return nil }
        return UserAccount(named: "root").map { _ in "root" }
    }
}
