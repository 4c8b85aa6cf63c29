public import Foundation

/// A property-list value: the only kind of value a defaults domain can hold.
///
/// `PropertyList` is a plain `Sendable` value type, so a value read from a store can be handed to any task or
/// thread. It mirrors the property-list types of Foundation (`NSString`, `NSNumber`, `NSDate`, `NSData`,
/// `NSArray`, `NSDictionary`):
///
/// ```swift
/// let limits: PropertyList = ["RateLimit": 100, "Hosts": ["a", "b"], "Verbose": true]
/// ```
///
/// Integers are 64-bit. A file that stores an unsigned integer above `Int.max` (possible in binary property
/// lists) is read as a ``real(_:)`` holding the nearest `Double`, rather than failing the whole file.
public enum PropertyList: Sendable, Hashable {
    /// A string (`<string>`).
    case string(String)
    /// A signed 64-bit integer (`<integer>`).
    case integer(Int)
    /// A floating-point number (`<real>`).
    case real(Double)
    /// A Boolean (`<true/>`, `<false/>`).
    case bool(Bool)
    /// A point in time (`<date>`). XML property lists keep whole seconds; binary ones keep the full `Double`.
    case date(Date)
    /// Raw bytes (`<data>`).
    case data(Data)
    /// An ordered list of values (`<array>`).
    case array([PropertyList])
    /// String keys to values (`<dict>`).
    case dictionary([String: PropertyList])
}

extension PropertyList {
    /// The name of the value's type as `defaults read-type` prints it: `string`, `integer`, `float`, `boolean`,
    /// `date`, `data`, `array` or `dictionary`.
    public var typeName: String {
        switch self {
        case .string: "string"
        case .integer: "integer"
        case .real: "float"
        case .bool: "boolean"
        case .date: "date"
        case .data: "data"
        case .array: "array"
        case .dictionary: "dictionary"
        }
    }

    /// The value as messages show it: strings as they are (control characters escaped: ``printable(_:)``),
    /// numbers and dates plainly (ISO 8601), other kinds as their description.
    var plainText: String {
        switch self {
        case .string(let string): Self.printable(string)
        case .integer(let integer): "\(integer)"
        case .real(let real): "\(real)"
        case .bool(let bool): bool ? "true" : "false"
        case .date(let date): date.formatted(.iso8601)
        default: "\(self)"
        }
    }

    /// Text from a file as a message or a log line shows it: each control character (a NUL, a line break, an
    /// escape) written as `\u{…}`, so that a value or key from a hostile file can neither cut a log line, nor
    /// forge the next one, nor make a log file binary to the tools that read it.
    static func printable(_ text: String) -> String {
        func isControl(_ scalar: Unicode.Scalar) -> Bool { scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) }
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var result = ""
        for scalar in text.unicodeScalars {
            if isControl(scalar) {
                result += "\\u{" + String(scalar.value, radix: 16) + "}"
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    /// The string, when the value is a string.
    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The integer, when the value is an integer.
    public var integerValue: Int? {
        if case .integer(let value) = self { return value }
        return nil
    }

    /// The number, when the value is a real (integers are not converted; see ``Defaults/double(forKey:)``).
    public var realValue: Double? {
        if case .real(let value) = self { return value }
        return nil
    }

    /// The Boolean, when the value is a Boolean.
    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// The date, when the value is a date.
    public var dateValue: Date? {
        if case .date(let value) = self { return value }
        return nil
    }

    /// The bytes, when the value is data.
    public var dataValue: Data? {
        if case .data(let value) = self { return value }
        return nil
    }

    /// The elements, when the value is an array.
    public var arrayValue: [PropertyList]? {
        if case .array(let value) = self { return value }
        return nil
    }

    /// The entries, when the value is a dictionary.
    public var dictionaryValue: [String: PropertyList]? {
        if case .dictionary(let value) = self { return value }
        return nil
    }

    /// An integer of any width as a property list stores it: an `integer` when it fits `Int`, beyond that the
    /// `real` that holds it exactly (as the readers read such integers from binary files); nil when no
    /// property list can hold it.
    static func storedInteger(_ value: some BinaryInteger) -> PropertyList? {
        if let integer = Int(exactly: value) { return .integer(integer) }
        return Double(exactly: value).map { .real($0) }
    }

    /// The deepest nesting of arrays and dictionaries below and including this value (a scalar has depth 1).
    public var depth: Int {
        switch self {
        case .array(let elements): 1 + (elements.lazy.map(\.depth).max() ?? 0)
        case .dictionary(let entries): 1 + (entries.values.lazy.map(\.depth).max() ?? 0)
        default: 1
        }
    }
}

extension PropertyList: ExpressibleByStringLiteral {
    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    public init(stringLiteral value: String) { self = .string(value) }
}

extension PropertyList: ExpressibleByIntegerLiteral {
    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    public init(integerLiteral value: Int) { self = .integer(value) }
}

extension PropertyList: ExpressibleByFloatLiteral {
    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    public init(floatLiteral value: Double) { self = .real(value) }
}

extension PropertyList: ExpressibleByBooleanLiteral {
    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}

extension PropertyList: ExpressibleByArrayLiteral {
    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    public init(arrayLiteral elements: PropertyList...) { self = .array(elements) }
}

extension PropertyList: ExpressibleByDictionaryLiteral {
    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    public init(dictionaryLiteral elements: (String, PropertyList)...) {
        self = .dictionary(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

extension PropertyList: CustomStringConvertible {
    /// The value as an old-style (OpenStep) property list, the way `defaults read` prints it.
    public var description: String { OpenStepPropertyListWriter.string(from: self) }
}
