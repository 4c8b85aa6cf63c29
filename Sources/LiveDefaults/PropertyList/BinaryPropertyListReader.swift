import Foundation

/// Reads Apple's `bplist00` binary property-list format.
///
/// Binary property lists are an object table addressed by index, so a hostile file can point anywhere:
/// past the end, back into an enclosing container (a cycle), or at one shared container thousands of times
/// (exponential expansion). Every offset and count is checked against the file size before it is used,
/// containers on the current path are tracked to reject cycles, decoded objects are memoised so that shared
/// references cost nothing extra, and nesting is bounded by ``PropertyListLimits/maximumDepth``.
/// Memoising alone is not enough: a few hundred bytes of shared references can describe a value with 2^60
/// elements, which decodes quickly but hangs whoever walks it next (a writer, a diff, `description`). So the
/// expanded size of every object is counted too, and a value larger than
/// ``PropertyListLimits/expandedObjectLimit(forFileSize:)`` is rejected.
struct BinaryPropertyListReader {
    static let magic: [UInt8] = Array("bplist00".utf8)
    private static let trailerSize = 32

    private let bytes: [UInt8]
    private let objectReferenceSize: Int
    private let offsets: [Int]
    private var decoded: [PropertyList?]
    /// The number of values in the expanded tree of each decoded object (1 for a scalar).
    private var expandedSizes: [Int]
    private var onPath: [Bool]
    private let expandedLimit: Int

    static func read(_ data: Data) throws(PropertyListError) -> PropertyList {
        let bytes = [UInt8](data)
        guard bytes.count >= magic.count + trailerSize, bytes.starts(with: magic) else {
            throw .truncated("a binary property list needs a header and a 32-byte trailer")
        }
        let trailer = bytes.count - trailerSize
        let offsetSize = Int(bytes[trailer + 6])
        let referenceSize = Int(bytes[trailer + 7])
        let objectCount = Self.bigEndian(bytes, at: trailer + 8, size: 8)
        let topObject = Self.bigEndian(bytes, at: trailer + 16, size: 8)
        let tableOffset = Self.bigEndian(bytes, at: trailer + 24, size: 8)

        guard (1...8).contains(offsetSize), (1...8).contains(referenceSize) else {
            throw .malformed(offset: trailer, reason: "invalid offset or reference size in the trailer")
        }
        guard objectCount > 0, objectCount <= UInt64(trailer), topObject < objectCount else {
            throw .malformed(offset: trailer, reason: "invalid object count or top object in the trailer")
        }
        let count = Int(objectCount)
        guard tableOffset >= UInt64(magic.count), tableOffset < UInt64(trailer),
            count <= (trailer - Int(tableOffset)) / offsetSize
        else { throw .truncated("the offset table lies outside the file") }

        var offsets: [Int] = []
        offsets.reserveCapacity(count)
        for index in 0..<count {
            let offset = Self.bigEndian(bytes, at: Int(tableOffset) + index * offsetSize, size: offsetSize)
            guard offset >= UInt64(magic.count), offset < tableOffset else {
                throw .malformed(
                    offset: Int(tableOffset) + index * offsetSize,
                    reason: "object \(index) lies outside the object area")
            }
            offsets.append(Int(offset))
        }
        var reader = BinaryPropertyListReader(
            bytes: bytes, objectReferenceSize: referenceSize, offsets: offsets,
            decoded: Array(repeating: nil, count: count), onPath: Array(repeating: false, count: count),
            expandedLimit: PropertyListLimits.expandedObjectLimit(forFileSize: bytes.count))
        return try reader.object(Int(topObject), depth: 0)
    }

    private init(
        bytes: [UInt8], objectReferenceSize: Int, offsets: [Int], decoded: [PropertyList?], onPath: [Bool],
        expandedLimit: Int
    ) {
        self.expandedLimit = expandedLimit
        self.bytes = bytes
        self.objectReferenceSize = objectReferenceSize
        self.offsets = offsets
        self.decoded = decoded
        self.expandedSizes = Array(repeating: 1, count: decoded.count)
        self.onPath = onPath
    }

    /// Adds the expanded sizes of `references` to one (the container itself), failing past the limit.
    private func expandedSize(of references: some Sequence<Int>) throws(PropertyListError) -> Int {
        var total = 1
        for reference in references {
            total += expandedSizes[reference]
            guard total <= expandedLimit else { throw .tooManyObjects(limit: expandedLimit) }
        }
        return total
    }

    private var objectAreaEnd: Int { bytes.count - Self.trailerSize }

    private mutating func object(_ index: Int, depth: Int) throws(PropertyListError) -> PropertyList {
        guard index < offsets.count else {
            throw .malformed(offset: 0, reason: "reference to object \(index) of \(offsets.count)")
        }
        if let known = decoded[index] { return known }
        guard !onPath[index] else { throw .cyclicReference(object: index) }
        let start = offsets[index]
        let marker = bytes[start]
        let kind = marker >> 4
        let info = Int(marker & 0x0F)
        let value: PropertyList
        switch kind {
        case 0x0:
            switch info {
            case 0x8: value = .bool(false)
            case 0x9: value = .bool(true)
            default: throw .unsupportedObject("a null or fill object (marker 0x\(String(marker, radix: 16)))")
            }
        case 0x1:
            value = try integer(at: start + 1, sizeExponent: info)
        case 0x2:
            value = .real(try real(at: start + 1, sizeExponent: info))
        case 0x3:
            guard info == 3 else { throw malformed(start, "invalid date marker") }
            // Foundation's Date holds exactly this number; going through 1970 would round it.
            value = .date(Date(timeIntervalSinceReferenceDate: try real(at: start + 1, sizeExponent: 3)))
        case 0x4:
            let (length, body) = try count(info, at: start)
            try require(body, length, start)
            value = .data(Data(bytes[body..<(body + length)]))
        case 0x5:
            let (length, body) = try count(info, at: start)
            try require(body, length, start)
            value = .string(String(decoding: bytes[body..<(body + length)], as: UTF8.self))
        case 0x6:
            let (length, body) = try count(info, at: start)
            guard length <= Int.max / 2 else { throw malformed(start, "string length overflows") }
            try require(body, length * 2, start)
            var units: [UInt16] = []
            units.reserveCapacity(length)
            for unit in 0..<length {
                units.append(UInt16(bytes[body + 2 * unit]) << 8 | UInt16(bytes[body + 2 * unit + 1]))
            }
            value = .string(String(decoding: units, as: UTF16.self))
        case 0x8:
            throw .unsupportedObject("a keyed-archiver UID")
        case 0xA, 0xB, 0xC:
            // Arrays; ordered sets and sets read as arrays, as Foundation does.
            let references = try containerReferences(info, at: start, multiplier: 1)
            value = .array(try children(of: index, references, depth: depth))
            expandedSizes[index] = try expandedSize(of: references)
        case 0xD:
            let references = try containerReferences(info, at: start, multiplier: 2)
            let half = references.count / 2
            onPath[index] = true
            defer { onPath[index] = false }
            guard depth < PropertyListLimits.maximumDepth else {
                throw .nestingTooDeep(limit: PropertyListLimits.maximumDepth)
            }
            var entries: [String: PropertyList] = [:]
            entries.reserveCapacity(half)
            for pair in 0..<half {
                guard case .string(let key) = try object(references[pair], depth: depth + 1) else {
                    throw .unsupportedObject("a dictionary key that is not a string")
                }
                entries[key] = try object(references[half + pair], depth: depth + 1)
            }
            value = .dictionary(entries)
            expandedSizes[index] = try expandedSize(of: references[half...])
        default:
            throw malformed(start, "unknown object marker 0x\(String(marker, radix: 16))")
        }
        decoded[index] = value
        return value
    }

    private mutating func children(of index: Int, _ references: [Int], depth: Int) throws(PropertyListError)
        -> [PropertyList]
    {
        guard depth < PropertyListLimits.maximumDepth else {
            throw .nestingTooDeep(limit: PropertyListLimits.maximumDepth)
        }
        onPath[index] = true
        defer { onPath[index] = false }
        var elements: [PropertyList] = []
        elements.reserveCapacity(references.count)
        for reference in references { elements.append(try object(reference, depth: depth + 1)) }
        return elements
    }

    private func containerReferences(_ info: Int, at start: Int, multiplier: Int) throws(PropertyListError) -> [Int] {
        let (length, body) = try count(info, at: start)
        guard length <= (objectAreaEnd - body) / (objectReferenceSize * multiplier) else {
            throw .truncated("container at byte \(start) claims \(length) entries beyond the end")
        }
        var references: [Int] = []
        references.reserveCapacity(length * multiplier)
        for slot in 0..<(length * multiplier) {
            let reference = Self.bigEndian(bytes, at: body + slot * objectReferenceSize, size: objectReferenceSize)
            guard reference < UInt64(offsets.count) else {
                throw malformed(start, "reference to object \(reference) of \(offsets.count)")
            }
            references.append(Int(reference))
        }
        return references
    }

    /// The length of a data, string or container object and where its body starts; a length of 15 or more
    /// is stored as a following integer object.
    private func count(_ info: Int, at start: Int) throws(PropertyListError) -> (Int, Int) {
        if info != 0x0F { return (info, start + 1) }
        try require(start + 1, 1, start)
        let lengthMarker = bytes[start + 1]
        guard lengthMarker >> 4 == 0x1 else { throw malformed(start, "invalid length marker") }
        let size = 1 << Int(lengthMarker & 0x0F)
        guard size <= 8 else { throw malformed(start, "length field too wide") }
        try require(start + 2, size, start)
        let length = Self.bigEndian(bytes, at: start + 2, size: size)
        guard length <= UInt64(objectAreaEnd) else {
            throw .truncated("object at byte \(start) claims \(length) bytes")
        }
        return (Int(length), start + 2 + size)
    }

    private func integer(at body: Int, sizeExponent: Int) throws(PropertyListError) -> PropertyList {
        guard sizeExponent <= 4 else { throw malformed(body - 1, "integer wider than 16 bytes") }
        let size = 1 << sizeExponent
        try require(body, size, body - 1)
        switch size {
        case 1, 2, 4: return .integer(Int(Self.bigEndian(bytes, at: body, size: size)))
        case 8: return .integer(Int(Int64(bitPattern: Self.bigEndian(bytes, at: body, size: 8))))
        default:
            // 16 bytes: CF writes unsigned 64-bit values this way (high half zero) and negative ones sign-extended.
            let high = Self.bigEndian(bytes, at: body, size: 8)
            let low = Self.bigEndian(bytes, at: body + 8, size: 8)
            if high == 0 { return low <= UInt64(Int.max) ? .integer(Int(low)) : .real(Double(low)) }
            if high == UInt64.max, low > UInt64(Int.max) { return .integer(Int(Int64(bitPattern: low))) }
            return .real(Double(Int64(bitPattern: high)) * 18_446_744_073_709_551_616.0 + Double(low))
        }
    }

    private func real(at body: Int, sizeExponent: Int) throws(PropertyListError) -> Double {
        switch sizeExponent {
        case 2:
            try require(body, 4, body - 1)
            return Double(Float(bitPattern: UInt32(Self.bigEndian(bytes, at: body, size: 4))))
        case 3:
            try require(body, 8, body - 1)
            return Double(bitPattern: Self.bigEndian(bytes, at: body, size: 8))
        default:
            throw malformed(body - 1, "invalid real width")
        }
    }

    private func require(_ start: Int, _ length: Int, _ object: Int) throws(PropertyListError) {
        guard length >= 0, start <= objectAreaEnd, length <= objectAreaEnd - start else {
            throw .truncated("object at byte \(object) runs past the object area")
        }
    }

    private func malformed(_ offset: Int, _ reason: String) -> PropertyListError {
        .malformed(offset: offset, reason: reason)
    }

    private static func bigEndian(_ bytes: [UInt8], at start: Int, size: Int) -> UInt64 {
        var value: UInt64 = 0
        for index in start..<(start + size) { value = value << 8 | UInt64(bytes[index]) }
        return value
    }
}
