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
