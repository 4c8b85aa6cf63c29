import Foundation
import Testing

@testable import LiveDefaults

@Suite("Codable to property-list structure")
struct PropertyListCodingTests {
    struct Everything: Codable, Equatable {
        var bool = true
        var int = -5
        var int8: Int8 = -8
        var uint32: UInt32 = 32
        var uint64: UInt64 = 64
        var double = 2.5
        var float: Float = 0.5
        var string = "s"
        var date = Date(timeIntervalSince1970: 1_000)
        var data = Data([7])
        var url = URL(string: "https://example.com/x")!
        var uuid = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!
        var optional: String? = nil
        var array = [[1, 2], [3]]
        var dictionary = ["a": ["b": true]]
        var intKeys = [1: "one"]
        var nested = Inner(kind: .wait(seconds: 3))
    }

    struct Inner: Codable, Equatable {
        var kind: Action
    }

    class Base: Codable {
        var base = 1
    }

    final class Derived: Base, @unchecked Sendable {
        var extra = 2
        override init() { super.init() }
        required init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Keys.self)
            extra = try container.decode(Int.self, forKey: .extra)
            try super.init(from: container.superDecoder())
        }
        enum Keys: CodingKey { case extra }
        override func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(extra, forKey: .extra)
            try super.encode(to: container.superEncoder())
        }
    }

    @Test("Every kind of value round-trips, as native structure")
    func everything() throws {
        let value = Everything()
        let encoded = try PropertyListValueEncoder().encode(value)
        guard case .dictionary(let entries) = encoded else {
            Issue.record("not a dictionary: \(encoded)")
            return
        }
        #expect(entries["date"] == .date(value.date))
        #expect(entries["data"] == .data(Data([7])))
        #expect(entries["url"] == "https://example.com/x")
        #expect(entries["uuid"] == "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")
        #expect(entries["optional"] == nil, "nil optionals are left out")
        #expect(entries["array"] == [[1, 2], [3]])
        #expect(entries["nested"] == ["kind": ["wait": ["seconds": 3]]])
        #expect(try PropertyListValueDecoder().decode(Everything.self, from: encoded) == value)
        // And through a file in both formats.
        for format in [PropertyList.Format.xml, .binary] {
            let reread = try PropertyList.decode(encoded.encoded(as: format)).value
            #expect(try PropertyListValueDecoder().decode(Everything.self, from: reread) == value)
        }
    }

    @Test("Top-level scalars, arrays, super encoders")
    func shapes() throws {
        let encoder = PropertyListValueEncoder()
        let decoder = PropertyListValueDecoder()
        #expect(try encoder.encode(42) == 42)
        #expect(try encoder.encode(["x"]) == ["x"])
        #expect(try decoder.decode([Int].self, from: [1, "2", 3.0]) == [1, 2, 3])
        let derived = try encoder.encode(Derived())
        #expect(derived == ["extra": 2, "super": ["base": 1]])
        let back = try decoder.decode(Derived.self, from: derived)
        #expect(back.extra == 2 && back.base == 1)
    }

    @Test("Large containers keep their order and contents; a set is sorted the same way every time")
    func largeContainers() throws {
        // 100,000 elements: each container grows in place (it was copied out and back for every element,
        // 45 s for this array; see Docs/Benchmarks.md).
        let numbers = Array(0..<100_000)
        let encoded = try PropertyListValueEncoder().encode(numbers)
        #expect(encoded == .array(numbers.map { .integer($0) }))
        let table = Dictionary(uniqueKeysWithValues: (0..<20_000).map { ("k\($0)", $0) })
        #expect(
            try PropertyListValueDecoder().decode([String: Int].self, from: PropertyListValueEncoder().encode(table))
                == table)
        let words = Set((0..<5_000).map { "w\($0)" })
        let first = try PropertyListValueEncoder().encode(words)
        let second = try PropertyListValueEncoder().encode(Set(words.shuffled()))
        #expect(first == second)
        guard case .array(let elements) = first else {
            Issue.record("a set encodes as an array")
            return
        }
        let texts = elements.map { "\($0)" }
        #expect(texts == texts.sorted())
        #expect(Set(elements.compactMap(\.stringValue)) == words)
    }

    @Test("Strings decode as Bool and Date by the library's one rule for each (the defaults command's too)")
    func textRules() throws {
        let decoder = PropertyListValueDecoder()
        for (text, expected) in [
            ("YES", true), (" true ", true), ("1", true), ("no", false), ("FALSE", false), ("0", false),
        ] {
            #expect(PropertyList.bool(fromText: text) == expected)
            #expect(try decoder.decode(Bool.self, from: .string(text)) == expected)
        }
        #expect(PropertyList.bool(fromText: "maybe") == nil)
        #expect(throws: (any Error).self) { try decoder.decode(Bool.self, from: "maybe") }
        let texts = ["2024-01-31T09:05:00Z", "2024-01-31T10:05:00+01:00", "2024-01-31 09:05:00 +0000"]
        for text in texts {
            #expect(
                try decoder.decode(Date.self, from: .string(text)) == Date(timeIntervalSince1970: 1_706_691_900),
                "\(text)")
        }
        #expect(throws: (any Error).self) { try decoder.decode(Date.self, from: "last Tuesday") }
    }

    @Test("What a property list cannot hold is an encoding error")
    func encodingErrors() {
        #expect(throws: EncodingError.self) { try PropertyListValueEncoder().encode(UInt64.max) }
        #expect(throws: EncodingError.self) { try PropertyListValueEncoder().encode([1, nil] as [Int?]) }
        #expect(throws: EncodingError.self) { try PropertyListValueEncoder().encode(Int?.none) }
    }

    @Test("Wrong shapes are decoding errors naming the path")
    func decodingErrors() throws {
        let decoder = PropertyListValueDecoder()
        do {
            _ = try decoder.decode(Inner.self, from: ["kind": ["wait": ["seconds": "soon"]]])
            Issue.record("decoded a string as seconds")
        } catch let DecodingError.typeMismatch(_, context) {
            #expect(context.codingPath.map(\.stringValue) == ["kind", "wait", "seconds"])
            #expect(context.debugDescription.contains("soon"))
        }
        #expect(throws: DecodingError.self) { try decoder.decode(Int8.self, from: 300) }
        #expect(throws: DecodingError.self) { try decoder.decode(Everything.self, from: ["bool": true]) }
        #expect(throws: DecodingError.self) { try decoder.decode([String].self, from: "not an array") }
        #expect(throws: DecodingError.self) { try decoder.decode(Bool.self, from: "maybe") }
        #expect(try decoder.decode(Bool.self, from: "YES") == true)
        #expect(try decoder.decode(Date.self, from: "1970-01-01T00:16:40Z") == Date(timeIntervalSince1970: 1_000))
    }
}
