import Foundation

/// Parses old-style (OpenStep) property lists: `"quoted"` and bare strings, `( a, b )`, `{ k = v; }` and
/// `<0fa1 b2>`, with `//` and `/* */` comments. This is the syntax of command-line values (`-Numbers '(1, 2)'`,
/// `defaults write d k '{ a = 1; }'`). As in Foundation, every scalar is a string: the format has no numbers.
///
/// With `typed`, the text `defaults edit` shows (``PropertyList/typedText``): a quoted string is a string, and
/// a bare word is typed by its form (``typedScalar(_:at:)``): `42` an integer, `4.2` a real, `true` a Boolean,
/// `2024-01-31T09:05:00Z` a date, anything else a string. Dictionary keys are strings either way.
struct OpenStepPropertyListParser {
    private let bytes: [UInt8]
    private var position = 0
    private var typed = false

    static func parse(_ data: Data, typed: Bool = false) throws(PropertyListError) -> PropertyList {
        var parser = OpenStepPropertyListParser(bytes: [UInt8](data))
        parser.typed = typed
        if parser.bytes.starts(with: [0xEF, 0xBB, 0xBF]) { parser.position = 3 }
        try parser.skipSpace()
        guard parser.position < parser.bytes.count else { throw .unrecognizedFormat }
        let value = try parser.value(depth: 0)
        try parser.skipSpace()
        guard parser.position == parser.bytes.count else {
            throw .malformed(offset: parser.position, reason: "unexpected text after the value")
        }
        return value
    }

    private init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    private mutating func value(depth: Int, typingBareWords: Bool = true) throws(PropertyListError) -> PropertyList {
        guard position < bytes.count else { throw .truncated("the input ends where a value should start") }
        switch bytes[position] {
        case UInt8(ascii: "{"):
            guard depth < PropertyListLimits.maximumDepth else {
                throw .nestingTooDeep(limit: PropertyListLimits.maximumDepth)
            }
            position += 1
            var entries: [String: PropertyList] = [:]
            while true {
                try skipSpace()
                guard position < bytes.count else { throw .truncated("missing }") }
                if bytes[position] == UInt8(ascii: "}") {
                    position += 1
                    return .dictionary(entries)
                }
                let keyStart = position
                guard case .string(let key) = try value(depth: depth + 1, typingBareWords: false) else {
                    throw .malformed(offset: keyStart, reason: "dictionary keys must be strings")
                }
                try skipSpace()
                try expect("=")
                try skipSpace()
                entries[key] = try value(depth: depth + 1)
                try skipSpace()
                try expect(";")
            }
        case UInt8(ascii: "("):
            guard depth < PropertyListLimits.maximumDepth else {
                throw .nestingTooDeep(limit: PropertyListLimits.maximumDepth)
            }
            position += 1
            var elements: [PropertyList] = []
            while true {
                try skipSpace()
                guard position < bytes.count else { throw .truncated("missing )") }
                if bytes[position] == UInt8(ascii: ")") {
                    position += 1
                    return .array(elements)
                }
                elements.append(try value(depth: depth + 1))
                try skipSpace()
                guard position < bytes.count else { throw .truncated("missing )") }
                if bytes[position] == UInt8(ascii: ",") {
                    position += 1
                } else if bytes[position] != UInt8(ascii: ")") {
                    throw .malformed(offset: position, reason: "expected , or ) in an array")
                }
            }
        case UInt8(ascii: "<"):
            return .data(try data())
        case UInt8(ascii: "\""), UInt8(ascii: "'"):
            return .string(try quotedString())
        default:
            let start = position
            while position < bytes.count, Self.isBareByte(bytes[position]) { position += 1 }
            guard position > start else {
                throw .malformed(
                    offset: start, reason: "unexpected character \"\(Character(Unicode.Scalar(bytes[start])))\"")
            }
            let word = String(decoding: bytes[start..<position], as: UTF8.self)
            return typed && typingBareWords ? try Self.typedScalar(word, at: start) : .string(word)
        }
    }

    /// A bare word of typed text as the value its form says: `true`/`false` (and `YES`/`NO`) a Boolean; digits
    /// with an optional sign an integer (one beyond `Int` is an error, not a string: the person meant a
    /// number); a decimal number with a point or an exponent, `nan`, `+infinity` or `-infinity` a real; a date
    /// as ``PropertyList/date(fromText:)`` reads it a date; any other word a string.
    static func typedScalar(_ word: String, at offset: Int) throws(PropertyListError) -> PropertyList {
        switch word {
        case "true", "YES": return .bool(true)
        case "false", "NO": return .bool(false)
        case "nan": return .real(.nan)
        case "+infinity": return .real(.infinity)
        case "-infinity": return .real(-.infinity)
        default: break
        }
        let utf8 = word.utf8
        let unsigned = utf8.first == UInt8(ascii: "+") || utf8.first == UInt8(ascii: "-") ? utf8.dropFirst() : utf8[...]
        let isDigit = { (byte: UInt8) in byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
        if !unsigned.isEmpty, unsigned.allSatisfy(isDigit) {
            guard let integer = Int(word) else {
                throw .malformed(offset: offset, reason: "\(word) is beyond the integers a property list holds")
            }
            return .integer(integer)
        }
        // A real: digits with a point or an exponent, and nothing else (no `0x`, no `infinity` spelled otherwise).
        let isRealByte = { (byte: UInt8) in
            isDigit(byte) || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E")
                || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-")
        }
        if unsigned.first.map(isDigit) == true || unsigned.first == UInt8(ascii: "."), unsigned.allSatisfy(isRealByte),
            unsigned.contains(where: isDigit), let real = Double(word)
        {
            return .real(real)
        }
        if unsigned.first.map(isDigit) == true, let date = PropertyList.date(fromText: word) { return .date(date) }
        return .string(word)
    }

    private mutating func data() throws(PropertyListError) -> Data {
        let start = position
        position += 1
        var result: [UInt8] = []
        var high: UInt8?
        while position < bytes.count {
            let byte = bytes[position]
            position += 1
            if byte == UInt8(ascii: ">") {
                guard high == nil else { throw .malformed(offset: start, reason: "odd number of hex digits in data") }
                return Data(result)
            }
            if byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { continue }
            guard let nibble = ASCIIDigits.hexValue(byte) else {
                throw .malformed(offset: position - 1, reason: "invalid hex digit in data")
            }
            if let first = high {
                result.append(first << 4 | nibble)
                high = nil
            } else {
                high = nibble
            }
        }
        throw .truncated("missing > after data")
    }

    private mutating func quotedString() throws(PropertyListError) -> String {
        let quote = bytes[position]
        let start = position
        position += 1
        var buffer: [UInt8] = []
        while position < bytes.count {
            let byte = bytes[position]
            position += 1
            if byte == quote {
                guard let string = String(validating: buffer, as: UTF8.self) else {
                    throw .malformed(offset: start, reason: "string is not valid UTF-8")
                }
                return string
            }
            guard byte == UInt8(ascii: "\\") else {
                buffer.append(byte)
                continue
            }
            guard position < bytes.count else { break }
            let escape = bytes[position]
            position += 1
            switch escape {
            case UInt8(ascii: "n"): buffer.append(0x0A)
            case UInt8(ascii: "t"): buffer.append(0x09)
            case UInt8(ascii: "r"): buffer.append(0x0D)
            case UInt8(ascii: "a"): buffer.append(0x07)
            case UInt8(ascii: "b"): buffer.append(0x08)
            case UInt8(ascii: "f"): buffer.append(0x0C)
            case UInt8(ascii: "v"): buffer.append(0x0B)
            case UInt8(ascii: "0")...UInt8(ascii: "7"):
                var code = UInt32(escape - 48)
                var digits = 1
                while digits < 3, position < bytes.count, (48...55).contains(bytes[position]) {
                    code = code * 8 + UInt32(bytes[position] - 48)
                    position += 1
                    digits += 1
                }
                appendScalar(code, to: &buffer)
            case UInt8(ascii: "U"), UInt8(ascii: "u"):
                var code: UInt32 = 0
                var digits = 0
                while digits < 4, position < bytes.count, let nibble = ASCIIDigits.hexValue(bytes[position]) {
                    code = code * 16 + UInt32(nibble)
                    position += 1
                    digits += 1
                }
                appendScalar(code, to: &buffer)
            default:
                buffer.append(escape)
            }
        }
        throw .truncated("unterminated quoted string")
    }

    private func appendScalar(_ code: UInt32, to buffer: inout [UInt8]) {
        let scalar = Unicode.Scalar(code) ?? "\u{FFFD}"
        buffer.append(contentsOf: String(Character(scalar)).utf8)
    }

    private mutating func skipSpace() throws(PropertyListError) {
        while position < bytes.count {
            let byte = bytes[position]
            if byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D {
                position += 1
            } else if byte == UInt8(ascii: "/"), position + 1 < bytes.count, bytes[position + 1] == UInt8(ascii: "/") {
                while position < bytes.count, bytes[position] != 0x0A { position += 1 }
            } else if byte == UInt8(ascii: "/"), position + 1 < bytes.count, bytes[position + 1] == UInt8(ascii: "*") {
                let start = position
                position += 2
                while position + 1 < bytes.count,
                    !(bytes[position] == UInt8(ascii: "*") && bytes[position + 1] == UInt8(ascii: "/"))
                {
                    position += 1
                }
                guard position + 1 < bytes.count else { throw .truncated("unterminated comment at byte \(start)") }
                position += 2
            } else {
                return
            }
        }
    }

    private mutating func expect(_ character: Unicode.Scalar) throws(PropertyListError) {
        guard position < bytes.count else { throw .truncated("missing \(character)") }
        guard bytes[position] == UInt8(ascii: character) else {
            throw .malformed(offset: position, reason: "expected \(character)")
        }
        position += 1
    }

    static func isBareByte(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
            || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
            || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
            || [
                UInt8(ascii: "_"), UInt8(ascii: "$"), UInt8(ascii: "+"), UInt8(ascii: "/"), UInt8(ascii: ":"),
                UInt8(ascii: "."), UInt8(ascii: "-"),
            ].contains(byte)
    }
}

/// Prints values as old-style property lists, the way `defaults read` shows them: strings bare when they
/// can be, quoted and escaped otherwise; numbers bare; Booleans as 1 and 0; data as `<hex>`.
///
/// With `typed`, the text `defaults edit` shows, which the typed parser reads back as the same types: every
/// string quoted, Booleans `true` and `false`, dates bare (`2024-01-31T09:05:00Z`).
enum OpenStepPropertyListWriter {
    static func string(
        from value: PropertyList, dateStyle: PropertyList.DateStyle = .iso8601, typed: Bool = false
    ) -> String {
        var output = ""
        write(value, indent: 0, dateStyle: dateStyle, typed: typed, into: &output)
        return output
    }

    private static func write(
        _ value: PropertyList, indent: Int, dateStyle: PropertyList.DateStyle, typed: Bool, into output: inout String
    ) {
        let pad = String(repeating: "    ", count: indent)
        switch value {
        case .string(let string): output += typed ? quoted(string) : quotedIfNeeded(string)
        case .integer(let integer): output += "\(integer)"
        case .real(let real): output += XMLPropertyListWriter.realText(real)
        case .bool(let bool): output += typed ? (bool ? "true" : "false") : (bool ? "1" : "0")
        case .date(let date) where typed:
            // Bare, so that it reads back as a date; a date beyond any calendar has no such form and is quoted.
            output += quotedIfNeeded(PropertyListDate.isoText(date))
        case .date(let date):
            switch dateStyle {
            case .iso8601: output += quotedIfNeeded(PropertyListDate.isoText(date))
            case .defaultsTool: output += quotedIfNeeded(PropertyListDate.defaultsToolText(date))
            }
        case .data(let data): output += "<" + data.map { String(format: "%02x", $0) }.joined() + ">"
        case .array(let elements):
            if elements.isEmpty {
                output += "()"
                return
            }
            output += "(\n"
            for (offset, element) in elements.enumerated() {
                output += pad + "    "
                write(element, indent: indent + 1, dateStyle: dateStyle, typed: typed, into: &output)
                output += offset == elements.count - 1 ? "\n" : ",\n"
            }
            output += pad + ")"
        case .dictionary(let entries):
            if entries.isEmpty {
                output += "{\n" + pad + "}"
                return
            }
            output += "{\n"
            for (key, entry) in entries.sorted(by: { $0.key < $1.key }) {
                output += pad + "    " + quotedIfNeeded(key) + " = "
                write(entry, indent: indent + 1, dateStyle: dateStyle, typed: typed, into: &output)
                output += ";\n"
            }
            output += pad + "}"
        }
    }

    /// A string bare when it consists only of characters the parser accepts bare, quoted otherwise. A bare
    /// string may not start with `//`, which the parser would take for a comment.
    static func quotedIfNeeded(_ string: String) -> String {
        if !string.isEmpty, string.utf8.allSatisfy(OpenStepPropertyListParser.isBareByte), !string.hasPrefix("//") {
            return string
        }
        return quoted(string)
    }

    /// A string quoted and escaped.
    static func quoted(_ string: String) -> String {
        var result = "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\t": result += "\\t"
            case "\r": result += "\\r"
            case _ where scalar.value < 0x20: result += String(format: "\\%03o", scalar.value)
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }
}
