import Foundation

/// One line of JSON text, written straight into bytes: objects, arrays, strings, integers, finite doubles and
/// booleans, in the order the caller writes them.
///
/// The change log writes a line on every write, and a write of many keys makes a long one; `JSONEncoder`
/// builds a tree of boxed values through `Encodable` before it writes a byte
/// (Docs/Decisions/ChangeLogCost.md). What this writes, `JSONDecoder` reads back to the same values:
/// strings are escaped as RFC 8259 requires (quotation mark, reverse solidus, U+0000–U+001F), everything
/// else is written as UTF-8.
struct JSONLine {
    private(set) var bytes: [UInt8] = []
    /// Whether the next value or name follows another in the same object or array.
    private var needsComma = false

    init(capacity: Int = 256) {
        bytes.reserveCapacity(capacity)
    }

    /// The text with a newline after it.
    consuming func line() -> Data {
        bytes.append(UInt8(ascii: "\n"))
        return Data(bytes)
    }

    /// An object whose members `body` writes with ``name(_:)`` and a value each.
    mutating func object(_ body: (inout JSONLine) -> Void) {
        enclose(UInt8(ascii: "{"), UInt8(ascii: "}"), body)
    }

    /// An array whose elements `body` writes.
    mutating func array(_ body: (inout JSONLine) -> Void) {
        enclose(UInt8(ascii: "["), UInt8(ascii: "]"), body)
    }

    private mutating func enclose(_ open: UInt8, _ close: UInt8, _ body: (inout JSONLine) -> Void) {
        separate()
        bytes.append(open)
        needsComma = false
        body(&self)
        bytes.append(close)
        needsComma = true
    }

    /// A member's name; its value is what is written next.
    mutating func name(_ name: String) {
        string(name)
        bytes.append(UInt8(ascii: ":"))
        needsComma = false
    }

    mutating func string(_ text: String) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { utf8 in
            var start = 0
            for index in 0..<utf8.count {
                let byte = utf8[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<index]))
                start = index + 1
                bytes.append(UInt8(ascii: "\\"))
                switch byte {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"): bytes.append(byte)
                case UInt8(ascii: "\n"): bytes.append(UInt8(ascii: "n"))
                case UInt8(ascii: "\r"): bytes.append(UInt8(ascii: "r"))
                case UInt8(ascii: "\t"): bytes.append(UInt8(ascii: "t"))
                default:
                    bytes.append(contentsOf: [UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")])
                    bytes.append(contentsOf: [ASCIIDigits.hex(byte >> 4), ASCIIDigits.hex(byte)])
                }
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<utf8.count]))
        }
        bytes.append(UInt8(ascii: "\""))
        needsComma = true
    }

    /// A string of `data` in base64 (RFC 4648's alphabet, padded, no line breaks), its bytes appended as
    /// Foundation encodes them, without a `String` between (the change log writes two per changed key), and
    /// nothing in the alphabet needs escaping.
    ///
    /// Encoded here, three bytes to four characters: `base64EncodedData()` makes a `Data` per value, and
    /// appending a `Data` to the bytes goes through its iterator a byte at a time — most of the time a line of
    /// many changed keys took.
    mutating func base64(_ data: Data) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        data.withUnsafeBytes { (input: UnsafeRawBufferPointer) in
            let start = bytes.count
            bytes.append(contentsOf: repeatElement(UInt8(ascii: "="), count: (input.count + 2) / 3 * 4))
            bytes.withUnsafeMutableBufferPointer { output in
                Self.base64Alphabet.withUnsafeBufferPointer { alphabet in
                    var index = 0
                    var out = start
                    while index + 3 <= input.count {
                        let word = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8 | UInt32(input[index + 2])
                        output[out] = alphabet[Int(word >> 18)]
                        output[out + 1] = alphabet[Int(word >> 12 & 63)]
                        output[out + 2] = alphabet[Int(word >> 6 & 63)]
                        output[out + 3] = alphabet[Int(word & 63)]
                        index += 3
                        out += 4
                    }
                    // One or two bytes left: two or three characters, the rest stays padding.
                    let left = input.count - index
                    guard left > 0 else { return }
                    let word = UInt32(input[index]) << 16 | (left == 2 ? UInt32(input[index + 1]) << 8 : 0)
                    output[out] = alphabet[Int(word >> 18)]
                    output[out + 1] = alphabet[Int(word >> 12 & 63)]
                    if left == 2 { output[out + 2] = alphabet[Int(word >> 6 & 63)] }
                }
            }
        }
        bytes.append(UInt8(ascii: "\""))
        needsComma = true
    }

    private static let base64Alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    mutating func integer(_ value: some BinaryInteger) {
        separate()
        bytes.appendDecimal(value)
        needsComma = true
    }

    /// A finite number as Swift's shortest round-trip form (`1764253200.25`, `1e-05`), which is JSON's
    /// grammar too; JSON has no infinity or NaN, so those are written as 0.
    mutating func number(_ value: Double) {
        separate()
        bytes.append(contentsOf: (value.isFinite ? value : 0).description.utf8)
        needsComma = true
    }

    mutating func bool(_ value: Bool) {
        separate()
        bytes.append(contentsOf: (value ? "true" : "false").utf8)
        needsComma = true
    }

    /// A member written only when it has a value, as `encodeIfPresent` does.
    mutating func member(_ name: String, _ value: String?) {
        guard let value else { return }
        self.name(name)
        string(value)
    }

    private mutating func separate() {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
    }
}
