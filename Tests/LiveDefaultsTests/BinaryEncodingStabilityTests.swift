import Foundation
import Testing

@testable import LiveDefaults

/// The binary writer's bytes are part of the on-disk format beyond the files themselves: the change log holds
/// each value's digest of its binary encoding (checkpoints, entries), and a process compares the digests it
/// computes with those an earlier version of the library wrote. So a faster writer must write the very same
/// bytes; these tests pin them.
@Suite("Binary property lists: the same bytes as every earlier version wrote")
struct BinaryEncodingStabilityTests {
    /// A deterministic generator (SplitMix64), so the values are the same on every run and machine.
    struct Values {
        var state: UInt64

        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }

        mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }

        mutating func string() -> String {
            let alphabets: [[Character]] = [
                Array("abcKey_ 0123"), Array("é€日本😀\u{0}\n\""), Array("a"),
            ]
            let alphabet = alphabets[below(alphabets.count)]
            return String((0..<below(40)).map { _ in alphabet[below(alphabet.count)] })
        }

        mutating func integer() -> Int {
            switch below(6) {
            case 0: below(0x100)
            case 1: 0xFF + below(3)
            case 2: 0xFFFF + below(3) - 1
            case 3: 0xFFFF_FFFF + below(3) - 1
            case 4: -below(1_000_000) - 1
            default: Int(bitPattern: UInt(next()))
            }
        }

        mutating func value(depth: Int) -> PropertyList {
            switch below(depth > 2 ? 7 : 9) {
            case 0: .integer(integer())
            case 1: .real(Double(bitPattern: next() & 0x7FEF_FFFF_FFFF_FFFF))
            case 2: .bool(below(2) == 0)
            case 3: .date(Date(timeIntervalSinceReferenceDate: Double(Int32(truncatingIfNeeded: next()))))
            case 4: .data(Data((0..<[0, 14, 15, 16, 300][below(5)]).map { UInt8(truncatingIfNeeded: $0 &* 7) }))
            case 5, 6: .string(string())
            case 7: .array((0..<[0, 3, 15, 40][below(4)]).map { _ in value(depth: depth + 1) })
            default:
                .dictionary(
                    Dictionary(
                        (0..<[0, 2, 14, 20][below(4)]).map { _ in (string(), value(depth: depth + 1)) },
                        uniquingKeysWith: { first, _ in first }))
            }
        }
    }

    @Test("2,000 generated values of every kind, nested: their encodings hash as they always have")
    func generated() throws {
        var values = Values(state: 42)
        var all = Data()
        for _ in 0..<2_000 { all.append(try values.value(depth: 0).encoded(as: .binary)) }
        #expect(all.count == Self.expectedCount)
        #expect(ChangeLog.digest(all) == Self.expectedDigest)
    }

    /// What the writer wrote before it was rewritten for speed (the same test, run on that writer).
    static let expectedCount = 1_811_490
    static let expectedDigest: UInt64 = 11_694_775_728_968_441_805

    @Test("large objects: more than 255 objects (2-byte references) and offsets past 65,535 (4-byte offsets)")
    func wide() throws {
        let many = PropertyList.array((0..<300).map { .string("s\($0)") })
        let long = PropertyList.array((0..<40).map { _ in .data(Data(repeating: 0xAB, count: 2_000)) })
        let encodedMany = try many.encoded(as: .binary)
        let encodedLong = try long.encoded(as: .binary)
        #expect(encodedMany.count == Self.expectedManyCount)
        #expect(ChangeLog.digest(encodedMany) == Self.expectedMany)
        #expect(encodedLong.count == Self.expectedLongCount)
        #expect(ChangeLog.digest(encodedLong) == Self.expectedLong)
        #expect(try PropertyList.decode(encodedMany).value == many)
        #expect(try PropertyList.decode(encodedLong).value == long)
    }

    static let expectedManyCount = 2_636
    static let expectedMany: UInt64 = 12_726_602_839_804_032_174
    static let expectedLongCount = 80_407
    static let expectedLong: UInt64 = 3_817_710_159_245_145_421

    @Test("scalars, byte for byte")
    func scalars() throws {
        let trailer: (Int) -> [UInt8] = { offsetTable in
            [0, 0, 0, 0, 0, 0, 1, 1] + [0, 0, 0, 0, 0, 0, 0, 1] + [0, 0, 0, 0, 0, 0, 0, 0]
                + [0, 0, 0, 0, 0, 0, 0, UInt8(offsetTable)]
        }
        let magic = Array("bplist00".utf8)
        #expect(Array(try PropertyList.integer(5).encoded(as: .binary)) == magic + [0x10, 5, 8] + trailer(10))
        #expect(Array(try PropertyList.bool(true).encoded(as: .binary)) == magic + [0x09, 8] + trailer(9))
        #expect(
            Array(try PropertyList.string("ab").encoded(as: .binary)) == magic + [0x52, 0x61, 0x62, 8] + trailer(11))
    }
}
