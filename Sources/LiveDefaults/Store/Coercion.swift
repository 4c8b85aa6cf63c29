import Foundation

/// The conversions of the typed getters, as Foundation performs them (`NSString`'s `integerValue`,
/// `doubleValue` and `boolValue` for strings; numbers convert between kinds; anything else reads as zero).
enum Coercion {
    static func integer(_ value: PropertyList?) -> Int {
        switch value {
        case .integer(let integer): integer
        case .real(let real):
            real.isFinite ? Int(exactly: real.rounded(.towardZero)) ?? (real < 0 ? Int.min : Int.max) : 0
        case .bool(let bool): bool ? 1 : 0
        case .string(let string): integerPrefix(string)
        default: 0
        }
    }

    static func double(_ value: PropertyList?) -> Double {
        switch value {
        case .integer(let integer): Double(integer)
        case .real(let real): real
        case .bool(let bool): bool ? 1 : 0
        case .string(let string): doublePrefix(string)
        default: 0
        }
    }

    static func bool(_ value: PropertyList?) -> Bool {
        switch value {
        case .bool(let bool): bool
        case .integer(let integer): integer != 0
        case .real(let real): real != 0
        case .string(let string): stringBool(string)
        default: false
        }
    }

    /// How `string(forKey:)` prints a real: a value that a `Float` holds exactly prints as that `Float`, any
    /// other as its `Double`. Foundation keeps a stored `Float` a float, so `set(Float(12.34))` reads back as
    /// "12.34" from `string(forKey:)` and as 12.34000015258789 from `double(forKey:)`; the store keeps the
    /// exact double, and this gives the string.
    static func string(_ real: Double) -> String {
        if let float = Float(exactly: real) { return "\(float)" }
        return "\(real)"
    }

    /// `NSString.integerValue`: leading white space, an optional sign, then decimal digits up to the first
    /// other character ("42abc" is 42, "abc" is 0); saturates at `Int.min`/`Int.max`.
    static func integerPrefix(_ string: String) -> Int {
        var bytes = Substring(string).utf8.drop(while: { $0 == 0x20 || ($0 >= 0x09 && $0 <= 0x0D) })
        var negative = false
        if let sign = bytes.first, sign == UInt8(ascii: "-") || sign == UInt8(ascii: "+") {
            negative = sign == UInt8(ascii: "-")
            bytes = bytes.dropFirst()
        }
        var result = 0
        for byte in bytes {
            guard byte >= 48, byte <= 57 else { break }
            let digit = Int(byte - 48)
            let (multiplied, overflow1) = result.multipliedReportingOverflow(by: 10)
            let (added, overflow2) =
                negative
                ? multiplied.subtractingReportingOverflow(digit) : multiplied.addingReportingOverflow(digit)
            if overflow1 || overflow2 { return negative ? Int.min : Int.max }
            result = added
        }
        return result
    }

    /// `NSString.doubleValue`: the longest leading decimal number (`strtod` without hexadecimal), else 0.
    static func doublePrefix(_ string: String) -> Double {
        let text = Array(Substring(string).utf8.drop(while: { $0 == 0x20 || ($0 >= 0x09 && $0 <= 0x0D) }))
        var end = 0
        if end < text.count, text[end] == UInt8(ascii: "-") || text[end] == UInt8(ascii: "+") { end += 1 }
        let digitsStart = end
        while end < text.count, text[end] >= 48, text[end] <= 57 { end += 1 }
        if end < text.count, text[end] == UInt8(ascii: ".") {
            end += 1
            while end < text.count, text[end] >= 48, text[end] <= 57 { end += 1 }
        }
        guard end > digitsStart, !(end == digitsStart + 1 && text[digitsStart] == UInt8(ascii: ".")) else { return 0 }
        if end < text.count, text[end] == UInt8(ascii: "e") || text[end] == UInt8(ascii: "E") {
            var exponentEnd = end + 1
            if exponentEnd < text.count,
                text[exponentEnd] == UInt8(ascii: "-") || text[exponentEnd] == UInt8(ascii: "+")
            {
                exponentEnd += 1
            }
            let exponentDigits = exponentEnd
            while exponentEnd < text.count, text[exponentEnd] >= 48, text[exponentEnd] <= 57 { exponentEnd += 1 }
            if exponentEnd > exponentDigits { end = exponentEnd }
        }
        return Double(String(decoding: text[0..<end], as: UTF8.self)) ?? 0
    }

    /// `NSString.boolValue`: after white space, a sign and leading zeros, true on "Y", "y", "T", "t" or a
    /// digit 1–9 ("YES", "true", "1", "007" are true; "NO", "false", "0", "" are false).
    static func stringBool(_ string: String) -> Bool {
        var bytes = Substring(string).utf8.drop(while: { $0 == 0x20 || ($0 >= 0x09 && $0 <= 0x0D) })
        if let sign = bytes.first, sign == UInt8(ascii: "-") || sign == UInt8(ascii: "+") { bytes = bytes.dropFirst() }
        bytes = bytes.drop(while: { $0 == UInt8(ascii: "0") })
        guard let first = bytes.first else { return false }
        return first == UInt8(ascii: "Y") || first == UInt8(ascii: "y") || first == UInt8(ascii: "T")
            || first == UInt8(ascii: "t") || (first >= UInt8(ascii: "1") && first <= UInt8(ascii: "9"))
    }

    /// `url(forKey:)`: a string is a path (`~` expanded) unless it carries a URL scheme (`https://…`);
    /// data is a keyed archive of a URL, as Foundation stores non-file URLs.
    static func url(_ value: PropertyList?) -> URL? {
        switch value {
        case .string(let string):
            if let scheme = string.firstRange(of: "://"), !string[..<scheme.lowerBound].isEmpty,
                string[..<scheme.lowerBound].allSatisfy({ $0.isLetter || $0.isNumber || "+-.".contains($0) }),
                let url = URL(string: string)
            {
                return url
            }
            return URL(fileURLWithPath: NSString(string: string).expandingTildeInPath)
        case .data(let data):
            return (try? NSKeyedUnarchiver.unarchivedObject(ofClass: NSURL.self, from: data)).map { $0 as URL }
        default:
            return nil
        }
    }

    /// How `set(_: URL?, forKey:)` stores a URL: a file URL as its path, abbreviated with `~` when it lies in
    /// the home directory; any other URL as a keyed archive, as Foundation does.
    static func storedValue(for url: URL) -> PropertyList? {
        if url.isFileURL {
            let path = url.absoluteURL.standardizedFileURL.path
            let home = NSHomeDirectory()
            if home.count > 1, path == home { return .string("~") }
            if home.count > 1, path.hasPrefix(home + "/") { return .string("~" + path.dropFirst(home.count)) }
            return .string(path)
        }
        guard let data = try? NSKeyedArchiver.archivedData(withRootObject: url as NSURL, requiringSecureCoding: true)
        else { return nil }
        return .data(data)
    }
}
