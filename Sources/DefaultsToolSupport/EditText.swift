import Foundation
public import LiveDefaults

/// The text `defaults edit` hands to an editor: a domain's values as typed old-style text, under a header of
/// comments, with each key's schema beside it; and that text read back.
///
/// ```
/// // defaults edit com.example.api
/// // …
/// {
///     // Requests per minute per client. An integer in 1…100000 (default 100).
///     RateLimit = 100;
///     Theme = "dark";
/// }
/// ```
///
/// Every type survives: a quoted word is a string, `42` an integer, `4.2` a real, `true`/`false` a Boolean,
/// `2024-01-31T09:05:00Z` a date, `<0fa1>` data, `( … )` an array, `{ … }` a dictionary. Lines that begin with
/// `//` are comments; the command's own notes of a round (problems, conflicts) begin with `//!` and are
/// replaced at the next round.
public enum EditText {
    /// The prefix of the lines the command adds to a person's text when it opens the editor again.
    public static let notePrefix = "//!"

    /// Why the text is not a domain: the message and, when known, its line (from 1).
    public struct Problem: Error, Sendable, Hashable, CustomStringConvertible {
        /// The line the problem is at, when it is at one.
        public var line: Int?
        /// The key the problem is about, when it is about one.
        public var key: String?
        /// What is wrong, for a person.
        public var message: String

        /// A problem.
        public init(line: Int? = nil, key: String? = nil, message: String) {
            self.line = line
            self.key = key
            self.message = message
        }

        // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
        public var description: String {
            (line.map { "line \($0): " } ?? "") + (key.map { "\($0): " } ?? "") + message
        }
    }

    // MARK: Writing

    /// The text for a domain's `values`: `header` (each line a comment), then the dictionary, each key with its
    /// schema's summary and what it accepts above it, and the keys the schema declares that the domain does not
    /// set, commented out with their default. Keys in `hidden` (secrets) are left out, with a line saying so.
    public static func render(
        _ values: [String: PropertyList], header: [String], schema: DomainSchema?, hidden: Set<String> = []
    ) -> String {
        var lines = header.map { "// " + $0 }
        lines.append("{")
        for key in values.keys.sorted() {
            guard let value = values[key] else { continue }
            if hidden.contains(key) {
                lines.append(
                    "    // \(PropertyList.typedTextKey(key)): a secret, not shown; it is kept as it is (--show-secrets shows it)"
                )
                continue
            }
            if let declared = schema?.keys[key] { lines.append("    // " + describe(declared)) }
            lines.append("    " + entry(key, value, indent: 1))
        }
        let unset = (schema?.sortedKeys ?? []).filter { values[$0.name] == nil }
        if !unset.isEmpty {
            lines.append("")
            lines.append(
                "    // Declared by the program's schema and not set here (remove the // of a line to set it):")
            for declared in unset {
                let value = declared.defaultValue.map(oneLine) ?? placeholder(for: declared.type)
                lines.append("    // " + describe(declared))
                lines.append("    // \(PropertyList.typedTextKey(declared.name)) = \(value);")
            }
        }
        lines.append("}")
        return lines.joined(separator: "\n") + "\n"
    }

    /// One key and its value as the text holds it (`Key = value;`), the value laid out at `indent`.
    static func entry(_ key: String, _ value: PropertyList, indent: Int) -> String {
        let pad = String(repeating: "    ", count: indent)
        let text = value.typedText.split(separator: "\n", omittingEmptySubsequences: false).joined(
            separator: "\n" + pad)
        return "\(PropertyList.typedTextKey(key)) = \(text);"
    }

    /// A value's text on one line (its layout collapsed: a string never holds a raw line break in this text).
    static func oneLine(_ value: PropertyList) -> String {
        value.typedText.replacing(/\n\s*/, with: " ")
    }

    /// The text a value shows as, for comparing what a person saved with what they were shown: two values are
    /// the same edit exactly when their texts are (a date shown to the second, a NaN, compare as shown).
    public static func canonical(_ value: PropertyList) -> String { value.typedText }

    /// A text as one comment line: a line break or another control character (DEL included) in a schema's
    /// summary, a path or a key would end the comment and start a line the reader parses.
    static func commentLine(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? " " : $0 }))
    }

    /// A declared key in words: its summary, what it accepts, its default.
    static func describe(_ key: KeySchema) -> String {
        var text = key.summary.map { $0.hasSuffix(".") ? $0 + " " : $0 + ". " } ?? ""
        let accepted = key.accepted
        text += accepted.prefix(1).uppercased() + accepted.dropFirst()
        if let value = key.defaultValue { text += " (default \(oneLine(value)))" }
        return commentLine(text)
    }

    /// What stands for a value of a type in a commented-out line of a key with no default.
    static func placeholder(for type: PropertyListType?) -> String {
        switch type {
        case .string?: "\"\""
        case .integer?: "0"
        case .real?: "0.0"
        case .boolean?: "false"
        case .date?: "2026-01-01T00:00:00Z"
        case .data?: "<>"
        case .array?: "()"
        case .dictionary?: "{ }"
        default: "\"\""
        }
    }

    // MARK: Reading

    /// The domain a person saved: its values, or nil when the text holds nothing but comments and space (the
    /// person emptied it: abort).
    ///
    /// - Throws: ``Problem`` with the line of a syntax error, or saying the text is not one dictionary.
    public static func parse(_ text: String) throws(Problem) -> [String: PropertyList]? {
        let parsed: PropertyList?
        do {
            parsed = try PropertyList.parseTypedText(text)
        } catch {
            throw Problem(line: line(of: error, in: text), message: message(of: error))
        }
        guard let value = parsed else { return nil }
        guard case .dictionary(let values) = value else {
            throw Problem(line: 1, message: "the text must be one dictionary, { Key = value; … }")
        }
        return values
    }

    /// The line of a reader's error: where its byte offset falls, or the last line for an error at the end.
    static func line(of error: PropertyListError, in text: String) -> Int? {
        let utf8 = Array(text.utf8)
        let offset = error.code == .malformed ? min(max(0, error.position ?? 0), utf8.count) : utf8.count
        guard error.code == .malformed || error.code == .truncated else { return nil }
        let newlines = utf8[..<offset].reduce(0) { $0 + ($1 == 0x0A ? 1 : 0) }
        // An error at the very end of a text that ends with a line break is on the last line, not after it.
        let trailing = offset == utf8.count && utf8.last == 0x0A ? 1 : 0
        return max(1, newlines + 1 - trailing)
    }

    /// A reader's error in words, without its byte offset (the line says where).
    static func message(of error: PropertyListError) -> String {
        switch error.code {
        case .malformed, .truncated: error.detail ?? "\(error)"
        default: "\(error)"
        }
    }

    // MARK: Notes of a round

    /// A person's saved text with the notes of the next round: `general` at the top, each of `atKeys` also just
    /// above the line its key is set at (when found), and each of `atLines` above that line of `text` (from 1);
    /// the notes of the round before are removed.
    public static func annotate(
        _ text: String, general: [String], atKeys: [String: [String]] = [:], atLines: [Int: [String]] = [:]
    ) -> String {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var marks: [Int: [String]] = [:]
        for (line, notes) in atLines where line >= 1 && line <= lines.count { marks[line - 1, default: []] += notes }
        for key in atKeys.keys.sorted() {
            guard let notes = atKeys[key], let index = lines.firstIndex(where: { setsKey(key, line: $0) }) else {
                continue
            }
            marks[index, default: []] += notes
        }
        var output = general.map { notePrefix + " " + $0 }
        for (index, line) in lines.enumerated() {
            if let notes = marks[index] {
                let pad = String(line.prefix { $0 == " " || $0 == "\t" })
                output += notes.map { pad + notePrefix + " " + $0 }
            }
            if line.trimmingCharacters(in: .whitespaces).hasPrefix(notePrefix) { continue }
            output.append(line)
        }
        return output.joined(separator: "\n")
    }

    /// Whether a line sets `key` (`Key = …` or `"Key" = …`, not a comment).
    static func setsKey(_ key: String, line: String) -> Bool {
        let trimmed = line.drop { $0 == " " || $0 == "\t" }
        for form in Set([key, PropertyList.string(key).typedText]) where trimmed.hasPrefix(form) {
            let rest = trimmed.dropFirst(form.count).drop { $0 == " " || $0 == "\t" }
            if rest.hasPrefix("=") { return true }
        }
        return false
    }
}
