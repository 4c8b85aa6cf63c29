import Foundation

/// The property-list type a key holds, as a schema names it.
public enum PropertyListType: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// `<integer>`.
    case integer
    /// `<real>`; an integer is accepted too (a JSON number, `-int` where a real is meant).
    case real
    /// `<string>`.
    case string
    /// `<true/>` or `<false/>`.
    case boolean
    /// `<date>`.
    case date
    /// `<data>`.
    case data
    /// `<array>`.
    case array
    /// `<dict>`.
    case dictionary

    /// The type of a value.
    public init(of value: PropertyList) {
        switch value {
        case .integer: self = .integer
        case .real: self = .real
        case .string: self = .string
        case .bool: self = .boolean
        case .date: self = .date
        case .data: self = .data
        case .array: self = .array
        case .dictionary: self = .dictionary
        }
    }

    /// Whether a value is of this type (a real accepts an integer).
    public func accepts(_ value: PropertyList) -> Bool {
        let found = PropertyListType(of: value)
        return found == self || (self == .real && found == .integer)
    }

    /// The type with its article, for messages: "an integer", "a string".
    var withArticle: String {
        switch self {
        case .integer: "an integer"
        case .real: "a real number"
        case .string: "a string"
        case .boolean: "a Boolean"
        case .date: "a date"
        case .data: "data"
        case .array: "an array"
        case .dictionary: "a dictionary"
        }
    }

    /// The `defaults write` flag that writes a value of this type.
    var writeFlag: String {
        switch self {
        case .integer: "-int"
        case .real: "-float"
        case .string: "-string"
        case .boolean: "-bool"
        case .date: "-date"
        case .data: "-data"
        case .array: "-array"
        case .dictionary: "-dict"
        }
    }

    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    public var description: String { rawValue }
}

/// What a program declares about one key: its type, default, range or choices, meaning, and whether its
/// value is a secret. Built from a ``DefaultsKey`` (``DefaultsKeys/schema``) or read from a published
/// schema file (``DomainSchema``); every writer checks values against it (``violation(for:)``).
public struct KeySchema: Sendable, Hashable {
    /// The key's name in the domain file.
    public var name: String
    /// The type its value must have; nil when any type is accepted.
    public var type: PropertyListType?
    /// What a read returns when no domain has the key; nil when the default is "no value".
    public var defaultValue: PropertyList?
    /// What the key means, in a sentence.
    public var summary: String?
    /// The smallest value accepted (integers, reals, strings and dates compare).
    public var minimum: PropertyList?
    /// The largest value accepted.
    public var maximum: PropertyList?
    /// The only values accepted (an enumeration's cases), in declaration order; nil when any is.
    public var choices: [PropertyList]?
    /// Whether the value is a secret: tools print `<secret>` in its place unless asked to show secrets.
    public var isSecret: Bool

    /// A key's schema.
    public init(
        name: String, type: PropertyListType?, defaultValue: PropertyList? = nil, summary: String? = nil,
        minimum: PropertyList? = nil, maximum: PropertyList? = nil, choices: [PropertyList]? = nil,
        isSecret: Bool = false
    ) {
        self.name = name
        self.type = type
        self.defaultValue = defaultValue
        self.summary = summary
        self.minimum = minimum
        self.maximum = maximum
        self.choices = choices
        self.isSecret = isSecret
    }

    /// Why `value` is not acceptable for this key, or nil when it is: of another type, outside the range,
    /// or not one of the choices.
    public func violation(for value: PropertyList) -> SchemaViolation? {
        if let type, !type.accepts(value) {
            return SchemaViolation(key: name, value: value, reason: .wrongType, accepted: accepted)
        }
        if let choices, !choices.contains(where: { Self.sameValue($0, value) }) {
            return SchemaViolation(key: name, value: value, reason: .notAChoice, accepted: accepted)
        }
        if let minimum, let order = Self.compare(value, minimum), order == .orderedAscending {
            return SchemaViolation(key: name, value: value, reason: .outOfRange, accepted: accepted)
        }
        if let maximum, let order = Self.compare(value, maximum), order == .orderedDescending {
            return SchemaViolation(key: name, value: value, reason: .outOfRange, accepted: accepted)
        }
        return nil
    }

    /// What the key accepts, in words: "an integer in 1…100000", "a string, one of: light, dark, system".
    public var accepted: String {
        var text = type?.withArticle ?? "any value"
        switch (minimum, maximum) {
        case (let low?, let high?): text += " in \(low.plainText)…\(high.plainText)"
        case (let low?, nil): text += " of at least \(low.plainText)"
        case (nil, let high?): text += " of at most \(high.plainText)"
        case (nil, nil): break
        }
        if let choices { text += ", one of: " + choices.map(\.plainText).joined(separator: ", ") }
        return text
    }

    /// Equal values, an integer equal to a real counting as the same number.
    static func sameValue(_ lhs: PropertyList, _ rhs: PropertyList) -> Bool {
        if lhs == rhs { return true }
        return compare(lhs, rhs) == .orderedSame
    }

    /// The order of two values of comparable kinds (numbers with numbers, strings, dates), else nil.
    static func compare(_ lhs: PropertyList, _ rhs: PropertyList) -> ComparisonResult? {
        func order<T: Comparable>(_ a: T, _ b: T) -> ComparisonResult {
            a < b ? .orderedAscending : a > b ? .orderedDescending : .orderedSame
        }
        switch (lhs, rhs) {
        case (.integer(let a), .integer(let b)): return order(a, b)
        case (.real(let a), .real(let b)): return a.isNaN || b.isNaN ? nil : order(a, b)
        case (.integer(let a), .real(let b)): return b.isNaN ? nil : order(Double(a), b)
        case (.real(let a), .integer(let b)): return a.isNaN ? nil : order(a, Double(b))
        case (.string(let a), .string(let b)): return order(a, b)
        case (.date(let a), .date(let b)): return order(a, b)
        default: return nil
        }
    }
}
