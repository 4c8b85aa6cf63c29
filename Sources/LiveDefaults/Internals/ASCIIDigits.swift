/// Digits as ASCII bytes, for text written straight into bytes (the change log's lines, the XML writer, the
/// digests' spelling) without making a `String` first.
enum ASCIIDigits {
    /// The lowercase hexadecimal digit of `nibble`'s low four bits.
    static func hex(_ nibble: UInt8) -> UInt8 {
        let value = nibble & 0x0F
        return value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "a") + value - 10
    }

    /// The value of the hexadecimal digit `byte` (either case); nil for any other byte.
    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - 48
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - 87
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - 55
        default: nil
        }
    }
}

extension [UInt8] {
    /// Appends `value` in decimal, as `value.description` spells it (a minus sign, then the magnitude's digits),
    /// without making that `String`: the change log's lines and the XML writer put numbers into bytes on every
    /// write.
    mutating func appendDecimal(_ value: some BinaryInteger) {
        guard value.magnitude.bitWidth <= 64 else {
            append(contentsOf: value.description.utf8)
            return
        }
        if value < 0 { append(UInt8(ascii: "-")) }
        var magnitude = UInt64(truncatingIfNeeded: value.magnitude)
        let start = count
        repeat {
            append(UInt8(ascii: "0") + UInt8(truncatingIfNeeded: magnitude % 10))
            magnitude /= 10
        } while magnitude > 0
        self[start...].reverse()
    }
}
