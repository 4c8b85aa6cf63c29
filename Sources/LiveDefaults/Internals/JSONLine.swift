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
    private static let hexDigits = Array("0123456789abcdef".utf8)

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
                    bytes.append(contentsOf: [Self.hexDigits[Int(byte >> 4)], Self.hexDigits[Int(byte & 15)]])
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
    mutating func base64(_ data: Data) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        bytes.append(contentsOf: data.base64EncodedData())
        bytes.append(UInt8(ascii: "\""))
        needsComma = true
    }

    mutating func integer(_ value: some BinaryInteger) {
        separate()
        bytes.append(contentsOf: value.description.utf8)
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
