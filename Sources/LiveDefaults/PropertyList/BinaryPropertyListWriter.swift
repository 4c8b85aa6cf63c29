import Foundation

/// Writes Apple's `bplist00` binary format, used to keep a file binary when it was found binary.
///
/// Objects are laid out depth first; equal strings (dictionary keys above all) are written once and shared,
/// which is what keeps CF's binary files small too.
///
/// The bytes are part of the format beyond the files: the change log keeps digests of values' binary
/// encodings, compared across processes and versions of the library, so the layout never changes
/// (`BinaryEncodingStabilityTests` pins it). Everything is written into one growing buffer, without an array
/// per object or per number: a change-log entry encodes each changed key's old and new value, so a 100-key
/// transaction runs this 200 times.
enum BinaryPropertyListWriter {
    private enum Entry {
        /// A value written as it is (never an array or a dictionary).
        case scalar(PropertyList)
        case array([Int])
        case dictionary(keys: [Int], values: [Int])
    }

    private struct Flattener {
        var entries: [Entry] = []
        var stringIndex: [String: Int] = [:]

        mutating func add(_ value: PropertyList) -> Int {
            switch value {
            case .string(let string):
                if let known = stringIndex[string] { return known }
                let index = append(.scalar(value))
                stringIndex[string] = index
                return index
            case .integer, .real, .bool, .date, .data:
                return append(.scalar(value))
            case .array(let elements):
                let index = append(.array([]))
                let children = elements.map { add($0) }
                entries[index] = .array(children)
                return index
            case .dictionary(let dictionary):
                let index = append(.dictionary(keys: [], values: []))
                let sorted = dictionary.sorted { $0.key < $1.key }
                let keys = sorted.map { add(.string($0.key)) }
                let values = sorted.map { add($0.value) }
                entries[index] = .dictionary(keys: keys, values: values)
                return index
            }
        }

        private mutating func append(_ entry: Entry) -> Int {
            entries.append(entry)
            return entries.count - 1
        }
    }

    static func data(from value: PropertyList) -> Data {
        var output: [UInt8] = []
        switch value {
        case .array, .dictionary:
            var flattener = Flattener()
            let top = flattener.add(value)
            write(flattener.entries, top: top, into: &output)
        default:
            // One object: no table of objects to build.
            output.reserveCapacity(64)
            write(CollectionOfOne(.scalar(value)), top: 0, into: &output)
        }
        return Data(output)
    }

    private static func write(_ entries: some Collection<Entry>, top: Int, into output: inout [UInt8]) {
        let referenceSize = byteWidth(UInt64(entries.count))
        output.append(contentsOf: BinaryPropertyListReader.magic)
        // On the stack when small (the change log encodes every changed value on its own, one entry each).
        withUnsafeTemporaryAllocation(of: Int.self, capacity: entries.count) { offsets in
            write(entries, top: top, referenceSize: referenceSize, offsets: offsets, into: &output)
        }
    }

    private static func write(
        _ entries: some Collection<Entry>, top: Int, referenceSize: Int, offsets: UnsafeMutableBufferPointer<Int>,
        into output: inout [UInt8]
    ) {
        var written = 0
        for entry in entries {
            offsets[written] = output.count
            written += 1
            switch entry {
            case .scalar(let value):
                writeScalar(value, into: &output)
            case .array(let children):
                writeHeader(0xA, count: children.count, into: &output)
                for child in children { writeBigEndian(UInt64(child), size: referenceSize, into: &output) }
            case .dictionary(let keys, let values):
                writeHeader(0xD, count: keys.count, into: &output)
                for key in keys { writeBigEndian(UInt64(key), size: referenceSize, into: &output) }
                for value in values { writeBigEndian(UInt64(value), size: referenceSize, into: &output) }
            }
        }
        let tableOffset = output.count
        let offsetSize = byteWidth(UInt64(tableOffset))
        for offset in offsets[..<written] { writeBigEndian(UInt64(offset), size: offsetSize, into: &output) }
        output.append(contentsOf: repeatElement(0, count: 6))
        output.append(UInt8(offsetSize))
        output.append(UInt8(referenceSize))
        writeBigEndian(UInt64(entries.count), size: 8, into: &output)
        writeBigEndian(UInt64(top), size: 8, into: &output)
        writeBigEndian(UInt64(tableOffset), size: 8, into: &output)
    }

    private static func writeScalar(_ value: PropertyList, into output: inout [UInt8]) {
        switch value {
        case .string(let string):
            writeString(string, into: &output)
        case .integer(let integer):
            writeInteger(integer, into: &output)
        case .real(let real):
            output.append(0x23)
            writeBigEndian(real.bitPattern, size: 8, into: &output)
        case .bool(let bool):
            output.append(bool ? 0x09 : 0x08)
        case .date(let date):
            output.append(0x33)
            writeBigEndian(date.timeIntervalSinceReferenceDate.bitPattern, size: 8, into: &output)
        case .data(let data):
            writeHeader(0x4, count: data.count, into: &output)
            output.append(contentsOf: data)
        case .array, .dictionary:
            // Never a scalar entry: the flattener gives containers entries of their own.
            break
        }
    }

    private static func writeString(_ string: String, into output: inout [UInt8]) {
        let utf8 = string.utf8
        if utf8.allSatisfy({ $0 < 0x80 }) {
            writeHeader(0x5, count: utf8.count, into: &output)
            output.append(contentsOf: utf8)
            return
        }
        let units = string.utf16
        writeHeader(0x6, count: units.count, into: &output)
        output.reserveCapacity(output.count + units.count * 2)
        for unit in units {
            output.append(UInt8(unit >> 8))
            output.append(UInt8(unit & 0xFF))
        }
    }

    /// Non-negative values take the smallest of 1, 2, 4 or 8 bytes (the narrow widths are unsigned);
    /// negative values always take 8, as CF writes them.
    private static func writeInteger(_ integer: Int, into output: inout [UInt8]) {
        if integer < 0 {
            output.append(0x13)
            writeBigEndian(UInt64(bitPattern: Int64(integer)), size: 8, into: &output)
            return
        }
        let magnitude = UInt64(integer)
        let size = byteWidth(magnitude)
        output.append(0x10 | UInt8(size.trailingZeroBitCount))
        writeBigEndian(magnitude, size: size, into: &output)
    }

    private static func writeHeader(_ kind: UInt8, count: Int, into output: inout [UInt8]) {
        if count < 15 {
            output.append(kind << 4 | UInt8(count))
        } else {
            output.append(kind << 4 | 0x0F)
            writeInteger(count, into: &output)
        }
    }

    private static func byteWidth(_ value: UInt64) -> Int {
        switch value {
        case 0...0xFF: 1
        case 0...0xFFFF: 2
        case 0...0xFFFF_FFFF: 4
        default: 8
        }
    }

    private static func writeBigEndian(_ value: UInt64, size: Int, into output: inout [UInt8]) {
        var shift = 8 * (size - 1)
        while shift >= 0 {
            output.append(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
            shift -= 8
        }
    }
}
