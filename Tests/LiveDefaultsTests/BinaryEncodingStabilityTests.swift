import Foundation
import Testing

@testable import LiveDefaults

/// The binary writer's bytes are part of the on-disk format beyond the files themselves: the change log holds
/// each value's digest of its binary encoding (checkpoints, entries), and a process compares the digests it
/// computes with those an earlier version of the library wrote. So a faster writer must write the very same
/// bytes; these tests pin them.
@Suite("Binary property lists: the same bytes as every earlier version wrote")
struct BinaryEncodingStabilityTests {
    @Test("2,000 generated values of every kind, nested: their encodings hash as they always have")
    func generated() throws {
        // The suites' seeded generator of every kind of value (PlistlibAgreementTests), nested.
        var values = ValueGenerator(seed: 42)
        var all = Data()
        for _ in 0..<2_000 { all.append(try values.value(depth: 0).encoded(as: .binary)) }
        for _ in 0..<200 { all.append(try values.domain().encoded(as: .binary)) }
        #expect(all.count == Self.expectedCount)
        #expect(FastHash.hash(all) == Self.expectedDigest)
    }

    /// What the writer wrote before it was rewritten for speed (the same test, run on that writer).
    static let expectedCount = 169_894
    static let expectedDigest: UInt64 = 15_516_964_487_648_104_124

    @Test("large objects: more than 255 objects (2-byte references) and offsets past 65,535 (4-byte offsets)")
    func wide() throws {
        let many = PropertyList.array((0..<300).map { .string("s\($0)") })
        let long = PropertyList.array((0..<40).map { _ in .data(Data(repeating: 0xAB, count: 2_000)) })
        let encodedMany = try many.encoded(as: .binary)
        let encodedLong = try long.encoded(as: .binary)
        #expect(encodedMany.count == Self.expectedManyCount)
        #expect(FastHash.hash(encodedMany) == Self.expectedMany)
        #expect(encodedLong.count == Self.expectedLongCount)
        #expect(FastHash.hash(encodedLong) == Self.expectedLong)
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
