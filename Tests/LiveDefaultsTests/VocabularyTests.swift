import Foundation
import Testing

@testable import LiveDefaults
@testable import LiveDefaultsTesting

/// One vocabulary (Docs/Architecture.md, "The public API"): one origin, a typed version, one domain label, the
/// `set`/`trySet` rule for synchronizing, typed errors, typed reads without a public fast path. All in memory.
@Suite("One vocabulary: the same names and types wherever a concept appears")
struct VocabularyTests {
    /// A store in memory below `root`, not watching (every change here is this process's own), with its schemas in
    /// `schemaDirectories` when given.
    static func store(
        _ domain: String, fileSystem: InMemoryFileSystem = InMemoryFileSystem(), root: String = "/home",
        schemaDirectories: [String]? = nil
    ) throws -> Defaults {
        var configuration = Defaults.Configuration.rooted(at: root, applicationDomain: domain)
        configuration.fileSystem = fileSystem
        configuration.watching = .off
        configuration.clock = ManualDefaultsClock()
        if let schemaDirectories { configuration.locations.schemaDirectories = schemaDirectories }
        return try Defaults(configuration: configuration)
    }

    @Test("a version reads back from its text, refuses any other text, and is Codable as that text")
    func versionText() throws {
        let version = DomainVersion(digest: 0x0123_4567_89ab_cdef)
        #expect(version.description == "0123456789abcdef")
        #expect(DomainVersion("0123456789abcdef") == version)
        #expect(DomainVersion("0123456789ABCDEF") == version)
        #expect(DomainVersion.noFile.description == "0000000000000000")
        for text in [
            "", "0123456789abcde", "0123456789abcdef0", "+123456789abcdef", "-123456789abcdef",
            "0123456789abcdeg", " 123456789abcdef", "0123456789abcdé",
        ] {
            #expect(DomainVersion(text) == nil, "\(text)")
        }
        let json = try JSONEncoder().encode([version])
        #expect(String(decoding: json, as: UTF8.self) == #"["0123456789abcdef"]"#)
        #expect(try JSONDecoder().decode([DomainVersion].self, from: json) == [version])
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode([DomainVersion].self, from: Data(#"["not a version"]"#.utf8))
        }
    }

    @Test("the version on disk, the version held and the change log's version are one typed value, by one label")
    func versionsAgree() throws {
        let defaults = try Self.store("com.example.versions")
        #expect(defaults.versionOnDisk() == .noFile)
        #expect(defaults.heldVersion() == .noFile)
        defaults.set(1, forKey: "Rate")
        try defaults.trySynchronize()
        let onDisk = try #require(defaults.versionOnDisk(inDomain: "com.example.versions"))
        #expect(onDisk != .noFile)
        #expect(defaults.heldVersion() == onDisk)
        let logged = try #require(defaults.loggedChanges(key: "Rate").first)
        #expect(logged.version == onDisk)
        #expect(logged.oldValue == .absent && logged.newValue == .value(.integer(1)))
        #expect(logged.origin == .local)
        // Another domain, named by the same label.
        #expect(defaults.versionOnDisk(inDomain: "com.example.other") == .noFile)
        #expect(defaults.readers(inDomain: "com.example.other").isEmpty)
        #expect(defaults.refusals(inDomain: "com.example.other").isEmpty)
    }

    @Test("a change the fleet agent makes is .fleet in its store's stream and in the change log; others are .local")
    func fleetOrigin() async throws {
        let defaults = try Self.store("com.example.origin")
        var changes = defaults.changes().makeAsyncIterator()
        defaults.set("mine", forKey: "Own")
        // Written first: a write inside the attribution writes every pending edit of the file as the fleet's.
        try defaults.trySynchronize()
        try Defaults.attributingWrites(toFleetRevision: 42) {
            try defaults.transaction { transaction in transaction.set("etcd's", forKey: "Fleet") }
        }
        var seen: [String: ChangeOrigin] = [:]
        while seen.count < 2, let change = await changes.next() { seen[change.key] = change.origin }
        #expect(seen == ["Own": .local, "Fleet": .fleet])
        try defaults.trySynchronize()
        let logged = defaults.loggedChanges()
        #expect(
            logged.first { $0.key == "Fleet" }.map { [$0.origin.rawValue, "\($0.revision ?? 0)"] } == ["fleet", "42"])
        #expect(logged.first { $0.key == "Own" }?.origin == .local)
    }

    @Test("trySynchronize throws the failure synchronize() answers false for")
    func trySynchronizeThrows() throws {
        let fileSystem = InMemoryFileSystem()
        // The store's directory lies below a regular file: every write fails with ENOTDIR.
        try fileSystem.place(Data("not a directory".utf8), at: "/blocker")
        let defaults = try Self.store("com.example.sync", fileSystem: fileSystem, root: "/blocker/home")
        defaults.set(1, forKey: "Key")
        do {
            try defaults.trySynchronize()
            Issue.record("trySynchronize did not throw")
        } catch {
            #expect(error.code == .writeFailed)
            #expect(error.errno == ENOTDIR)
        }
        #expect(!defaults.synchronize())
    }

    @Test("a published schema that cannot be read throws DefaultsError, naming the file; none published is nil")
    func publishedSchemaThrowsTyped() throws {
        let fileSystem = InMemoryFileSystem()
        let defaults = try Self.store("com.example.schema", fileSystem: fileSystem, schemaDirectories: ["/schemas"])
        #expect(try defaults.publishedSchema() == nil)
        try fileSystem.place(
            Data("<plist><string>not a schema</string></plist>".utf8), at: "/schemas/com.example.schema.plist")
        do {
            _ = try defaults.publishedSchema(inDomain: "com.example.schema")
            Issue.record("an unreadable schema was read")
        } catch {
            #expect(error.code == .invalidSchema)
            #expect(error.path == "/schemas/com.example.schema.plist")
            #expect(error.domain == "com.example.schema")
            #expect("\(error)".contains("not a dictionary"), "\(error)")
        }
    }

    @Test("typed reads: the scalar types' own forms and their conversions read as before the fast path moved inside")
    func typedReadsOfScalars() throws {
        let defaults = try Self.store("com.example.scalars")
        let int = DefaultsKey<Int>("Int", default: -1)
        let string = DefaultsKey<String>("String", default: "none")
        let bool = DefaultsKey<Bool>("Bool", default: false)
        let double = DefaultsKey<Double>("Double", default: 0)
        let small = DefaultsKey<Int8>("Small", default: 0)
        defaults.set(7, forKey: "Int")
        defaults.set("text", forKey: "String")
        defaults.set(true, forKey: "Bool")
        defaults.set(2.5, forKey: "Double")
        defaults.set(12, forKey: "Small")
        #expect(defaults[int] == 7 && defaults[string] == "text" && defaults[bool] && defaults[double] == 2.5)
        #expect(defaults[small] == 12)
        // Conversions, as `defaults write` without a type leaves values.
        defaults.set("8", forKey: "Int")
        defaults.set("YES", forKey: "Bool")
        defaults.set(3, forKey: "Double")
        #expect(defaults[int] == 8 && defaults[bool] && defaults[double] == 3)
        // An integer out of a narrow type's range is refused: the key's last valid value.
        defaults.set(300, forKey: "Small")
        #expect(defaults[small] == 12)
        #expect(small.schema.type == .integer)
        let snapshot = defaults.snapshot(of: [int, string] as [AnyDefaultsKey])
        #expect(snapshot[int] == 8 && snapshot[string] == "text")
    }
}
