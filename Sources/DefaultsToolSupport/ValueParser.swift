public import Foundation
public import LiveDefaults

/// Turns the words after `defaults write <domain> <key>` into a value, as macOS does.
///
/// - one bare word: an old-style property list (`42`, `"A B"`, `(a, b)`, `{ k = v; }`, `<0fa1>`);
/// - `-string s`, `-data 0fa1`, `-int n` / `-integer n`, `-float x`, `-bool b` / `-boolean b` (`YES`, `NO`,
///   `TRUE`, `FALSE`, `1`, `0`, any case), `-date d`;
/// - `-array v…` and `-array-add v…`, `-dict k v…` and `-dict-add k v…`: each value is a bare old-style
///   value or a typed pair such as `-int 3`.
public enum ValueParser {
    /// What the words ask for.
    public enum Edit: Sendable, Hashable {
        /// Store this value under the key.
        case set(PropertyList)
        /// Append these elements to the array under the key (`-array-add`).
        case appendToArray([PropertyList])
        /// Merge these entries into the dictionary under the key (`-dict-add`).
        case mergeIntoDictionary([String: PropertyList])
    }

    /// The edit that the words after `defaults write <domain> <key>` describe.
    ///
    /// - Throws: ``ToolError`` naming the word that is not a valid value.
    public static func parse(_ words: [String]) throws -> Edit {
        guard let first = words.first else { throw ToolError("a value is missing") }
        switch first {
        case "-array":
            return .set(.array(try elements(Array(words.dropFirst()))))
        case "-array-add":
            return .appendToArray(try elements(Array(words.dropFirst())))
        case "-dict":
            return .set(.dictionary(try entries(Array(words.dropFirst()))))
        case "-dict-add":
            return .mergeIntoDictionary(try entries(Array(words.dropFirst())))
        default:
            var rest = words[...]
            let value = try single(&rest)
            guard rest.isEmpty else { throw ToolError("unexpected argument \"\(rest.first!)\" after the value") }
            return .set(value)
        }
    }

    /// One value from the front of `words`: a type flag and its argument, or a bare old-style value.
    public static func single(_ words: inout ArraySlice<String>) throws -> PropertyList {
        guard let first = words.popFirst() else { throw ToolError("a value is missing") }
        let typed: (String) throws -> PropertyList
        switch first {
        case "-string": typed = { .string($0) }
        case "-int", "-integer":
            typed = { text in
                guard let integer = Int(text) else { throw ToolError("\(first) needs an integer, not \"\(text)\"") }
                return .integer(integer)
            }
        case "-float":
            typed = { text in
                guard let real = Double(text), !text.isEmpty else {
                    throw ToolError("-float needs a number, not \"\(text)\"")
                }
                return .real(real)
            }
        case "-bool", "-boolean":
            typed = { text in
                guard let bool = PropertyList.bool(fromText: text) else {
                    throw ToolError("\(first) needs YES, NO, TRUE, FALSE, 1 or 0, not \"\(text)\"")
                }
                return .bool(bool)
            }
        case "-data":
            typed = { text in
                guard let data = hexData(text) else {
                    throw ToolError("-data needs hexadecimal bytes, not \"\(text)\"")
                }
                return .data(data)
            }
        case "-date":
            typed = { text in
                guard let date = parseDate(text) else {
                    throw ToolError(
                        "-date needs a date such as \"2024-01-31 09:05:00 +0000\" or \"2024-01-31T09:05:00Z\", not \"\(text)\""
                    )
                }
                return .date(date)
            }
        case "-array", "-array-add", "-dict", "-dict-add":
            throw ToolError("\(first) cannot be nested inside another value")
        default:
            return try bare(first)
        }
        guard let argument = words.popFirst() else { throw ToolError("\(first) needs a value") }
        return try typed(argument)
    }

    /// A bare value: old-style property-list syntax when it looks like one, else the plain string.
    public static func bare(_ text: String) throws -> PropertyList {
        guard let first = text.first, "({<\"'".contains(first) else { return .string(text) }
        do {
            return try PropertyList(parsing: text)
        } catch {
            throw ToolError("cannot parse \"\(text)\" as a property list: \(error)")
        }
    }

    private static func elements(_ words: [String]) throws -> [PropertyList] {
        var rest = words[...]
        var values: [PropertyList] = []
        while !rest.isEmpty { values.append(try single(&rest)) }
        return values
    }

    private static func entries(_ words: [String]) throws -> [String: PropertyList] {
        var rest = words[...]
        var result: [String: PropertyList] = [:]
        while let key = rest.popFirst() {
            guard !rest.isEmpty else { throw ToolError("the dictionary key \"\(key)\" has no value") }
            result[key] = try single(&rest)
        }
        return result
    }

    /// Bytes from hexadecimal digits, white space and `<`/`>` ignored (`-data 0fa1`, `<0f a1>`).
    ///
    /// Read by the old-style property-list reader as a data literal, so the library has one hex parser.
    public static func hexData(_ text: String) -> Data? {
        let digits = text.filter { !$0.isWhitespace && $0 != "<" && $0 != ">" }
        guard digits.allSatisfy(\.isHexDigit), case .data(let data)? = try? PropertyList(parsing: "<\(digits)>") else {
            return nil
        }
        return data
    }

    /// `2024-01-31 09:05:00 +0000` (what `defaults read` prints), ISO 8601, or a plain `2024-01-31`.
    public static func parseDate(_ text: String) -> Date? {
        PropertyList.date(fromText: text)
    }
}
