import Foundation

/// Reads Apple's XML property-list format, as written by Foundation (on Linux and Apple platforms), CF and
/// Python's `plistlib`.
///
/// A small hand-written scanner rather than an XML library: the core stays free of system packages
/// (FoundationXML needs libxml2), the nesting depth is bounded, and reading is a single pass over the bytes.
/// It accepts the XML declaration, a DOCTYPE (with an internal subset), comments, CDATA sections, the
/// predefined and numeric character references, and the empty-element forms (`<dict/>`, `<string/>`).
struct XMLPropertyListReader {
    private let bytes: [UInt8]
    private var position = 0

    static func read(_ data: Data) throws(PropertyListError) -> PropertyList {
        var reader = XMLPropertyListReader(bytes: [UInt8](data))
        return try reader.document()
    }

    private init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    private struct Tag {
        var name: String
        var isEmptyElement: Bool
        var offset: Int
    }

    // MARK: Document structure

    private mutating func document() throws(PropertyListError) -> PropertyList {
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { position = 3 }
        try skipMarkup()
        guard let first = try openTag() else { throw error("expected <plist> or a value") }
        let value: PropertyList
        if first.name == "plist" {
            guard !first.isEmptyElement else { throw error("the <plist> element is empty") }
            try skipMarkup()
            guard let tag = try openTag() else { throw error("expected a value inside <plist>") }
            value = try self.value(for: tag, depth: 0)
            try skipMarkup()
            try closeTag("plist")
        } else {
            value = try self.value(for: first, depth: 0)
        }
        try skipMarkup()
        guard position == bytes.count else { throw error("unexpected content after the property list") }
        return value
    }

    private mutating func value(for tag: Tag, depth: Int) throws(PropertyListError) -> PropertyList {
        switch tag.name {
        case "dict":
            guard depth < PropertyListLimits.maximumDepth else {
                throw .nestingTooDeep(limit: PropertyListLimits.maximumDepth)
            }
            return .dictionary(try dictionary(tag, depth: depth + 1))
        case "array":
            guard depth < PropertyListLimits.maximumDepth else {
                throw .nestingTooDeep(limit: PropertyListLimits.maximumDepth)
            }
            return .array(try array(tag, depth: depth + 1))
        case "string":
            return .string(try text(of: tag))
        case "integer":
            let text = try text(of: tag)
            guard let number = Self.integer(text) else { throw error("invalid integer \"\(text)\"", at: tag.offset) }
            return number
        case "real":
            let text = String(Self.trimmed(try text(of: tag)))
            guard let number = Self.real(text) else { throw error("invalid real \"\(text)\"", at: tag.offset) }
            return .real(number)
        case "true", "false":
            if !tag.isEmptyElement {
                try skipMarkup()
                try closeTag(tag.name)
            }
            return .bool(tag.name == "true")
        case "date":
            let text = try text(of: tag)
            guard let date = PropertyListDate.parse(text) else {
                throw error("invalid date \"\(text)\" (expected YYYY-MM-DDTHH:MM:SSZ)", at: tag.offset)
            }
            return .date(date)
        case "data":
            let text = try text(of: tag)
            guard let data = Data(base64Encoded: text, options: .ignoreUnknownCharacters) else {
                throw error("invalid base64 in <data>", at: tag.offset)
            }
            return .data(data)
        default:
            throw error("unknown element <\(tag.name)>", at: tag.offset)
        }
    }

    private mutating func dictionary(_ tag: Tag, depth: Int) throws(PropertyListError) -> [String: PropertyList] {
        var entries: [String: PropertyList] = [:]
        if tag.isEmptyElement { return entries }
        while true {
            try skipMarkup()
            if try peekCloseTag("dict") { return entries }
            guard let keyTag = try openTag(), keyTag.name == "key" else { throw error("expected <key> in <dict>") }
            let key = try text(of: keyTag)
            try skipMarkup()
            guard let valueTag = try openTag() else { throw error("expected a value for key \"\(key)\"") }
            entries[key] = try value(for: valueTag, depth: depth)
        }
    }

    private mutating func array(_ tag: Tag, depth: Int) throws(PropertyListError) -> [PropertyList] {
        var elements: [PropertyList] = []
        if tag.isEmptyElement { return elements }
        while true {
            try skipMarkup()
            if try peekCloseTag("array") { return elements }
            guard let elementTag = try openTag() else { throw error("expected a value in <array>") }
            elements.append(try value(for: elementTag, depth: depth))
        }
    }

    // MARK: Lexical level

    /// Skips white space, comments, processing instructions and DOCTYPE declarations.
    private mutating func skipMarkup() throws(PropertyListError) {
        while position < bytes.count {
            let byte = bytes[position]
            if byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D {
                position += 1
            } else if matches("<?") {
                try skip(past: "?>")
            } else if matches("<!--") {
                try skip(past: "-->")
            } else if matches("<!DOCTYPE") {
                try skipDoctype()
            } else {
                return
            }
        }
    }

    private mutating func skipDoctype() throws(PropertyListError) {
        var inSubset = false
        while position < bytes.count {
            let byte = bytes[position]
            position += 1
            if byte == UInt8(ascii: "[") { inSubset = true }
            if byte == UInt8(ascii: "]") { inSubset = false }
            if byte == UInt8(ascii: ">") && !inSubset { return }
        }
        throw .truncated("unterminated <!DOCTYPE")
    }

    /// Reads `<name ...>` or `<name .../>`; returns nil (without consuming) when the next thing is not an
    /// opening tag.
    private mutating func openTag() throws(PropertyListError) -> Tag? {
        guard position < bytes.count else { throw .truncated("the input ends where a value should start") }
        guard bytes[position] == UInt8(ascii: "<"), position + 1 < bytes.count,
            bytes[position + 1] != UInt8(ascii: "/")
        else { return nil }
        let start = position
        position += 1
        let nameStart = position
        while position < bytes.count, Self.isNameByte(bytes[position]) { position += 1 }
        guard position > nameStart else { throw error("expected an element name", at: start) }
        let name = String(decoding: bytes[nameStart..<position], as: UTF8.self)
        // Attributes (only <plist version="1.0"> has any) are skipped, honouring quotes.
        var quote: UInt8?
        while position < bytes.count {
            let byte = bytes[position]
            position += 1
            if let open = quote {
                if byte == open { quote = nil }
            } else if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'") {
                quote = byte
            } else if byte == UInt8(ascii: ">") {
                let empty = bytes[position - 2] == UInt8(ascii: "/")
                return Tag(name: name, isEmptyElement: empty, offset: start)
            }
        }
        throw .truncated("unterminated <\(name)> tag")
    }

    private mutating func peekCloseTag(_ name: String) throws(PropertyListError) -> Bool {
        guard position < bytes.count else { throw .truncated("missing </\(name)>") }
        guard matches("</") else { return false }
        try closeTag(name)
        return true
    }

    private mutating func closeTag(_ name: String) throws(PropertyListError) {
        guard position < bytes.count else { throw .truncated("missing </\(name)>") }
        let start = position
        guard matches("</") else { throw error("expected </\(name)>") }
        position += 2
        let nameStart = position
        while position < bytes.count, Self.isNameByte(bytes[position]) { position += 1 }
        let found = String(decoding: bytes[nameStart..<position], as: UTF8.self)
        while position < bytes.count, Self.isSpace(bytes[position]) { position += 1 }
        guard position < bytes.count else { throw .truncated("unterminated </\(found)>") }
        guard found == name, bytes[position] == UInt8(ascii: ">") else {
            throw error("expected </\(name)>, found </\(found)>", at: start)
        }
        position += 1
    }

    /// The character data of a text element up to its closing tag, with references and CDATA resolved.
    private mutating func text(of tag: Tag) throws(PropertyListError) -> String {
        if tag.isEmptyElement { return "" }
        // The common case, plain text up to the closing tag, straight from the input without a buffer.
        var end = position
        while end < bytes.count, bytes[end] != UInt8(ascii: "<"), bytes[end] != UInt8(ascii: "&") { end += 1 }
        if end < bytes.count, bytes[end] == UInt8(ascii: "<"), end + 1 < bytes.count, bytes[end + 1] == UInt8(ascii: "/") {
            let start = position
            position = end
            try closeTag(tag.name)
            guard let string = String(validating: bytes[start..<end], as: UTF8.self) else {
                throw error("text of <\(tag.name)> is not valid UTF-8", at: tag.offset)
            }
            return string
        }
        var buffer: [UInt8] = []
        var runStart = position
        while true {
            guard position < bytes.count else { throw .truncated("unterminated <\(tag.name)>") }
            let byte = bytes[position]
            if byte == UInt8(ascii: "<") {
                buffer.append(contentsOf: bytes[runStart..<position])
                if matches("<![CDATA[") {
                    position += 9
                    let start = position
                    try skip(past: "]]>")
                    buffer.append(contentsOf: bytes[start..<(position - 3)])
                } else if matches("<!--") {
                    try skip(past: "-->")
                } else {
                    try closeTag(tag.name)
                    break
                }
                runStart = position
            } else if byte == UInt8(ascii: "&") {
                buffer.append(contentsOf: bytes[runStart..<position])
                try reference(into: &buffer)
                runStart = position
            } else {
                position += 1
            }
        }
        guard let string = String(validating: buffer, as: UTF8.self) else {
            throw error("text of <\(tag.name)> is not valid UTF-8", at: tag.offset)
        }
        return string
    }

    private mutating func reference(into buffer: inout [UInt8]) throws(PropertyListError) {
        let start = position
        guard let end = bytes[position...].prefix(12).firstIndex(of: UInt8(ascii: ";")) else {
            throw error("unterminated character reference", at: start)
        }
        let name = String(decoding: bytes[(position + 1)..<end], as: UTF8.self)
        position = end + 1
        switch name {
        case "lt": buffer.append(UInt8(ascii: "<"))
        case "gt": buffer.append(UInt8(ascii: ">"))
        case "amp": buffer.append(UInt8(ascii: "&"))
        case "quot": buffer.append(UInt8(ascii: "\""))
        case "apos": buffer.append(UInt8(ascii: "'"))
        default:
            var code: UInt32?
            if name.hasPrefix("#x") || name.hasPrefix("#X") {
                code = UInt32(name.dropFirst(2), radix: 16)
            } else if name.hasPrefix("#") {
                code = UInt32(name.dropFirst(), radix: 10)
            }
            guard let code, let scalar = Unicode.Scalar(code) else {
                throw error("unknown character reference &\(name);", at: start)
            }
            buffer.append(contentsOf: String(Character(scalar)).utf8)
        }
    }

    // MARK: Helpers

    private func matches(_ literal: StaticString) -> Bool {
        let count = literal.utf8CodeUnitCount
        guard position + count <= bytes.count else { return false }
        return literal.withUTF8Buffer { expected in
            for offset in 0..<count where bytes[position + offset] != expected[offset] { return false }
            return true
        }
    }

    private mutating func skip(past terminator: StaticString) throws(PropertyListError) {
        while position < bytes.count {
            if matches(terminator) {
                position += terminator.utf8CodeUnitCount
                return
            }
            position += 1
        }
        throw .truncated("missing \"\(terminator)\"")
    }

    private func error(_ reason: String, at offset: Int? = nil) -> PropertyListError {
        .malformed(offset: offset ?? position, reason: reason)
    }

    private static func isNameByte(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
            || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "-")
            || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ":") || byte == UInt8(ascii: ".")
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    /// Decimal or `0x` hexadecimal, with an optional sign, as CF accepts. Values beyond `Int` become reals.
    /// The text without leading and trailing XML white space (space, tab, CR, LF). Byte-wise: Foundation's
    /// `trimmingCharacters(in:)` bridges through NSString and was a tenth of the time to open a large file.
    static func trimmed(_ text: String) -> Substring {
        let utf8 = text.utf8
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }
        guard let first = utf8.firstIndex(where: { !isSpace($0) }), let last = utf8.lastIndex(where: { !isSpace($0) }) else {
            return text[text.endIndex...]
        }
        return text[first...last]
    }

    static func integer(_ raw: String) -> PropertyList? {
        var digits = trimmed(raw)
        var negative = false
        if digits.first == "-" || digits.first == "+" {
            negative = digits.first == "-"
            digits = digits.dropFirst()
        }
        var radix = 10
        if digits.hasPrefix("0x") || digits.hasPrefix("0X") {
            radix = 16
            digits = digits.dropFirst(2)
        }
        guard !digits.isEmpty, digits.first != "-", digits.first != "+" else { return nil }
        if let magnitude = UInt64(digits, radix: radix) {
            if negative {
                if magnitude <= UInt64(Int.max) { return .integer(-Int(magnitude)) }
                if magnitude == UInt64(Int.max) + 1 { return .integer(Int.min) }
                return .real(-Double(magnitude))
            }
            if magnitude <= UInt64(Int.max) { return .integer(Int(magnitude)) }
            return .real(Double(magnitude))
        }
        return nil
    }

    /// Decimal reals plus the spellings CF and Python write for the special values.
    static func real(_ text: String) -> Double? {
        switch text.lowercased() {
        case "nan": return .nan
        case "inf", "+inf", "infinity", "+infinity": return .infinity
        case "-inf", "-infinity": return -.infinity
        default: return Double(text)
        }
    }
}
