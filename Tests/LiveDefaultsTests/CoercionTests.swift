import Foundation
import TestProcesses
import Testing

@testable import LiveDefaults

/// Every typed getter against every kind of stored value, as the seeds (and `NSString`'s conversions)
/// define them.
@Suite("Getters: the seeds' coercions, table-driven", .blockingWork)
struct CoercionTests {
    /// What each getter returns for one stored value.
    struct Row: Sendable, CustomStringConvertible {
        let stored: PropertyList?
        let string: String?
        let integer: Int
        let double: Double
        let bool: Bool
        let array: Bool
        let dictionary: Bool
        let data: Bool
        let stringArray: [String]?
        var description: String { stored.map { "\($0)" } ?? "missing" }
    }

    static let date = Date(timeIntervalSince1970: 1_700_000_000)

    static let rows: [Row] = [
        Row(
            stored: nil, string: nil, integer: 0, double: 0, bool: false, array: false, dictionary: false, data: false,
            stringArray: nil),
        Row(
            stored: "YES", string: "YES", integer: 0, double: 0, bool: true, array: false, dictionary: false,
            data: false, stringArray: nil),
        Row(
            stored: "yes", string: "yes", integer: 0, double: 0, bool: true, array: false, dictionary: false,
            data: false, stringArray: nil),
        Row(
            stored: "true", string: "true", integer: 0, double: 0, bool: true, array: false, dictionary: false,
            data: false, stringArray: nil),
        Row(
            stored: "NO", string: "NO", integer: 0, double: 0, bool: false, array: false, dictionary: false,
            data: false, stringArray: nil),
        Row(
            stored: "false", string: "false", integer: 0, double: 0, bool: false, array: false, dictionary: false,
            data: false, stringArray: nil),
        Row(
            stored: "42", string: "42", integer: 42, double: 42, bool: true, array: false, dictionary: false,
            data: false, stringArray: nil),
        Row(
            stored: "  -17xyz", string: "  -17xyz", integer: -17, double: -17, bool: true, array: false,
            dictionary: false, data: false, stringArray: nil),
        Row(
            stored: "2.75", string: "2.75", integer: 2, double: 2.75, bool: true, array: false, dictionary: false,
            data: false, stringArray: nil),
        Row(
            stored: "1e3", string: "1e3", integer: 1, double: 1000, bool: true, array: false, dictionary: false,
            data: false, stringArray: nil),
        Row(
            stored: "0", string: "0", integer: 0, double: 0, bool: false, array: false, dictionary: false, data: false,
            stringArray: nil),
        Row(
            stored: "007", string: "007", integer: 7, double: 7, bool: true, array: false, dictionary: false,
            data: false, stringArray: nil),
        Row(
            stored: "abc", string: "abc", integer: 0, double: 0, bool: false, array: false, dictionary: false,
            data: false, stringArray: nil),
        Row(
            stored: "", string: "", integer: 0, double: 0, bool: false, array: false, dictionary: false, data: false,
            stringArray: nil),
        Row(
            stored: "99999999999999999999", string: "99999999999999999999", integer: Int.max, double: 1e20, bool: true,
            array: false, dictionary: false, data: false, stringArray: nil),
        Row(
            stored: 42, string: "42", integer: 42, double: 42, bool: true, array: false, dictionary: false, data: false,
            stringArray: nil),
        Row(
            stored: 0, string: "0", integer: 0, double: 0, bool: false, array: false, dictionary: false, data: false,
            stringArray: nil),
        Row(
            stored: -3, string: "-3", integer: -3, double: -3, bool: true, array: false, dictionary: false, data: false,
            stringArray: nil),
        Row(
            stored: 2.9, string: "2.9", integer: 2, double: 2.9, bool: true, array: false, dictionary: false,
            data: false, stringArray: nil),
        Row(
            stored: -2.9, string: "-2.9", integer: -2, double: -2.9, bool: true, array: false, dictionary: false,
            data: false, stringArray: nil),
        Row(
            stored: 0.0, string: "0.0", integer: 0, double: 0, bool: false, array: false, dictionary: false,
            data: false, stringArray: nil),
        Row(
            stored: 1e300, string: "1e+300", integer: Int.max, double: 1e300, bool: true, array: false,
            dictionary: false, data: false, stringArray: nil),
        Row(
            stored: true, string: "1", integer: 1, double: 1, bool: true, array: false, dictionary: false, data: false,
            stringArray: nil),
        Row(
            stored: false, string: "0", integer: 0, double: 0, bool: false, array: false, dictionary: false,
            data: false, stringArray: nil),
        Row(
            stored: .date(date), string: nil, integer: 0, double: 0, bool: false, array: false, dictionary: false,
            data: false, stringArray: nil),
        Row(
            stored: .data(Data([1, 2])), string: nil, integer: 0, double: 0, bool: false, array: false,
            dictionary: false, data: true, stringArray: nil),
        Row(
            stored: ["a", "b"], string: nil, integer: 0, double: 0, bool: false, array: true, dictionary: false,
            data: false, stringArray: ["a", "b"]),
        Row(
            stored: ["a", 1], string: nil, integer: 0, double: 0, bool: false, array: true, dictionary: false,
            data: false, stringArray: nil),
        Row(
            stored: [], string: nil, integer: 0, double: 0, bool: false, array: true, dictionary: false, data: false,
            stringArray: []),
        Row(
            stored: ["k": 1], string: nil, integer: 0, double: 0, bool: false, array: false, dictionary: true,
            data: false, stringArray: nil),
    ]

    @Test("Each getter converts each stored type as Foundation does", arguments: rows)
    func getters(_ row: Row) throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store()
        if let stored = row.stored { defaults.set(stored, forKey: "K") }
        #expect(defaults.string(forKey: "K") == row.string)
        #expect(defaults.integer(forKey: "K") == row.integer)
        #expect(defaults.double(forKey: "K") == row.double)
        #expect(defaults.float(forKey: "K") == Float(row.double))
        #expect(defaults.bool(forKey: "K") == row.bool)
        #expect((defaults.array(forKey: "K") != nil) == row.array)
        #expect((defaults.dictionary(forKey: "K") != nil) == row.dictionary)
        #expect((defaults.data(forKey: "K") != nil) == row.data)
        #expect(defaults.stringArray(forKey: "K") == row.stringArray)
        #expect((defaults.object(forKey: "K") != nil) == (row.stored != nil))
        #expect(defaults.value(forKey: "K") == row.stored)
    }

    @Test("A key read before answers the scalar getters from the value cache exactly as its first read did")
    func cachedScalarReads() throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store()
        // Every stored kind after every other (the cache's slot changes kind: scalar, boxed, missing), each
        // read three times: the first read fills the cache, the later ones take the scalar path.
        var generator = SystemRandomNumberGenerator()
        let order = Self.rows + Self.rows.shuffled(using: &generator) + Self.rows.reversed()
        for row in order {
            if let stored = row.stored { defaults.set(stored, forKey: "K") } else { defaults.removeObject(forKey: "K") }
            for _ in 0..<3 {
                #expect(defaults.integer(forKey: "K") == row.integer, "\(row)")
                #expect(defaults.double(forKey: "K") == row.double, "\(row)")
                #expect(defaults.bool(forKey: "K") == row.bool, "\(row)")
                #expect(defaults.value(forKey: "K") == row.stored, "\(row)")
            }
        }
        // Extremes of the payload survive the slot: the largest and smallest integers, a negative zero.
        for (value, integer) in [(Int.max, Int.max), (Int.min, Int.min), (-1, -1)] {
            defaults.set(value, forKey: "N")
            #expect(defaults.integer(forKey: "N") == integer)
            #expect(defaults.integer(forKey: "N") == integer)
        }
        defaults.set(-0.0, forKey: "Z")
        _ = defaults.double(forKey: "Z")
        #expect(defaults.double(forKey: "Z").sign == .minus)
    }

    @Test("object(forKey:) returns Foundation types")
    func objects() throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store()
        defaults.set(["n": 1, "s": "x", "b": true, "a": [2.5]] as [String: Any], forKey: "Dict")
        let dictionary = try #require(defaults.object(forKey: "Dict") as? [String: Any])
        #expect(dictionary["n"] as? Int == 1)
        #expect(dictionary["s"] as? String == "x")
        #expect(dictionary["b"] as? Bool == true)
        #expect((dictionary["a"] as? [Any])?.first as? Double == 2.5)
        defaults.set(Self.date, forKey: "Date")
        #expect(defaults.object(forKey: "Date") as? Date == Self.date)
    }

    @Test("The typed setters store the matching property-list type")
    func setters() throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store()
        defaults.set(7, forKey: "Int")
        defaults.set(Float(1.5), forKey: "Float")
        defaults.set(2.25, forKey: "Double")
        defaults.set(true, forKey: "Bool")
        defaults.set("s", forKey: "String")
        defaults.set(Self.date, forKey: "Date")
        defaults.set(Data([9]), forKey: "Data")
        defaults.set(["x", "y"] as Any, forKey: "Array")
        #expect(defaults.value(forKey: "Int") == .integer(7))
        #expect(defaults.value(forKey: "Float") == .real(1.5))
        #expect(defaults.value(forKey: "Double") == .real(2.25))
        #expect(defaults.value(forKey: "Bool") == .bool(true))
        #expect(defaults.value(forKey: "String") == .string("s"))
        #expect(defaults.value(forKey: "Date") == .date(Self.date))
        #expect(defaults.value(forKey: "Data") == .data(Data([9])))
        #expect(defaults.value(forKey: "Array") == ["x", "y"])
        defaults.removeObject(forKey: "Int")
        #expect(defaults.object(forKey: "Int") == nil)
        #expect(defaults.integer(forKey: "Int") == 0)
    }

    @Test("A value of any Foundation type, passed as Any, is stored as its own type says (NSNumber's Booleans too)")
    func untypedValues() throws {
        let cases: [(Any, PropertyList)] = [
            (7, .integer(7)), ("s", .string("s")), (true, .bool(true)), (2.25, .real(2.25)),
            (Substring("sub"), .string("sub")), (Float(1.5), .real(1.5)), (Int32(-3), .integer(-3)),
            (NSNumber(value: true), .bool(true)), (NSNumber(value: 5), .integer(5)),
            (NSNumber(value: 0.5), .real(0.5)), (NSString(string: "ns"), .string("ns")),
            (Data([1]), .data(Data([1]))), (["a", 1] as [Any], ["a", 1]),
        ]
        for (value, expected) in cases {
            #expect(try Defaults.storedValue(forFoundationValue: value) == expected, "\(type(of: value))")
        }
        // The same through a transaction's `set(_: Any?, forKey:)`.
        let directory = TemporaryDirectory()
        let defaults = try directory.store()
        try defaults.transaction { tx in
            for (index, (value, _)) in cases.enumerated() { tx.set(value as Any?, forKey: "Key\(index)") }
        }
        for (index, (_, expected)) in cases.enumerated() { #expect(defaults.value(forKey: "Key\(index)") == expected) }
    }

    @Test("URLs: file URLs stored as tilde-abbreviated paths, other URLs archived, ~ expanded on read")
    func urls() throws {
        let directory = TemporaryDirectory()
        let defaults = try directory.store()
        let home = NSHomeDirectory()
        defaults.set(URL(fileURLWithPath: home + "/Documents/report.txt"), forKey: "InHome")
        #expect(defaults.string(forKey: "InHome") == "~/Documents/report.txt")
        #expect(defaults.url(forKey: "InHome")?.path == home + "/Documents/report.txt")
        #expect(defaults.url(forKey: "InHome")?.isFileURL == true)

        defaults.set(URL(fileURLWithPath: "/var/log/app.log"), forKey: "Elsewhere")
        #expect(defaults.string(forKey: "Elsewhere") == "/var/log/app.log")
        #expect(defaults.url(forKey: "Elsewhere") == URL(fileURLWithPath: "/var/log/app.log"))

        let web = try #require(URL(string: "https://example.com/a?b=c"))
        defaults.set(web, forKey: "Web")
        #expect(defaults.data(forKey: "Web") != nil)
        #expect(defaults.url(forKey: "Web") == web)

        defaults.set("~/notes", forKey: "Typed")
        #expect(defaults.url(forKey: "Typed")?.path == home + "/notes")
        defaults.set("https://swift.org", forKey: "WebString")
        #expect(defaults.url(forKey: "WebString")?.absoluteString == "https://swift.org")
        #expect(defaults.url(forKey: "Missing") == nil)
        defaults.set(42, forKey: "Number")
        #expect(defaults.url(forKey: "Number") == nil)
        defaults.set(URL?.none, forKey: "Web")
        #expect(defaults.object(forKey: "Web") == nil)
    }
}
