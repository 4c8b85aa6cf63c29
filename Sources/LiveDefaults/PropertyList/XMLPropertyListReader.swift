import Foundation

/// Reads Apple's XML property-list format, as written by Foundation (on Linux and Apple platforms), CF and
/// Python's `plistlib`.
///
/// A small hand-written scanner rather than an XML library: the core stays free of system packages
/// (FoundationXML needs libxml2), the nesting depth is bounded, and reading is a single pass over the bytes.
/// It accepts the XML declaration, a DOCTYPE (with an internal subset), comments, CDATA sections, the
/// predefined and numeric character references, and the empty-element forms (`<dict/>`, `<string/>`).
///
/// Speed matters here: opening a domain is mostly this parse. The reader works on the bytes in place (no
/// copy), recognises element names without making strings, parses integers straight from the bytes, and
/// builds each dictionary at its final size (the open rows of `Docs/Benchmarks.md` measure it).
struct XMLPropertyListReader: ~Copyable {
    private let bytes: UnsafeBufferPointer<UInt8>
    private var position = 0
    /// Where the top-level dictionary's entries lie, collected when ``readIndexed(_:)`` asks.
    private var layout: Layout?

    /// Where the entries of the top-level dictionary lie in the input (``XMLDictionaryIndex`` keeps it).
    struct Layout: Equatable {
        /// Just after the top-level `<dict>`, and where its `</dict>` begins.
        var bodyStart = 0
        var bodyEnd = 0
        /// The offset of each entry's `<key>`, in order (a repeated key has one per occurrence).
        var entryStarts: [Int] = []
    }

    static func read(_ data: Data) throws(PropertyListError) -> PropertyList {
        try readIndexed(data, collectingLayout: false).value
    }

    /// Reads a whole document and, when asked and its top-level value is a dictionary (written `<dict>…</dict>`,
    /// not `<dict/>`), where that dictionary's entries lie.
    static func readIndexed(_ data: Data, collectingLayout: Bool) throws(PropertyListError) -> (
        value: PropertyList, layout: Layout?
    ) {
        let result: Result<(PropertyList, Layout?), PropertyListError> = data.withUnsafeBytes { raw in
            var reader = XMLPropertyListReader(bytes: raw.bindMemory(to: UInt8.self))
            if collectingLayout { reader.layout = Layout(bodyStart: -1) }
            do throws(PropertyListError) {
                let value = try reader.document()
                let layout = reader.layout.flatMap { $0.bodyStart >= 0 && $0.bodyEnd > 0 ? $0 : nil }
                return .success((value, layout))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// The entries of a top-level dictionary written between `range`'s bounds, with the offset of each one's
    /// `<key>`: `range` must start where an entry (or the white space and comments before one) starts, and
    /// the entries and the markup after them must end exactly at its upper bound. Nil when they do not, or
    /// when the bytes there are not well-formed entries: the caller then reads the whole document, which
    /// reports the error.
    static func entries(of data: Data, in range: Range<Int>) -> [(start: Int, key: String, value: PropertyList)]? {
        guard range.lowerBound >= 0, range.upperBound <= data.count else { return nil }
        return data.withUnsafeBytes { raw in
            var reader = XMLPropertyListReader(bytes: raw.bindMemory(to: UInt8.self))
            reader.position = range.lowerBound
            var found: [(start: Int, key: String, value: PropertyList)] = []
            do throws(PropertyListError) {
                while true {
                    try reader.skipMarkup()
                    if reader.position == range.upperBound { return found }
                    let start = reader.position
                    guard start < range.upperBound else { return nil }
                    let (key, value) = try reader.entry(depth: 1)
                    guard reader.position <= range.upperBound else { return nil }
                    found.append((start, key, value))
                }
            } catch {
                return nil
            }
        }
    }

    private init(bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    /// The elements of the format; anything else is an error.
    private enum Element {
        case plist, dict, array, key, string, integer, real, `true`, `false`, date, data, unknown

        /// The element whose name the bytes spell: the name's bytes packed into one integer and compared
        /// with the packed names (comparing byte slices generically is a loop through generic code).
        init(_ bytes: UnsafeBufferPointer<UInt8>, _ name: Range<Int>) {
            guard name.count <= 7 else {
                self = .unknown
                return
            }
            var code: UInt64 = 0
            for index in name.reversed() { code = code << 8 | UInt64(bytes[index]) }
            switch code {
            case Self.code("key"): self = .key
            case Self.code("integer"): self = .integer
            case Self.code("string"): self = .string
            case Self.code("dict"): self = .dict
            case Self.code("array"): self = .array
            case Self.code("real"): self = .real
            case Self.code("true"): self = .true
            case Self.code("false"): self = .false
            case Self.code("date"): self = .date
            case Self.code("data"): self = .data
            case Self.code("plist"): self = .plist
            default: self = .unknown
            }
        }

        /// A name of up to seven ASCII letters packed little-endian, as ``init(_:_:)`` packs the input.
        private static func code(_ name: StaticString) -> UInt64 {
            name.withUTF8Buffer { bytes in bytes.reversed().reduce(0) { $0 << 8 | UInt64($1) } }
        }
    }

    private struct Tag {
        var element: Element
        /// Where the name is in the input (for the closing tag and for messages).
        var name: Range<Int>
        var isEmptyElement: Bool
        var offset: Int
    }

    private func name(of tag: Tag) -> String {
        String(decoding: bytes[tag.name], as: UTF8.self)
    }

    // MARK: Document structure

    private mutating func document() throws(PropertyListError) -> PropertyList {
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { position = 3 }
        try skipMarkup()
        guard let first = try openTag() else { throw error("expected <plist> or a value") }
        let value: PropertyList
        if first.element == .plist {
            guard !first.isEmptyElement else { throw error("the <plist> element is empty") }
            try skipMarkup()
            guard let tag = try openTag() else { throw error("expected a value inside <plist>") }
            value = try self.value(for: tag, depth: 0)
            try skipMarkup()
            try closeTag(first)
        } else {
            value = try self.value(for: first, depth: 0)
        }
        try skipMarkup()
        guard position == bytes.count else { throw error("unexpected content after the property list") }
        return value
    }

    private mutating func value(for tag: Tag, depth: Int) throws(PropertyListError) -> PropertyList {
        switch tag.element {
        case .dict:
            guard depth < PropertyListLimits.maximumDepth else {
                throw .nestingTooDeep(limit: PropertyListLimits.maximumDepth)
            }
            return .dictionary(try dictionary(tag, depth: depth + 1))
        case .array:
            guard depth < PropertyListLimits.maximumDepth else {
                throw .nestingTooDeep(limit: PropertyListLimits.maximumDepth)
            }
            return .array(try array(tag, depth: depth + 1))
        case .string:
            return .string(try text(of: tag))
        case .integer:
            let text: String
            if let range = try plainText(of: tag) {
                if let number = Self.integer(bytes[range]) { return .integer(number) }
                text = String(decoding: bytes[range], as: UTF8.self)
            } else {
                text = try self.text(of: tag)
            }
            // Hexadecimal, long, or out of range: the general rules.
            guard let number = Self.integer(text) else { throw error("invalid integer \"\(text)\"", at: tag.offset) }
            return number
        case .real:
            let text = String(Self.trimmed(try text(of: tag)))
            guard let number = Self.real(text) else { throw error("invalid real \"\(text)\"", at: tag.offset) }
            return .real(number)
        case .true, .false:
            if !tag.isEmptyElement {
                try skipMarkup()
                try closeTag(tag)
            }
            return .bool(tag.element == .true)
        case .date:
            let text = try text(of: tag)
            guard let date = PropertyListDate.parse(text) else {
                throw error("invalid date \"\(text)\" (expected YYYY-MM-DDTHH:MM:SSZ)", at: tag.offset)
            }
            return .date(date)
        case .data:
            let text = try text(of: tag)
            // Empty data is written as white space between the tags (Foundation's decoder answers nil
            // for input that is empty once white space is ignored).
            if text.utf8.allSatisfy(Self.isSpace) { return .data(Data()) }
            guard let data = Data(base64Encoded: text, options: .ignoreUnknownCharacters) else {
                throw error("invalid base64 in <data>", at: tag.offset)
            }
            return .data(data)
        case .plist, .key, .unknown:
            throw error("unknown element <\(name(of: tag))>", at: tag.offset)
        }
    }

    private mutating func dictionary(_ tag: Tag, depth: Int) throws(PropertyListError) -> [String: PropertyList] {
        if tag.isEmptyElement { return [:] }
        // The top-level dictionary (a whole domain, possibly 10,000 keys) is grown once to about its final
        // size, estimated from the bytes its first entries took: growing it step by step rehashes it a
        // dozen times.
        var entries: [String: PropertyList] = [:]
        let start = position
        // Only the top-level dictionary's entries are located (depth 1 is the document's own value).
        let collecting = depth == 1 && layout != nil
        if collecting { layout?.bodyStart = position }
        while true {
            if depth == 1, entries.count == 64 {
                // Made anew with `init(minimumCapacity:)` rather than grown with `reserveCapacity`, which the
                // standard library does not specialise: its generic entry point looked the dictionary's types
                // up at run time on a fresh process's first open. The 64 entries are inserted again.
                // Integer arithmetic on sizes bounded by the bytes in memory: no overflow, no conversion.
                let remaining = bytes.count - position
                let perEntry = max(1, position - start)
                let estimate = remaining * 64 / perEntry
                var grown = [String: PropertyList](minimumCapacity: 64 + estimate + estimate / 10)
                for (key, value) in entries { grown[key] = value }
                entries = grown
            }
            try skipMarkup()
            let entryStart = position
            if try closes(tag) {
                if collecting { layout?.bodyEnd = entryStart }
                return entries
            }
            if collecting { layout?.entryStarts.append(entryStart) }
            // A repeated key keeps its last value.
            let (key, value) = try entry(depth: depth)
            entries[key] = value
        }
    }

    /// One `<key>` and its value, inside a dictionary at `depth`.
    @inline(__always)
    private mutating func entry(depth: Int) throws(PropertyListError) -> (String, PropertyList) {
        if let simple = simpleEntry() { return simple }
        guard let keyTag = try openTag(), keyTag.element == .key else { throw error("expected <key> in <dict>") }
        let key = try text(of: keyTag)
        try skipMarkup()
        guard let valueTag = try openTag() else { throw error("expected a value for key \"\(key)\"") }
        return (key, try value(for: valueTag, depth: depth))
    }

    /// The common entry, read in one go: `<key>name</key>`, white space, then `<integer>`, `<string>`,
    /// `<real>`, `<true/>` or `<false/>` with plain text (no references, CDATA or comments) and exact tags.
    /// Returns nil, having consumed nothing, for anything else, which the general path then reads (and
    /// reports if it is malformed): the two paths agree on every input this one accepts. It exists because
    /// nearly every entry of a settings file has this shape, and taking it tag by tag costs several times
    /// more.
    private mutating func simpleEntry() -> (String, PropertyList)? {
        let start = position
        guard literal("<key>", at: position), let (nameRange, nameIsASCII) = plainRun(from: position + 5),
            literal("</key>", at: nameRange.upperBound)
        else { return nil }
        var index = nameRange.upperBound + 6
        while index < bytes.count, Self.isSpace(bytes[index]) { index += 1 }
        let value: PropertyList
        if literal("<integer>", at: index), let (range, _) = plainRun(from: index + 9),
            literal("</integer>", at: range.upperBound),
            let integer = Self.integer(bytes[range])
        {
            value = .integer(integer)
            index = range.upperBound + 10
        } else if literal("<string>", at: index), let (range, isASCII) = plainRun(from: index + 8),
            literal("</string>", at: range.upperBound), let string = makeString(range, isASCII: isASCII)
        {
            value = .string(string)
            index = range.upperBound + 9
        } else if literal("<true/>", at: index) {
            value = .bool(true)
            index += 7
        } else if literal("<false/>", at: index) {
            value = .bool(false)
            index += 8
        } else if literal("<real>", at: index), let (range, _) = plainRun(from: index + 6),
            literal("</real>", at: range.upperBound),
            let real = Self.real(
                String(Self.trimmed(String(decoding: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self))))
        {
            value = .real(real)
            index = range.upperBound + 7
        } else {
            return nil
        }
        guard let name = makeString(nameRange, isASCII: nameIsASCII) else {
            position = start
            return nil
        }
        position = index
        return (name, value)
    }

    /// The run of plain text from `index` up to the next `<` (which must exist), and whether it is ASCII;
    /// nil when a reference (`&`) comes first or the input ends.
    private func plainRun(from index: Int) -> (range: Range<Int>, isASCII: Bool)? {
        var end = index
        var seen: UInt8 = 0
        while end < bytes.count {
            let byte = bytes[end]
            if byte == UInt8(ascii: "<") { return (index..<end, seen < 0x80) }
            if byte == UInt8(ascii: "&") { return nil }
            seen |= byte
            end += 1
        }
        return nil
    }

    /// The text of a plain run; nil when it is not valid UTF-8. ASCII is valid UTF-8 and takes the contiguous,
    /// specialised initialiser (the validating one is generic over the slice type, hence slow).
    private func makeString(_ range: Range<Int>, isASCII: Bool) -> String? {
        if isASCII { return String(decoding: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self) }
        return String(validating: bytes[range], as: UTF8.self)
    }

    /// Whether the input holds `text` at `index`.
    private func literal(_ text: StaticString, at index: Int) -> Bool {
        let count = text.utf8CodeUnitCount
        guard index >= 0, index + count <= bytes.count else { return false }
        // `withUTF8Buffer` rather than `utf8Start`, which traps for a one-character literal.
        return text.withUTF8Buffer { memcmp(bytes.baseAddress! + index, $0.baseAddress!, count) == 0 }
    }

    private mutating func array(_ tag: Tag, depth: Int) throws(PropertyListError) -> [PropertyList] {
        var elements: [PropertyList] = []
        if tag.isEmptyElement { return elements }
        while true {
            try skipMarkup()
            if try closes(tag) { return elements }
            guard let elementTag = try openTag() else { throw error("expected a value in <array>") }
            elements.append(try value(for: elementTag, depth: depth))
        }
    }

    // MARK: Lexical level

    /// Skips white space, comments, processing instructions and DOCTYPE declarations.
    private mutating func skipMarkup() throws(PropertyListError) {
        while position < bytes.count {
            let byte = bytes[position]
            if Self.isSpace(byte) {
                position += 1
            } else if byte != UInt8(ascii: "<") {
                return
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
        let name = nameStart..<position
        // The common case: `>` right after the name.
        if position < bytes.count, bytes[position] == UInt8(ascii: ">") {
            position += 1
            return Tag(element: Element(bytes, name), name: name, isEmptyElement: false, offset: start)
        }
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
                return Tag(element: Element(bytes, name), name: name, isEmptyElement: empty, offset: start)
            }
        }
        throw .truncated("unterminated <\(String(decoding: bytes[name], as: UTF8.self))> tag")
    }

    /// Consumes the closing tag of `tag` when it comes next.
    private mutating func closes(_ tag: Tag) throws(PropertyListError) -> Bool {
        guard position < bytes.count else { throw .truncated("missing </\(name(of: tag))>") }
        guard matches("</") else { return false }
        try closeTag(tag)
        return true
    }

    /// Consumes `</name>` for the element `tag` opened.
    private mutating func closeTag(_ tag: Tag) throws(PropertyListError) {
        guard position < bytes.count else { throw .truncated("missing </\(name(of: tag))>") }
        let start = position
        guard matches("</") else { throw error("expected </\(name(of: tag))>") }
        position += 2
        let nameStart = position
        while position < bytes.count, Self.isNameByte(bytes[position]) { position += 1 }
        let found = nameStart..<position
        while position < bytes.count, Self.isSpace(bytes[position]) { position += 1 }
        guard position < bytes.count else {
            throw .truncated("unterminated </\(String(decoding: bytes[found], as: UTF8.self))>")
        }
        guard found.count == tag.name.count, bytes[position] == UInt8(ascii: ">"),
            memcmp(bytes.baseAddress! + found.lowerBound, bytes.baseAddress! + tag.name.lowerBound, found.count) == 0
        else {
            throw error(
                "expected </\(name(of: tag))>, found </\(String(decoding: bytes[found], as: UTF8.self))>", at: start)
        }
        position += 1
    }

    /// The range of a text element's character data when it is plain (no references, CDATA or comments),
    /// consuming the element; nil, consuming nothing, otherwise.
    private mutating func plainText(of tag: Tag) throws(PropertyListError) -> Range<Int>? {
        try plainTextAndASCII(of: tag)?.range
    }

    /// ``plainText(of:)``, and whether the text is all ASCII (then it needs no UTF-8 validation).
    private mutating func plainTextAndASCII(of tag: Tag) throws(PropertyListError) -> (
        range: Range<Int>, isASCII: Bool
    )? {
        if tag.isEmptyElement { return (position..<position, true) }
        guard let run = plainRun(from: position), literal("</", at: run.range.upperBound) else { return nil }
        position = run.range.upperBound
        try closeTag(tag)
        return run
    }

    /// The character data of a text element up to its closing tag, with references and CDATA resolved.
    private mutating func text(of tag: Tag) throws(PropertyListError) -> String {
        if tag.isEmptyElement { return "" }
        // The common case, plain text up to the closing tag, straight from the input without a buffer.
        if let (range, isASCII) = try plainTextAndASCII(of: tag) {
            guard let string = makeString(range, isASCII: isASCII) else {
                throw error("text of <\(name(of: tag))> is not valid UTF-8", at: tag.offset)
            }
            return string
        }
        var buffer: [UInt8] = []
        var runStart = position
        while true {
            guard position < bytes.count else { throw .truncated("unterminated <\(name(of: tag))>") }
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
                    try closeTag(tag)
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
            throw error("text of <\(name(of: tag))> is not valid UTF-8", at: tag.offset)
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

    private func matches(_ text: StaticString) -> Bool {
        literal(text, at: position)
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
        (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
            || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
            || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "-")
            || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ":") || byte == UInt8(ascii: ".")
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    /// A plain decimal integer straight from the bytes (XML white space around it, an optional sign, at
    /// most 18 digits, so it cannot overflow); nil for anything else, which the text path then reads.
    private static func integer(_ text: UnsafeBufferPointer<UInt8>.SubSequence) -> Int? {
        var index = text.startIndex
        var end = text.endIndex
        while index < end, isSpace(text[index]) { index += 1 }
        while end > index, isSpace(text[end - 1]) { end -= 1 }
        var negative = false
        if index < end, text[index] == UInt8(ascii: "-") || text[index] == UInt8(ascii: "+") {
            negative = text[index] == UInt8(ascii: "-")
            index += 1
        }
        guard index < end, end - index <= 18 else { return nil }
        var value = 0
        while index < end {
            let digit = Int(text[index]) &- 0x30
            guard digit >= 0, digit <= 9 else { return nil }
            value = value &* 10 &+ digit
            index += 1
        }
        return negative ? -value : value
    }

    /// Decimal or `0x` hexadecimal, with an optional sign, as CF accepts. Values beyond `Int` become reals.
    /// The text without leading and trailing XML white space (space, tab, CR, LF). Byte-wise: Foundation's
    /// `trimmingCharacters(in:)` bridges through NSString.
    static func trimmed(_ text: String) -> Substring {
        let utf8 = text.utf8
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }
        guard let first = utf8.firstIndex(where: { !isSpace($0) }), let last = utf8.lastIndex(where: { !isSpace($0) })
        else {
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
