public import Foundation

extension PropertyList {
    /// The encodings of a property list on disk.
    public enum Format: String, Sendable, Hashable, CaseIterable {
        /// Apple's XML format, the one Foundation.UserDefaults writes on Linux and the one new files get.
        case xml
        /// Apple's `bplist00` binary format; files found binary are kept binary.
        case binary
        /// The old-style (OpenStep) text format, used for command-line values and `defaults` output.
        case openStep
    }

    /// Reads a property list in any of the three formats, detecting which one it is.
    ///
    /// - Parameter data: The bytes of a file or of a command-line value.
    /// - Returns: The value and the format it was written in.
    /// - Throws: ``PropertyListError`` when the bytes are not a well-formed property list, are nested deeper
    ///   than ``PropertyListLimits/maximumDepth``, or (binary) refer to themselves.
    public static func decode(_ data: Data) throws(PropertyListError) -> (value: PropertyList, format: Format) {
        let (value, format, _) = try decode(data, indexing: false)
        return (value, format)
    }

    /// ``decode(_:)``, and with `indexing`, the index of a large XML dictionary (``XMLDictionaryIndex``), with
    /// which the next version of the same file is read by parsing only what changed.
    static func decode(_ data: Data, indexing: Bool) throws(PropertyListError) -> (
        value: PropertyList, format: Format, index: XMLDictionaryIndex?
    ) {
        // Bytes that begin like the binary magic are a binary file, however short: a file cut after "bp"
        // is a truncated binary plist, not the old-style string "bp".
        if data.starts(with: "bplist".utf8)
            || (data.count < BinaryPropertyListReader.magic.count && !data.isEmpty
                && BinaryPropertyListReader.magic.starts(with: data))
        {
            return (try BinaryPropertyListReader.read(data), .binary, nil)
        }
        let format = detectFormat(data)
        switch format {
        case .binary: return (try BinaryPropertyListReader.read(data), .binary, nil)
        case .xml:
            if indexing {
                let (value, index) = try XMLDictionaryIndex.read(data)
                return (value, .xml, index)
            }
            return (try XMLPropertyListReader.read(data), .xml, nil)
        case .openStep: return (try OpenStepPropertyListParser.parse(data), .openStep, nil)
        }
    }

    /// Reads a property list in one given format, without guessing.
    ///
    /// - Parameters:
    ///   - data: The bytes of a file or of a value.
    ///   - format: The format the bytes must be in.
    /// - Throws: ``PropertyListError`` when the bytes are not a well-formed property list of that format.
    public static func decode(_ data: Data, as format: Format) throws(PropertyListError) -> PropertyList {
        switch format {
        case .xml: try XMLPropertyListReader.read(data)
        case .binary: try BinaryPropertyListReader.read(data)
        case .openStep: try OpenStepPropertyListParser.parse(data)
        }
    }

    /// Parses text as an old-style property list (`(1, 2)`, `{ Key = value; }`, `"A B"`, `<0fa1>`), or as XML
    /// when it starts like an XML document.
    ///
    /// Unlike ``decode(_:)``, this never takes text for a binary file: `b` and `bp` are bare strings here.
    public init(parsing text: String) throws(PropertyListError) {
        let data = Data(text.utf8)
        switch PropertyList.detectFormat(data) {
        case .xml: self = try XMLPropertyListReader.read(data)
        case .binary, .openStep: self = try OpenStepPropertyListParser.parse(data)
        }
    }

    /// Parses typed old-style text, the form ``typedText`` writes and `defaults edit` shows: old-style syntax
    /// (`{ Key = value; }`, `( a, b )`, `<0fa1>`, `//` and `/* */` comments) in which a quoted string is a
    /// string and a bare word is typed by its form: `42` an integer, `4.2`, `1e-05`, `nan`, `+infinity` a real,
    /// `true`/`false` a Boolean, `2024-01-31T09:05:00Z` a date, any other word a string. Nil for a text of
    /// nothing but space and comments.
    package static func parseTypedText(_ text: String) throws(PropertyListError) -> PropertyList? {
        do {
            return try OpenStepPropertyListParser.parse(Data(text.utf8), typed: true)
        } catch  where error.code == .unrecognizedFormat {
            // The old-style reader's word for a text with no value in it.
            return nil
        }
    }

    /// The value as typed old-style text (``parseTypedText(_:)`` reads it back with every type kept):
    /// strings always quoted, Booleans `true`/`false`, dates bare in ISO 8601 (whole seconds), reals with a
    /// point or an exponent.
    package var typedText: String {
        OpenStepPropertyListWriter.string(from: self, typed: true)
    }

    /// A dictionary key as typed old-style text writes it: bare when the reader reads it back bare (keys are
    /// strings in either form), quoted otherwise.
    package static func typedTextKey(_ key: String) -> String {
        OpenStepPropertyListWriter.quotedIfNeeded(key)
    }

    /// Encodes the value in a file format.
    ///
    /// Binary and old-style text can hold every value. XML cannot hold a date outside the years 0000–9999
    /// (or one that is not finite), which only a binary file or a program can produce.
    ///
    /// - Parameter format: `.xml` (the default, and what Foundation writes), `.binary`, or `.openStep`.
    /// - Throws: ``PropertyListError/Code/unrepresentable`` naming the first value the format
    ///   cannot hold.
    public func encoded(as format: Format = .xml) throws(PropertyListError) -> Data {
        switch format {
        case .xml: try XMLPropertyListWriter.data(from: self)
        case .binary: BinaryPropertyListWriter.data(from: self)
        case .openStep: Data(OpenStepPropertyListWriter.string(from: self).utf8)
        }
    }

    /// How old-style text shows dates.
    public enum DateStyle: Sendable, Hashable {
        /// `"2024-01-31T09:05:00Z"`, which the old-style parser reads back as a string.
        case iso8601
        /// `"2024-01-31 09:05:00 +0000"`, as macOS `defaults read` prints dates.
        case defaultsTool
    }

    /// A date as text in the given style, for any date: years beyond 0000–9999 get a sign and as many digits
    /// as they need, and a date beyond any calendar (not finite, or more than 2^63 seconds away) reads
    /// `<seconds> seconds since 1970`.
    package static func text(for date: Date, style: DateStyle) -> String {
        switch style {
        case .iso8601: PropertyListDate.isoText(date)
        case .defaultsTool: PropertyListDate.defaultsToolText(date)
        }
    }

    /// A Boolean from text, the one rule for text that stands for a Boolean (the `defaults write -bool` value,
    /// a string decoded as `Bool`): `YES`/`NO`, `TRUE`/`FALSE` or `1`/`0` in any case, white space around
    /// ignored. Nil for anything else. (`bool(forKey:)` of a string follows Foundation's looser
    /// `NSString.boolValue` instead, as code ported from Foundation expects.)
    package static func bool(fromText text: String) -> Bool? {
        switch text.trimmingCharacters(in: .whitespaces).lowercased() {
        case "yes", "true", "1": true
        case "no", "false", "0": false
        default: nil
        }
    }

    /// A date from text as people type it and ``text(for:style:)`` writes it (years 0000–9999):
    /// `2024-01-31T09:05:00Z` (fractional seconds allowed), `2024-01-31 09:05:00 +0000` (any offset, `+01:00`
    /// too; none means UTC) and `2024-01-31` (midnight UTC). Nil for anything else.
    package static func date(fromText text: String) -> Date? {
        PropertyListDate.parseLenient(text)
    }

    /// The value as old-style (OpenStep) text, as `defaults read` prints it: `{ Key = value; }`, `( a, b )`,
    /// strings quoted only where needed, Booleans as 1 and 0, data as `<0fa1>`.
    public func openStepText(dateStyle: DateStyle = .iso8601) -> String {
        OpenStepPropertyListWriter.string(from: self, dateStyle: dateStyle)
    }

    static func detectFormat(_ data: Data) -> Format {
        if data.starts(with: BinaryPropertyListReader.magic) { return .binary }
        var index = data.startIndex
        // Skip a UTF-8 byte-order mark and leading white space.
        if data.count >= 3, data[index] == 0xEF, data[index + 1] == 0xBB, data[index + 2] == 0xBF { index += 3 }
        while index < data.endIndex, [0x20, 0x09, 0x0A, 0x0D].contains(data[index]) { index += 1 }
        guard index < data.endIndex, data[index] == UInt8(ascii: "<") else { return .openStep }
        // "<?xml", "<!DOCTYPE", "<!--" or "<plist" start an XML document; "<0f a1>" is old-style data.
        let next = index + 1 < data.endIndex ? data[index + 1] : 0
        if next == UInt8(ascii: "?") || next == UInt8(ascii: "!") { return .xml }
        let rest = data[(index + 1)...].prefix(5)
        if rest.elementsEqual("plist".utf8) || rest.starts(with: "dict".utf8) || rest.starts(with: "array".utf8) {
            return .xml
        }
        return .openStep
    }
}

extension PropertyList {
    /// Why reading `new` as an edit of `old` through the index of large XML domain files (only the entries
    /// that changed are parsed) disagrees with reading it whole; nil when it agrees. For the fuzz target
    /// `FuzzIncrementalXML`, through LiveDefaultsTesting.
    package static func incrementalReadDisagreement(old: Data, new: Data) -> String? {
        XMLDictionaryIndex.disagreement(old: old, new: new)
    }
}
