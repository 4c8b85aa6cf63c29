import Foundation
import PlistOracle
import TestProcesses
import Testing

@testable import LiveDefaults

@Suite("Property lists: formats, round trips and hostile input", .blockingWork)
struct PropertyListTests {
    static let sample: PropertyList = [
        "String": "héllo <&> wörld \u{1F600}",
        "Empty": "",
        "Integer": 42,
        "Negative": -7,
        "Large": .integer(Int.max),
        "Smallest": .integer(Int.min),
        "Real": 2.5,
        "Infinity": .real(.infinity),
        "True": true,
        "False": false,
        "Date": .date(Date(timeIntervalSince1970: 1_700_000_000)),
        "Data": .data(Data([0, 1, 2, 254, 255])),
        "Array": [1, "two", [3.5], [:]],
        "Nested": ["Inner": ["Deep": [true]], "Control": "tab\tnew\nline\u{1}"],
        "EmptyArray": [],
    ]

    @Test("XML round trip keeps every type")
    func xmlRoundTrip() throws {
        let data = try Self.sample.encoded(as: .xml)
        let (value, format) = try PropertyList.decode(data)
        #expect(format == .xml)
        #expect(value == Self.sample)
    }

    @Test("XML is laid out as Foundation writes it: tabs, sorted keys, escapes, data in lines of 68")
    func xmlLayout() throws {
        let value = PropertyList.dictionary([
            "Text": .string("a & b < c > d\te\nf\r\u{01}\u{1F}é😀"),
            "Numbers": .array([
                .integer(Int.min), .integer(-42), .integer(0), .integer(Int.max), .real(-0.5), .real(.infinity),
                .bool(true), .bool(false),
            ]),
            "Bytes": .data(Data((0..<60).map { UInt8($0 * 4 % 256) })),
            "When": .date(Date(timeIntervalSince1970: 1_234_567_890)),
            "Empty": .dictionary(["List": .array([]), "Map": .dictionary([:])]),
        ])
        let expected = """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0">
            <dict>
            \t<key>Bytes</key>
            \t<data>
            \tAAQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyAhIiMkJSYnKCkqKywtLi8wMTI
            \tzNDU2Nzg5Ojs
            \t</data>
            \t<key>Empty</key>
            \t<dict>
            \t\t<key>List</key>
            \t\t<array/>
            \t\t<key>Map</key>
            \t\t<dict/>
            \t</dict>
            \t<key>Numbers</key>
            \t<array>
            \t\t<integer>-9223372036854775808</integer>
            \t\t<integer>-42</integer>
            \t\t<integer>0</integer>
            \t\t<integer>9223372036854775807</integer>
            \t\t<real>-0.5</real>
            \t\t<real>+infinity</real>
            \t\t<true/>
            \t\t<false/>
            \t</array>
            \t<key>Text</key>
            \t<string>a &amp; b &lt; c &gt; d\te
            f&#xd;&#x1;&#x1f;é😀</string>
            \t<key>When</key>
            \t<date>2009-02-13T23:31:30Z</date>
            </dict>
            </plist>

            """
        #expect(String(decoding: try value.encoded(as: .xml), as: UTF8.self) == expected)
        #expect(try PropertyList.decode(try value.encoded(as: .xml)).value == value)
    }

    @Test("Binary round trip keeps every type")
    func binaryRoundTrip() throws {
        let data = try Self.sample.encoded(as: .binary)
        #expect(data.starts(with: Array("bplist00".utf8)))
        let (value, format) = try PropertyList.decode(data)
        #expect(format == .binary)
        #expect(value == Self.sample)
    }

    @Test("Old-style text round trips strings, arrays, dictionaries and data")
    func openStepRoundTrip() throws {
        let value: PropertyList = ["a b": "c \"d\"", "list": ["1", "x y", ""], "bytes": .data(Data([0xCA, 0xFE]))]
        let text = value.description
        #expect(try PropertyList(parsing: text) == value)
    }

    @Test("XML dates keep whole seconds, binary dates the full value")
    func dates() throws {
        let date = Date(timeIntervalSince1970: 1_234_567_890.75)
        let xml = try PropertyList.decode(PropertyList.date(date).encoded(as: .xml)).value
        #expect(xml == .date(Date(timeIntervalSince1970: 1_234_567_890)))
        let binary = try PropertyList.decode(PropertyList.date(date).encoded(as: .binary)).value
        #expect(binary == .date(date))
        #expect(PropertyListDate.xmlText(Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00Z")
        #expect(PropertyListDate.parse("2001-01-01T00:00:00Z") == Date(timeIntervalSinceReferenceDate: 0))
        #expect(PropertyListDate.parse("1969-12-31T23:59:59Z") == Date(timeIntervalSince1970: -1))
        #expect(PropertyListDate.parse("2001-13-01T00:00:00Z") == nil)
    }

    @Test("Files written by Python's plistlib read back, XML and binary")
    func pythonFiles() throws {
        let directory = TemporaryDirectory()
        let script = """
            import plistlib, datetime, sys
            value = {"s": "text ü", "i": 7, "big": 2**40, "neg": -3, "r": 1.5, "b": True, "d": b"\\x00\\x01",
                     "date": datetime.datetime(2020, 5, 17, 10, 30, 0), "a": [1, "x", {"k": False}], "e": {}}
            plistlib.dump(value, open(sys.argv[1] + "/x.plist", "wb"), fmt=plistlib.FMT_XML)
            plistlib.dump(value, open(sys.argv[1] + "/b.plist", "wb"), fmt=plistlib.FMT_BINARY)
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script, directory.path]
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let expected: PropertyList = [
            "s": "text ü", "i": 7, "big": .integer(1 << 40), "neg": -3, "r": 1.5, "b": true,
            "d": .data(Data([0, 1])), "date": .date(PropertyListDate.parse("2020-05-17T10:30:00Z")!),
            "a": [1, "x", ["k": false]], "e": [:],
        ]
        for (name, format) in [("x.plist", PropertyList.Format.xml), ("b.plist", .binary)] {
            let data = try Data(contentsOf: URL(fileURLWithPath: directory.file(name)))
            let decoded = try PropertyList.decode(data)
            #expect(decoded.format == format)
            #expect(decoded.value == expected)
        }
    }

    @Test("Files written here read back with Python's plistlib, XML and binary")
    func pythonReadsOurFiles() throws {
        let directory = TemporaryDirectory()
        let value: PropertyList = ["s": "ü <&>", "i": -5, "r": 0.25, "b": true, "a": ["x", 1], "d": .data(Data([9]))]
        for format in [PropertyList.Format.xml, .binary] {
            let path = directory.file("out.plist")
            try value.encoded(as: format).write(to: URL(fileURLWithPath: path))
            let json = try pythonPlist(
                path, expression: "{k: (v.hex() if isinstance(v, bytes) else v) for k, v in d.items()}")
            #expect(json == #"{"a": ["x", 1], "b": true, "d": "09", "i": -5, "r": 0.25, "s": "\u00fc <&>"}"#)
        }
    }

    @Test("XML variants: comments, CDATA, references, empty elements, no DOCTYPE")
    func xmlVariants() throws {
        let text = """
            <?xml version="1.0"?>
            <!-- a comment -->
            <plist version="1.0"><dict>
              <key>a&amp;b</key><string>x &lt; y &#x41;&#66;</string>
              <key>c</key><string><![CDATA[<raw>&]]></string>
              <key>e</key><string/>
              <key>f</key><array/>
              <key>g</key><dict/>
              <key>h</key><integer>0x1F</integer>
              <key>i</key><real>-infinity</real>
              <key>j</key><true></true>
            </dict></plist>
            """
        let value = try PropertyList(parsing: text)
        #expect(
            value == [
                "a&b": "x < y AB", "c": "<raw>&", "e": "", "f": [], "g": [:], "h": 31, "i": .real(-.infinity),
                "j": true,
            ])
    }

    @Test(
        "XML integers: the byte-level fast path and the general rules agree",
        arguments: [
            ("42", PropertyList.integer(42)), ("  -42\n", -42), ("+7", 7), ("-0", 0), ("0x1F", 31), ("-0x10", -16),
            ("123456789012345678", 123_456_789_012_345_678), ("1234567890123456789", 1_234_567_890_123_456_789),
            ("9223372036854775807", .integer(Int.max)), ("-9223372036854775808", .integer(Int.min)),
            ("18446744073709551615", .real(Double(UInt64.max))), ("&#x31;2", 12), ("1<!-- c -->2", 12),
        ] as [(String, PropertyList)])
    func xmlIntegers(text: String, expected: PropertyList) throws {
        #expect(try PropertyList(parsing: "<plist><integer>\(text)</integer></plist>") == expected)
        #expect(try PropertyList(parsing: "<dict><key>k</key><integer>\(text)</integer></dict>") == ["k": expected])
    }

    @Test(
        "XML integers that are not integers are errors", arguments: ["", "-", "1 2", "12x", "--1", "0x", "1.5", "١٢"])
    func xmlBadIntegers(text: String) {
        #expect(throws: PropertyListError.self) {
            try PropertyList(parsing: "<plist><integer>\(text)</integer></plist>")
        }
    }

    @Test("A repeated key in an XML dictionary keeps its last value")
    func xmlRepeatedKey() throws {
        let value = try PropertyList(
            parsing: "<dict><key>k</key><integer>1</integer><key>k</key><integer>2</integer></dict>")
        #expect(value == ["k": 2])
    }

    // MARK: Hostile input

    @Test("A cyclic binary property list is an error, not a crash or a hang")
    func binaryCycle() {
        // Object 0: an array containing object 0.
        let bytes: [UInt8] =
            Array("bplist00".utf8) + [0xA1, 0x00] + [0x08] + [0, 0, 0, 0, 0, 0, 1, 1]
            + [0, 0, 0, 0, 0, 0, 0, 1] + [0, 0, 0, 0, 0, 0, 0, 0] + [0, 0, 0, 0, 0, 0, 0, 10]
        #expect(throws: PropertyListError.cyclicReference(object: 0)) { try PropertyList.decode(Data(bytes)) }
    }

    @Test("A binary dictionary that contains itself through another object is an error")
    func binaryIndirectCycle() {
        // 0: dict {1: 2}, 1: "k", 2: array [0].
        let objects: [[UInt8]] = [[0xD1, 0x01, 0x02], [0x51, 0x6B], [0xA1, 0x00]]
        #expect(throws: PropertyListError.cyclicReference(object: 0)) {
            try PropertyList.decode(Self.binary(objects, top: 0))
        }
    }

    @Test("Shared references decode once; a fan-out that expands past the limit is an error, not a hang")
    func binarySharedReferences() throws {
        // Object i is an array holding object i+1 twice: `levels` levels expand to 2^levels leaves.
        func fanOut(_ levels: Int) -> Data {
            var objects: [[UInt8]] = []
            for index in 0..<levels { objects.append([0xA2, UInt8(index + 1), UInt8(index + 1)]) }
            objects.append([0x10, 0x01])
            return Self.binary(objects, top: 0)
        }
        let small = try PropertyList.decode(fanOut(12)).value
        #expect(small.depth == 13)
        #expect(try small.encoded(as: .binary).count > 0)
        #expect(
            throws: PropertyListError.tooManyObjects(
                limit: PropertyListLimits.expandedObjectLimit(forFileSize: fanOut(60).count))
        ) {
            try PropertyList.decode(fanOut(60))
        }
    }

    @Test("Text is never taken for a binary file, bytes that start like one always are")
    func binaryPrefixes() throws {
        #expect(try PropertyList(parsing: "b") == "b")
        #expect(try PropertyList(parsing: "bplist") == "bplist")
        #expect(throws: PropertyListError.self) { try PropertyList.decode(Data("bp".utf8)) }
    }

    @Test("Nesting deeper than the limit is an error in every format")
    func nestingLimit() {
        let depth = PropertyListLimits.maximumDepth + 1
        let xml =
            "<plist>" + String(repeating: "<array>", count: depth) + String(repeating: "</array>", count: depth)
            + "</plist>"
        #expect(throws: PropertyListError.nestingTooDeep(limit: PropertyListLimits.maximumDepth)) {
            try PropertyList(parsing: xml)
        }
        let openStep = String(repeating: "(", count: depth) + String(repeating: ")", count: depth)
        #expect(throws: PropertyListError.nestingTooDeep(limit: PropertyListLimits.maximumDepth)) {
            try PropertyList(parsing: openStep)
        }
        #expect(throws: PropertyListError.nestingTooDeep(limit: PropertyListLimits.maximumDepth)) {
            try PropertyList.decode(Self.binaryDeep(depth))
        }
        let allowed = PropertyListLimits.maximumDepth
        let okay =
            "<plist>" + String(repeating: "<array>", count: allowed) + String(repeating: "</array>", count: allowed)
            + "</plist>"
        #expect((try? PropertyList(parsing: okay))?.depth == allowed)
    }

    @Test("Every truncation of a valid file is an error, never a crash")
    func truncatedFiles() throws {
        for format in [PropertyList.Format.xml, .binary] {
            let data = try Self.sample.encoded(as: format)
            // Dropping only the trailing newline after `</plist>` leaves a complete document.
            var end = data.count
            while end > 0, data[end - 1] == UInt8(ascii: "\n") { end -= 1 }
            for length in 0..<end {
                let prefix = data.prefix(length)
                #expect(throws: PropertyListError.self, "\(format) cut at \(length)") {
                    try PropertyList.decode(Data(prefix))
                }
            }
        }
    }

    @Test("Bytes that are not a property list are an error")
    func garbage() {
        var generator = SystemRandomNumberGenerator()
        for length in [1, 7, 64, 4096] {
            for _ in 0..<50 {
                var bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
                if bytes.first == UInt8(ascii: "(") || bytes.first == UInt8(ascii: "{") { bytes[0] = 0xFF }
                // Random bytes may, rarely, spell a bare word: only assert that decoding never traps.
                _ = try? PropertyList.decode(Data(bytes))
            }
        }
        #expect(throws: PropertyListError.self) { try PropertyList.decode(Data([0xFF, 0xFE, 0x00, 0x01])) }
        #expect(throws: PropertyListError.self) { try PropertyList.decode(Data("<html><body>".utf8)) }
        #expect(throws: PropertyListError.self) { try PropertyList.decode(Data()) }
        #expect(throws: PropertyListError.self) { try PropertyList.decode(Data("bplist00garbage".utf8)) }
        #expect(throws: PropertyListError.self) {
            try PropertyList(parsing: "<plist><dict><key>a</key></dict></plist>")
        }
        #expect(throws: PropertyListError.self) { try PropertyList(parsing: "<plist><integer>12x</integer></plist>") }
    }

    @Test("Binary objects and offsets that point outside the file are errors")
    func binaryOutOfRange() {
        // A data object claiming 1 GiB.
        let huge: [[UInt8]] = [[0x4F, 0x13, 0, 0, 0, 0, 0x40, 0, 0, 0]]
        #expect(throws: PropertyListError.self) { try PropertyList.decode(Self.binary(huge, top: 0)) }
        // An array referring to object 9 of 1.
        #expect(throws: PropertyListError.self) { try PropertyList.decode(Self.binary([[0xA1, 0x09]], top: 0)) }
        // A UID (keyed archives only).
        #expect(throws: PropertyListError.unsupportedObject("a keyed-archiver UID")) {
            try PropertyList.decode(Self.binary([[0x80, 0x01]], top: 0))
        }
    }

    @Test("Foundation values convert to property lists and back")
    func foundationBridging() throws {
        let value = try PropertyList(
            foundationValue: [
                "i": 1, "d": 2.5, "b": true, "s": "x", "n": NSNumber(value: false), "u8": UInt8(7),
                "a": [1, "y"] as [Any],
            ] as [String: Any])
        #expect(value == ["i": 1, "d": 2.5, "b": true, "s": "x", "n": false, "u8": 7, "a": [1, "y"]])
        #expect(throws: PropertyListError.self) { try PropertyList(foundationValue: NSObject()) }
        #expect(throws: PropertyListError.self) { try PropertyList(foundationValue: [1: "non-string key"]) }
        let roundTrip = try PropertyList(foundationValue: value.foundationValue)
        #expect(roundTrip == value)
    }

    // MARK: Builders

    /// A binary property list of the given encoded objects, one-byte offsets and references.
    static func binary(_ objects: [[UInt8]], top: Int) -> Data {
        var bytes = Array("bplist00".utf8)
        var offsets: [Int] = []
        for object in objects {
            offsets.append(bytes.count)
            bytes += object
        }
        let table = bytes.count
        let offsetSize = table + 8 > 255 ? 2 : 1
        for offset in offsets {
            bytes += offsetSize == 2 ? [UInt8(offset >> 8), UInt8(offset & 0xFF)] : [UInt8(offset)]
        }
        bytes += [0, 0, 0, 0, 0, 0, UInt8(offsetSize), 1]
        bytes += withUnsafeBytes(of: UInt64(objects.count).bigEndian, Array.init)
        bytes += withUnsafeBytes(of: UInt64(top).bigEndian, Array.init)
        bytes += withUnsafeBytes(of: UInt64(table).bigEndian, Array.init)
        return Data(bytes)
    }

    /// A chain of single-element arrays `depth` deep (two-byte references and offsets).
    static func binaryDeep(_ depth: Int) -> Data {
        var bytes = Array("bplist00".utf8)
        var offsets: [Int] = []
        for index in 0..<depth {
            offsets.append(bytes.count)
            bytes += [0xA1, UInt8((index + 1) >> 8), UInt8((index + 1) & 0xFF)]
        }
        offsets.append(bytes.count)
        bytes += [0x09]
        let table = bytes.count
        for offset in offsets { bytes += [UInt8(offset >> 8), UInt8(offset & 0xFF)] }
        bytes += [0, 0, 0, 0, 0, 0, 2, 2]
        bytes += withUnsafeBytes(of: UInt64(offsets.count).bigEndian, Array.init)
        bytes += withUnsafeBytes(of: UInt64(0).bigEndian, Array.init)
        bytes += withUnsafeBytes(of: UInt64(table).bigEndian, Array.init)
        return Data(bytes)
    }
}

@Suite("Path components without NSString", .blockingWork)
struct PathComponentsTests {
    @Test(
        "directory(of:) and name(of:) agree with NSString",
        arguments: [
            "/a/b/c", "/a", "/", "", "a/b", "/a//b/", "///a", "/a/b//", "/tmp/x.plist", "./a", "/a/./b",
            "/home/user/.config/preferences/com.example.app.plist", "relative/dir/", "/é/ü.plist",
        ])
    func agreeWithNSString(_ path: String) {
        #expect(PathComponents.directory(of: path) == (path as NSString).deletingLastPathComponent, "\(path)")
        #expect(PathComponents.name(of: path) == (path as NSString).lastPathComponent, "\(path)")
    }

    @Test("absolute(_:in:) keeps an absolute path and puts a relative one under the working directory")
    func absolutePaths() {
        #expect(PathComponents.absolute("/run/secrets/key", in: "/srv") == "/run/secrets/key")
        #expect(PathComponents.absolute("secrets/key", in: "/srv") == "/srv/secrets/key")
        #expect(PathComponents.absolute("key", in: "/") == "/key")
    }

    @Test("joined(_:) is the parts one after another: empty, small, long, non-ASCII and bridged parts")
    func joinedParts() {
        let long = String(repeating: "directory/", count: 40)
        let bridged = NSString(string: "/bridged/ü").substring(from: 0)
        let cases: [[String]] = [
            [], [""], ["", ""], ["/a"], ["/a", "/", "b", ".plist"], [long, "/", "com.example.app", ".plist"],
            ["/é", "/ü", "", "/日本語.plist"], [bridged, "/x"], ["a", "", "b", "", "c"],
        ]
        for parts in cases {
            let joined = PathComponents.joined(parts)
            #expect(joined == parts.joined(), "\(parts)")
            #expect(joined.utf8.count == parts.reduce(0) { $0 + $1.utf8.count })
        }
    }

    @Test("The user name is the one given, else the current user's, worked out when asked")
    func userNameGivenOrCurrent() {
        var locations = DefaultsLocations(userDirectory: "/tmp/x", managedDirectory: "/etc/managed")
        #expect(locations.userName == DefaultsLocations.currentUserName)
        #expect(locations.path(forDomain: "a", layer: .managedUser) == "/etc/managed/\(locations.userName)/a.plist")
        locations.userName = "someone"
        #expect(locations.path(forDomain: "a", layer: .managedUser) == "/etc/managed/someone/a.plist")
        #expect(DefaultsLocations(userDirectory: "/tmp/x", userName: "other").userName == "other")
    }

    @Test("A layer's directory is the directory of each of its files", arguments: PreferenceLayer.allCases)
    func layerDirectory(_ layer: PreferenceLayer) {
        for locations in [
            DefaultsLocations.rooted(at: "/tmp/livedefaults-root"),
            DefaultsLocations(
                userDirectory: "/home/ü/.config", anyUserDirectory: "/usr/local/etc", managedDirectory: "/etc/managed",
                userName: "someone", hostIdentifier: "host-1"),
        ] {
            for domain in ["com.example.app", DomainName.global, "a"] {
                let path = locations.path(forDomain: domain, layer: layer)
                #expect(locations.directory(of: layer) == PathComponents.directory(of: path), "\(path)")
            }
        }
    }

    /// Not compared with NSString: its `deletingLastPathComponent` trapped here on the literal `"a"`
    /// (swift-corelibs-foundation, Swift 6.3.1: "Illegal instruction" in `String._startOfLastPathComponent`;
    /// the same name read from the command line did not).
    @Test("a single relative name has no directory and is its own name")
    func relativeName() {
        #expect(PathComponents.directory(of: "a") == "")
        #expect(PathComponents.name(of: "a") == "a")
        #expect(PathComponents.directory(of: "a/") == "")
        #expect(PathComponents.name(of: "a/") == "a")
        // NSString says "" for both; the root it is.
        #expect(PathComponents.directory(of: "//") == "/")
        #expect(PathComponents.name(of: "//") == "/")
    }
}
