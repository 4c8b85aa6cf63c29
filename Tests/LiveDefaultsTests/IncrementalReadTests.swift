import Foundation
import TestProcesses
import Testing

@testable import LiveDefaults

/// A large XML domain file's next version read by parsing only the entries that changed
/// (``XMLDictionaryIndex``): always the same answer as a whole read, and taken where it should be.
///
/// The generated edits are seeded; a failure names the seed. Rerun one with
/// `LIVEDEFAULTS_PROPERTY_SEED=<seed> swift test --filter IncrementalReadTests`.
@Suite("Reading only what changed in a large domain file")
struct IncrementalReadTests {
    static let seed: UInt64 =
        ProcessInfo.processInfo.environment["LIVEDEFAULTS_PROPERTY_SEED"].flatMap { UInt64($0) }
        ?? UInt64.random(in: 0...UInt64.max)

    static func document(_ entries: [String: PropertyList]) throws -> Data {
        try PropertyList.dictionary(entries).encoded(as: .xml)
    }

    static func numbered(_ count: Int) -> [String: PropertyList] {
        Dictionary(uniqueKeysWithValues: (0..<count).map { ("Key\($0)", PropertyList.integer($0)) })
    }

    /// Reads `new` through the index of `old`, checked against the whole read.
    static func reread(_ old: Data, _ new: Data) throws -> XMLDictionaryIndex.Reread? {
        let (value, index) = try XMLDictionaryIndex.read(old, always: true)
        guard case .dictionary(let contents) = value else { throw Failure("not a dictionary") }
        let found = try #require(index).reread(new, isKey: { contents[$0] != nil })
        #expect(XMLDictionaryIndex.disagreement(old: old, new: new) == nil)
        return found
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    @Test("one changed value is read as that one entry, whatever the file's size")
    func oneValue() throws {
        var entries = Self.numbered(1_000)
        let old = try Self.document(entries)
        entries["Key500"] = .string("changed")
        let reread = try #require(try Self.reread(old, Self.document(entries)))
        #expect(reread.removedKeys == ["Key500"])
        #expect(reread.entries.map(\.key) == ["Key500"])
        #expect(reread.entries.first?.value == .string("changed"))
        #expect(reread.index.layout.entryStarts.count == 1_000)
    }

    @Test("added and removed keys, first and last entries, and no change at all")
    func addedRemovedAndEnds() throws {
        let base = Self.numbered(200)
        let old = try Self.document(base)
        var added = base
        added["Key1000"] = .bool(true)
        let addition = try #require(try Self.reread(old, Self.document(added)))
        #expect(Set(addition.entries.map(\.key)).contains("Key1000"))
        #expect(addition.index.layout.entryStarts.count == 201)

        var removed = base
        removed["Key150"] = nil
        let removal = try #require(try Self.reread(old, Self.document(removed)))
        #expect(removal.removedKeys.contains("Key150"))
        #expect(!removal.entries.contains { $0.key == "Key150" })

        // Sorted as text: Key0 is the first entry, Key99 the last.
        for key in ["Key0", "Key99"] {
            var edited = base
            edited[key] = .real(1.5)
            let reread = try #require(try Self.reread(old, Self.document(edited)))
            #expect(reread.entries.contains { $0.key == key && $0.value == .real(1.5) })
        }

        let same = try #require(try Self.reread(old, old))
        #expect(same.removedKeys.isEmpty && same.entries.isEmpty)

        // From an empty dictionary written as <dict></dict> (the body exists; only <dict/> has none).
        let empty = Data("<plist><dict>\n</dict></plist>".utf8)
        let first = try #require(
            try Self.reread(empty, Data("<plist><dict>\n<key>A</key><integer>1</integer></dict></plist>".utf8)))
        #expect(first.entries.map(\.key) == ["A"])
    }

    @Test("what only a whole read can answer falls back to it")
    func fallsBack() throws {
        let base = Self.numbered(100)
        let old = try Self.document(base)
        let text = String(decoding: old, as: UTF8.self)
        func edited(_ transform: (String) -> String) -> Data { Data(transform(text).utf8) }
        // A key written twice: the later value wins, which only the whole file's order tells.
        let duplicate = edited {
            $0.replacingOccurrences(of: "<key>Key50</key>", with: "<key>Key10</key>")
        }
        #expect(try Self.reread(old, duplicate) == nil)
        // A change in the header.
        #expect(
            try Self.reread(old, edited { $0.replacingOccurrences(of: "version=\"1.0\"", with: "version=\"1.1\"") })
                == nil)
        // A comment opened among the entries and closed far later: the changed bytes end inside it.
        let comment = edited {
            $0.replacingOccurrences(of: "<key>Key20</key>", with: "<!--<key>Key20</key>")
                .replacingOccurrences(of: "<key>Key30</key>", with: "--><key>Key30</key>")
        }
        // (two changed places make one region from Key20 to Key30: read exactly, or fallen back; either agrees)
        _ = try Self.reread(old, comment)
        // A comment opened and never closed: the whole read refuses the file, the index must not accept it.
        #expect(
            try Self.reread(
                old, edited { $0.replacingOccurrences(of: "<key>Key20</key>", with: "<!--<key>Key20</key>") }) == nil)
        // Malformed entry.
        #expect(
            try Self.reread(
                old, edited { $0.replacingOccurrences(of: "<integer>42</integer>", with: "<integer>42</intger>") })
                == nil)
        // Everything changed (a writer that does not sort its keys): reading it all costs no more.
        var shuffled = base
        for key in base.keys { shuffled[key] = .string("x") }
        #expect(try Self.reread(old, Self.document(shuffled)) == nil)
    }

    @Test("generated documents and edits: the index agrees with a whole read, and is used")
    func generatedEdits() throws {
        var generator = ValueGenerator(seed: Self.seed)
        var usedIndex = 0
        var sortedRewrites = 0
        for _ in 0..<300 {
            var entries: [String: PropertyList] = [:]
            for index in 0..<(5 + generator.below(60)) {
                entries["K\(index)-\(generator.below(1000))"] = generator.value(depth: 1)
            }
            let old = try Self.document(entries)
            for _ in 0..<8 {
                let new: Data
                let sorted = generator.below(4) == 0
                if sorted { sortedRewrites += 1 }
                switch sorted ? 0 : 1 {
                case 0:
                    // Values changed, added or removed, written as a writer that sorts its keys does.
                    var edited = entries
                    let keys = Array(edited.keys)
                    for _ in 0..<(1 + generator.below(3)) {
                        switch generator.below(3) {
                        case 0: edited[keys[generator.below(keys.count)]] = generator.value(depth: 1)
                        case 1: edited[keys[generator.below(keys.count)]] = nil
                        default: edited["N\(generator.below(1000))"] = generator.value(depth: 1)
                        }
                    }
                    new = try Self.document(edited)
                default:
                    // Bytes inserted, deleted or replaced anywhere, markup characters among them.
                    var bytes = [UInt8](old)
                    for _ in 0..<(1 + generator.below(3)) {
                        let at = generator.below(bytes.count + 1)
                        let alphabet = Array("<>/!-&;[]?x \t\nkeyintgrdc".utf8)
                        let run = (0..<(1 + generator.below(6))).map { _ in alphabet[generator.below(alphabet.count)] }
                        switch generator.below(3) {
                        case 0: bytes.insert(contentsOf: run, at: at)
                        case 1: bytes.removeSubrange(at..<min(bytes.count, at + run.count))
                        default: bytes.replaceSubrange(at..<min(bytes.count, at + run.count), with: run)
                        }
                    }
                    new = Data(bytes)
                }
                let disagreement = XMLDictionaryIndex.disagreement(old: old, new: new)
                #expect(
                    disagreement == nil,
                    "seed \(Self.seed): \(disagreement ?? "")\nold:\n\(String(decoding: old, as: UTF8.self))\nnew:\n\(String(decoding: new, as: UTF8.self))"
                )
                let (value, index) = try XMLDictionaryIndex.read(old, always: true)
                if sorted, case .dictionary(let contents) = value,
                    try #require(index).reread(new, isKey: { contents[$0] != nil }) != nil
                {
                    usedIndex += 1
                }
            }
        }
        // The fallback alone would agree too: the index must actually be taken for most sorted rewrites (not
        // all: an edit of more than half of a small document's entries is read whole).
        #expect(
            usedIndex > sortedRewrites / 2,
            "seed \(Self.seed): the index was used for \(usedIndex) of \(sortedRewrites) sorted rewrites")
    }

    @Test("another process's change to one key of a large domain: the observer sees that key alone")
    func largeDomainThroughTheStore() async throws {
        let directory = TemporaryDirectory()
        let domain = "com.example.large"
        var entries = Self.numbered(2_000)
        let path = directory.file("\(domain).plist")
        try Self.document(entries).write(to: URL(fileURLWithPath: path))
        let store = try directory.store(domain)
        #expect(store.integer(forKey: "Key1999") == 1999)
        let file = StorageContext.system.registry.file(atPath: path)
        #expect(file.isIndexed, "a large XML file read whole keeps its index")

        var changes = store.changes().makeAsyncIterator()
        for round in 1...3 {
            entries["Key1000"] = .integer(-round)
            entries["Added\(round)"] = .string("new")
            if round > 1 { entries["Added\(round - 1)"] = nil }
            try Self.document(entries).write(to: URL(fileURLWithPath: path), options: .atomic)
            var seen: [String: PropertyList?] = [:]
            while seen.count < (round > 1 ? 3 : 2), let change = await changes.next() {
                seen[change.key] = change.newValue
            }
            #expect(seen.count == (round > 1 ? 3 : 2), "only the changed keys are reported")
            #expect(seen["Key1000"] == .some(.integer(-round)))
            #expect(seen["Added\(round)"] == .some(.string("new")))
            if round > 1 { #expect(seen["Added\(round - 1)"] == .some(nil)) }
            #expect(store.dictionaryRepresentation().count == 2_001)
            #expect(file.isIndexed)
            // The change log records the version with the old values the read replaced (kept as the changed
            // entries' old values, not as a copy of the domain, and put together when recorded).
            let logged = store.loggedChanges(inDomain: domain, limit: 3)
            let old: PropertyList = round == 1 ? .integer(1000) : .integer(-(round - 1))
            #expect(
                logged.contains {
                    $0.key == "Key1000" && $0.origin == .external && $0.oldValue == .value(old)
                        && $0.newValue == .value(.integer(-round))
                }, "\(logged)")
            #expect(
                logged.contains { $0.key == "Added\(round)" && $0.oldValue == .absent && $0.newValue == .value("new") })
        }
        // This process's own write drops the index (the bytes are its own); the next read indexes again.
        store.set(7, forKey: "Own")
        store.synchronize()
        #expect(!file.isIndexed)
        entries["Own"] = .integer(8)
        entries["Key3"] = .integer(33)
        try Self.document(entries).write(to: URL(fileURLWithPath: path), options: .atomic)
        var seen: [String: PropertyList?] = [:]
        // (the store's own `set` of Own is a change too: only the other writer's are collected here)
        while seen.count < 2, let change = await changes.next() {
            if change.origin == .external { seen[change.key] = change.newValue }
        }
        #expect(seen["Own"] == .some(.integer(8)) && seen["Key3"] == .some(.integer(33)))
        #expect(file.isIndexed)
        #expect(
            store.loggedChanges(inDomain: domain, key: "Key3").first.map { [$0.oldValue, $0.newValue] } == [
                .value(.integer(3)), .value(.integer(33)),
            ])
    }
}
