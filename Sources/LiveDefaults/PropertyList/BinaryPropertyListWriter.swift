import Foundation

/// Writes Apple's `bplist00` binary format, used to keep a file binary when it was found binary.
///
/// Objects are laid out depth first; equal strings (dictionary keys above all) are written once and shared,
/// which is what keeps CF's binary files small too.
enum BinaryPropertyListWriter {
    private enum Entry {
        case scalar([UInt8])
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
                let index = append(.scalar(BinaryPropertyListWriter.encodeString(string)))
                stringIndex[string] = index
                return index
            case .integer(let integer):
                return append(.scalar(BinaryPropertyListWriter.encodeInteger(integer)))
            case .real(let real):
                return append(.scalar([0x23] + BinaryPropertyListWriter.bigEndian(real.bitPattern, size: 8)))
            case .bool(let bool):
                return append(.scalar([bool ? 0x09 : 0x08]))
            case .date(let date):
                let seconds = date.timeIntervalSinceReferenceDate
                return append(.scalar([0x33] + BinaryPropertyListWriter.bigEndian(seconds.bitPattern, size: 8)))
            case .data(let data):
                return append(.scalar(BinaryPropertyListWriter.header(0x4, count: data.count) + [UInt8](data)))
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
        var flattener = Flattener()
        let top = flattener.add(value)
        let entries = flattener.entries
        let referenceSize = byteWidth(UInt64(entries.count))

        var output: [UInt8] = BinaryPropertyListReader.magic
        var offsets: [Int] = []
        offsets.reserveCapacity(entries.count)
        for entry in entries {
            offsets.append(output.count)
            switch entry {
            case .scalar(let bytes):
                output += bytes
            case .array(let children):
                output += header(0xA, count: children.count)
                for child in children { output += bigEndian(UInt64(child), size: referenceSize) }
            case .dictionary(let keys, let values):
                output += header(0xD, count: keys.count)
                for key in keys { output += bigEndian(UInt64(key), size: referenceSize) }
                for value in values { output += bigEndian(UInt64(value), size: referenceSize) }
            }
        }
        let tableOffset = output.count
        let offsetSize = byteWidth(UInt64(tableOffset))
        for offset in offsets { output += bigEndian(UInt64(offset), size: offsetSize) }
        output += [0, 0, 0, 0, 0, 0, UInt8(offsetSize), UInt8(referenceSize)]
        output += bigEndian(UInt64(entries.count), size: 8)
        output += bigEndian(UInt64(top), size: 8)
        output += bigEndian(UInt64(tableOffset), size: 8)
        return Data(output)
    }

    fileprivate static func encodeString(_ string: String) -> [UInt8] {
        if string.utf8.allSatisfy({ $0 < 0x80 }) {
            return header(0x5, count: string.utf8.count) + Array(string.utf8)
        }
        let units = Array(string.utf16)
        var bytes = header(0x6, count: units.count)
        bytes.reserveCapacity(bytes.count + units.count * 2)
        for unit in units { bytes += [UInt8(unit >> 8), UInt8(unit & 0xFF)] }
        return bytes
    }

    /// Non-negative values take the smallest of 1, 2, 4 or 8 bytes (the narrow widths are unsigned);
    /// negative values always take 8, as CF writes them.
    fileprivate static func encodeInteger(_ integer: Int) -> [UInt8] {
        if integer < 0 { return [0x13] + bigEndian(UInt64(bitPattern: Int64(integer)), size: 8) }
        let magnitude = UInt64(integer)
        switch magnitude {
        case 0...0xFF: return [0x10] + bigEndian(magnitude, size: 1)
        case 0...0xFFFF: return [0x11] + bigEndian(magnitude, size: 2)
        case 0...0xFFFF_FFFF: return [0x12] + bigEndian(magnitude, size: 4)
        default: return [0x13] + bigEndian(magnitude, size: 8)
        }
    }

    fileprivate static func header(_ kind: UInt8, count: Int) -> [UInt8] {
        if count < 15 { return [kind << 4 | UInt8(count)] }
        return [kind << 4 | 0x0F] + encodeInteger(count)
    }

    private static func byteWidth(_ value: UInt64) -> Int {
        switch value {
        case 0...0xFF: 1
        case 0...0xFFFF: 2
        case 0...0xFFFF_FFFF: 4
        default: 8
        }
    }

    fileprivate static func bigEndian(_ value: UInt64, size: Int) -> [UInt8] {
        (0..<size).map { UInt8(truncatingIfNeeded: value >> (8 * UInt64(size - 1 - $0))) }
    }
}
