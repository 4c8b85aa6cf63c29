import Foundation
import TestProcesses
import Testing

@testable import LiveDefaults

/// Every file in `Fuzz/Regressions/` (crashing inputs the fuzzers found, and hand-made hostile files) goes
/// through everything a process does with a domain file: reading it, opening it as a domain (the application
/// domain and the global one, which every process reads), every getter, every writer and formatter, and the
/// Codable decoder. Any trap here would crash the test process; the assertions check the promised results.
@Suite("Hostile input is a value or an error, never a crash", .blockingWork)
struct HostileInputTests {
    static let regressionDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz/Regressions")

    static let regressionFiles: [String] = {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: regressionDirectory.path)) ?? []
        return names.filter { !$0.hasPrefix(".") }.sorted()
    }()

    @Test("the regression inputs are there")
    func regressionsPresent() {
        #expect(Self.regressionFiles.count >= 15, "Fuzz/Regressions/ not found next to the tests")
    }

    @Test("a regression input reads, writes, formats and opens as a domain", arguments: regressionFiles)
    func regressionInput(_ name: String) throws {
        let data = try Data(contentsOf: Self.regressionDirectory.appendingPathComponent(name))
        if let (value, _) = try? PropertyList.decode(data) {
            Self.exerciseWritersAndFormatters(value)
            Self.exerciseCodable(value)
        }
        _ = try? PropertyList(parsing: String(decoding: data, as: UTF8.self))

        for domain in ["Hostile", Defaults.globalDomain] {
            let directory = TemporaryDirectory()
            let locations = DefaultsLocations.rooted(at: directory.path)
            let path = locations.path(forDomain: domain, layer: .currentUser)
            try data.write(to: URL(fileURLWithPath: path))
            let errors = Lock<[DefaultsError]>([])
            var configuration = Defaults.Configuration.rooted(at: directory.path, applicationDomain: "Hostile")
            configuration.errorHandler = { error in errors.withLock { $0.append(error) } }
            let store = try Defaults(configuration: configuration)
            Self.exerciseGetters(store)
            // A readable file keeps every key; an unreadable one is reported, naming the file. (The typed reads
            // above report the values their keys refuse: those are not errors of the file.)
            if (try? PropertyList.decode(data))?.value.dictionaryValue != nil {
                #expect(errors.withLock { $0.filter { $0.code != .invalidValue }.isEmpty })
                if name.contains("date") || name.contains("data") || name.contains("slashes") {
                    #expect(store.string(forKey: "Kept") == "the other keys")
                }
            } else {
                #expect(errors.withLock { $0.contains { "\($0)".contains(path) } })
            }
        }
    }

    static func exerciseWritersAndFormatters(_ value: PropertyList) {
        for format in PropertyList.Format.allCases {
            do {
                let encoded = try value.encoded(as: format)
                #expect((try? PropertyList.decode(encoded, as: format)) != nil, "\(format) output reads back")
            } catch {
                guard error.code == .unrepresentable else {
                    Issue.record("\(format) writer failed: \(error)")
                    continue
                }
                #expect(format == .xml)
            }
        }
        _ = value.description
        _ = value.openStepText(dateStyle: .defaultsTool)
        _ = try? PropertyList(foundationValue: value.foundationValue)
    }

    static func exerciseCodable(_ value: PropertyList) {
        var candidates = [value]
        if case .dictionary(let entries) = value { candidates += entries.values }
        for candidate in candidates {
            for decode in decoders {
                guard let decoded = decode(candidate) else { continue }
                #expect((try? PropertyListValueEncoder().encode(decoded)) != nil, "\(type(of: decoded)) encodes again")
            }
        }
    }

    static let decoders: [@Sendable (PropertyList) -> (any Encodable)?] = [
        { try? PropertyListValueDecoder().decode(UInt64.self, from: $0) },
        { try? PropertyListValueDecoder().decode(Int.self, from: $0) },
        { try? PropertyListValueDecoder().decode(Double.self, from: $0) },
        { try? PropertyListValueDecoder().decode(Date.self, from: $0) },
        { try? PropertyListValueDecoder().decode(String.self, from: $0) },
        { try? PropertyListValueDecoder().decode([String: Int].self, from: $0) },
        { try? PropertyListValueDecoder().decode([Double].self, from: $0) },
    ]

    static func exerciseGetters(_ store: Defaults) {
        let contents = store.dictionaryRepresentationValues()
        _ = store.dictionaryRepresentation()
        for key in contents.keys {
            _ = store.object(forKey: key)
            _ = store.string(forKey: key)
            _ = store.array(forKey: key)
            _ = store.dictionary(forKey: key)
            _ = store.data(forKey: key)
            _ = store.stringArray(forKey: key)
            _ = store.integer(forKey: key)
            _ = store.float(forKey: key)
            _ = store.double(forKey: key)
            _ = store.bool(forKey: key)
            _ = store.url(forKey: key)
            _ = store[DefaultsKey<Int>(key, default: 0)]
            _ = store[DefaultsKey<UInt8>(key, default: 0)]
            _ = store[DefaultsKey<Date>(key, default: Date(timeIntervalSince1970: 0))]
            _ = store[DefaultsKey<Double>(key, default: 0)]
            _ = store[DefaultsKey<[String]>(key, default: [])]
            _ = contents[key]?.description
        }
    }

    // MARK: What the regressions promise, one by one

    @Test("fractional seconds of any length read as a date (more than 18 digits overflowed)")
    func longFractions() throws {
        let expected = try #require(PropertyListDate.parse("2026-11-22T14:16:04Z")).timeIntervalSince1970
        for digits in ["1234567890123456789", String(repeating: "9", count: 400), "5"] {
            let value = try PropertyList(parsing: "<plist><date>2026-11-22T14:16:04.\(digits)Z</date></plist>")
            let seconds = try #require(value.dateValue).timeIntervalSince1970
            #expect(seconds >= expected && seconds <= expected + 1)
        }
        #expect(throws: PropertyListError.self) {
            try PropertyList(parsing: "<plist><date>2026-11-22T14:16:04.Z</date></plist>")
        }
        #expect(throws: PropertyListError.self) {
            try PropertyList(parsing: "<plist><date>2026-11-22T14:16:04.1xZ</date></plist>")
        }
    }

    @Test("dates no calendar holds are printed, never a trap; XML refuses them by key path")
    func datesBeyondCalendars() throws {
        let cases: [(Double, String)] = [
            (.nan, "nan seconds since 1970"), (.infinity, "inf seconds since 1970"),
            (-.infinity, "-inf seconds since 1970"), (1e300, "1e+300 seconds since 1970"),
            (1_515_000_000_000, "+49978-"), (-220_000_000_000, "-5002-"), (0, "1970-01-01T00:00:00Z"),
        ]
        for (seconds, text) in cases {
            let date = Date(timeIntervalSince1970: seconds)
            #expect(PropertyList.text(for: date, style: .iso8601).hasPrefix(text))
            _ = PropertyList.text(for: date, style: .defaultsTool)
            let value: PropertyList = ["Outer": ["Inner": [.date(date)]]]
            _ = value.description
            if seconds == 0 {
                #expect(throws: Never.self) { try value.encoded(as: .xml) }
            } else {
                #expect(throws: PropertyListError.self) { try value.encoded(as: .xml) }
                do {
                    _ = try value.encoded(as: .xml)
                } catch {
                    guard error.code == .unrepresentable, let keyPath = error.keyPath else { throw error }
                    #expect(keyPath == "Outer.Inner[0]")
                }
            }
            let binary = try PropertyList.decode(value.encoded(as: .binary), as: .binary)
            let stored = try #require(
                binary.dictionaryValue?["Outer"]?.dictionaryValue?["Inner"]?.arrayValue?.first?.dateValue)
            #expect(
                stored.timeIntervalSinceReferenceDate.bitPattern == date.timeIntervalSinceReferenceDate.bitPattern
                    || (stored.timeIntervalSinceReferenceDate.isNaN && seconds.isNaN))
        }
        #expect(PropertyListDate.xmlText(Date(timeIntervalSince1970: -62_167_219_200)) == "0000-01-01T00:00:00Z")
        #expect(PropertyListDate.xmlText(Date(timeIntervalSince1970: 253_402_300_799)) == "9999-12-31T23:59:59Z")
        #expect(PropertyListDate.xmlText(Date(timeIntervalSince1970: 253_402_300_800)) == nil)
    }

    @Test("a value an XML file cannot hold is an error naming the file and key; the file keeps its other keys")
    func unrepresentableValueInXMLDomain() throws {
        let directory = TemporaryDirectory()
        let errors = Lock<[DefaultsError]>([])
        var configuration = Defaults.Configuration.rooted(at: directory.path, applicationDomain: "com.example.far")
        configuration.errorHandler = { error in errors.withLock { $0.append(error) } }
        let store = try Defaults(configuration: configuration)
        store.set("kept", forKey: "Other")
        #expect(store.synchronize())
        store.set(Date(timeIntervalSince1970: 1e15), forKey: "Far")
        #expect(!store.synchronize())
        let path = directory.file("com.example.far.plist")
        let reported = try #require(errors.withLock { $0.last })
        guard reported.code == .unrepresentableValue, let file = reported.path,
            reported.propertyListError?.code == .unrepresentable, let keyPath = reported.propertyListError?.keyPath
        else {
            Issue.record("unexpected error \(reported)")
            return
        }
        #expect(file == path)
        #expect(keyPath == "Far")
        #expect("\(reported)".contains(path) && "\(reported)".contains("Far"))
        // The file still holds its last good version, and the store still answers with the new value.
        let onDisk = try PropertyList.decode(Data(contentsOf: URL(fileURLWithPath: path))).value
        #expect(onDisk == ["Other": "kept"])
        #expect(store.object(forKey: "Far") as? Date == Date(timeIntervalSince1970: 1e15))
        // Replacing the value lets the next write through.
        store.set(Date(timeIntervalSince1970: 0), forKey: "Far")
        #expect(store.synchronize())
        let fixed = try PropertyList.decode(Data(contentsOf: URL(fileURLWithPath: path))).value
        #expect(fixed == ["Other": "kept", "Far": .date(Date(timeIntervalSince1970: 0))])
    }

    @Test("empty data survives an XML round trip (it read back as invalid base64)")
    func emptyData() throws {
        let value: PropertyList = ["Empty": .data(Data()), "Bytes": .data(Data([0, 255]))]
        #expect(try PropertyList.decode(value.encoded(as: .xml), as: .xml) == value)
        #expect(try PropertyList(parsing: "<plist><data>\n\t \n</data></plist>") == .data(Data()))
        #expect(try PropertyList(parsing: "<plist><data/></plist>") == .data(Data()))
    }

    @Test("old-style strings that look like comments are quoted")
    func commentLikeStrings() throws {
        for string in ["//server/share", "//", "/*x", "a//b", "/"] {
            let value: PropertyList = ["Path": .string(string), "List": [.string(string)]]
            #expect(try PropertyList.decode(value.encoded(as: .openStep), as: .openStep) == value)
        }
    }

    @Test("carriage returns and control characters survive XML")
    func controlCharactersInXML() throws {
        let value: PropertyList = ["Text": "a\r\nb\u{0}c\u{1F}\td", "Key\r": "v"]
        #expect(try PropertyList.decode(value.encoded(as: .xml), as: .xml) == value)
    }

    @Test("integers beyond Int.max are stored as the real that holds them, and read back")
    func unsignedBeyondInt() throws {
        let large = UInt64(1) << 63 + 4096
        let encoded = try PropertyListValueEncoder().encode(large)
        #expect(encoded == .real(Double(large)))
        #expect(try PropertyListValueDecoder().decode(UInt64.self, from: encoded) == large)
        #expect(try large.propertyList() == .real(Double(large)))
        #expect(throws: (any Error).self) { try PropertyListValueEncoder().encode(UInt64.max - 1) }
        // Found by FuzzCodable: a string spelling a UInt64 that no property list can store again is refused
        // when decoded, rather than decoded into a value that cannot be written back.
        #expect(throws: (any Error).self) {
            try PropertyListValueDecoder().decode(UInt64.self, from: "18446744073709551615")
        }
        #expect(try PropertyListValueDecoder().decode(UInt64.self, from: "9223372036854775808") == 1 << 63)
        #expect(try PropertyListValueDecoder().decode(UInt64.self, from: " 42") == 42)
    }

    @Test("binary files may not expand beyond their size's allowance")
    func expansionAllowance() {
        #expect(PropertyListLimits.expandedObjectLimit(forFileSize: 100) == 100_000)
        #expect(PropertyListLimits.expandedObjectLimit(forFileSize: 1_000_000) == 8_000_000)
        #expect(
            PropertyListLimits.expandedObjectLimit(forFileSize: Int.max) == PropertyListLimits.maximumExpandedObjects)
    }

    @Test("dates typed as people and defaults read write them")
    func lenientDates() {
        let noon = Date(timeIntervalSince1970: 1_706_702_400)  // 2024-01-31 12:00:00 UTC
        #expect(PropertyList.date(fromText: "2024-01-31 12:00:00 +0000") == noon)
        #expect(PropertyList.date(fromText: "2024-01-31 13:00:00 +0100") == noon)
        #expect(PropertyList.date(fromText: "2024-01-31T07:30:00-04:30") == noon)
        #expect(PropertyList.date(fromText: "2024-01-31T12:00:00Z") == noon)
        #expect(PropertyList.date(fromText: "2024-01-31 12:00:00") == noon)
        #expect(PropertyList.date(fromText: "2024-01-31") == Date(timeIntervalSince1970: 1_706_659_200))
        #expect(PropertyList.date(fromText: "2024-01-31T12:00:00.5Z") == noon.addingTimeInterval(0.5))
        for bad in [
            "", "2024", "2024-13-01", "2024-01-31 25:00:00", "2024-01-31 12:00:00 +01", "2024-01-31X",
            "2024-01-31T12:00:00Zjunk",
        ] {
            #expect(PropertyList.date(fromText: bad) == nil, "\(bad)")
        }
        // The XML reader keeps to the XML form.
        #expect(PropertyListDate.parse("2024-01-31 12:00:00 +0000") == nil)
        #expect(PropertyListDate.parse("2024-01-31") == nil)
    }
}

/// Files nested as deep as the readers allow are read, written, printed, compared and released on the
/// threads that really do it: the watcher's (Dispatch) and a task's (Swift concurrency), whose stacks are
/// smaller than the main thread's.
@Suite("Deep nesting on small stacks")
struct DeepNestingTests {
    static let depth = PropertyListLimits.maximumDepth - 1

    static let documents: [(String, Data)] = [
        (
            "XML arrays",
            Data(
                ("<plist>" + String(repeating: "<array>", count: depth) + "<string>x</string>"
                    + String(repeating: "</array>", count: depth) + "</plist>").utf8)
        ),
        (
            "XML dictionaries",
            Data(
                ("<plist>" + String(repeating: "<dict><key>k</key>", count: depth) + "<true/>"
                    + String(repeating: "</dict>", count: depth) + "</plist>").utf8)
        ),
        (
            "old-style",
            Data((String(repeating: "{k=(", count: depth / 2) + "x" + String(repeating: ");}", count: depth / 2)).utf8)
        ),
    ]

    static func exercise(_ data: Data) -> Bool {
        guard let (value, _) = try? PropertyList.decode(data) else { return false }
        _ = value.description
        _ = value.depth
        guard let binary = try? value.encoded(as: .binary), let xml = try? value.encoded(as: .xml),
            (try? PropertyList.decode(binary).value) == value, (try? PropertyList.decode(xml).value) == value
        else { return false }
        _ = try? PropertyListValueDecoder().decode([String: [Int]].self, from: value)
        return true
    }

    @Test("on a Dispatch thread")
    func dispatchThread() async {
        for (name, data) in Self.documents {
            let ok = await withCheckedContinuation { continuation in
                DispatchQueue.global().async { continuation.resume(returning: Self.exercise(data)) }
            }
            #expect(ok, "\(name)")
        }
    }

    @Test("in a task")
    func task() async {
        for (name, data) in Self.documents {
            let ok = await Task.detached { Self.exercise(data) }.value
            #expect(ok, "\(name)")
        }
    }

    @Test("a domain file nested that deep, written by another process, reaches the store through the watcher")
    func watchedDeepFile() async throws {
        let directory = TemporaryDirectory()
        let store = try directory.store("com.example.deep")
        let inner =
            String(repeating: "<array>", count: Self.depth - 1) + "<string>x</string>"
            + String(repeating: "</array>", count: Self.depth - 1)
        let document = "<plist><dict><key>Deep</key>\(inner)</dict></plist>"
        let temporary = directory.file("deep.tmp")
        try document.write(toFile: temporary, atomically: false, encoding: .utf8)
        rename(temporary, directory.file("com.example.deep.plist"))
        #expect(await waitForValue(store, "Deep") { $0 != nil })
    }
}
