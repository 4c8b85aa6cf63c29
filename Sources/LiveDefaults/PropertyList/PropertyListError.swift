/// Why bytes could not be read as a property list, or a value could not become one.
///
/// Every malformed or hostile input ends in one of these errors; the readers never trap and never loop on
/// input they cannot make sense of.
public enum PropertyListError: Error, Sendable, Hashable {
    /// The bytes are not a property list in any format this library reads (XML, binary, old-style).
    case unrecognizedFormat
    /// The input ends before the value does (a cut-off file, or a binary trailer that points past the end).
    case truncated(String)
    /// The input is in a known format but breaks its grammar; `offset` is a byte offset into the input.
    case malformed(offset: Int, reason: String)
    /// Arrays and dictionaries are nested deeper than ``PropertyListLimits/maximumDepth``.
    case nestingTooDeep(limit: Int)
    /// A binary property list whose shared references expand to more than
    /// ``PropertyListLimits/expandedObjectLimit(forFileSize:)`` values.
    case tooManyObjects(limit: Int)
    /// A binary property list whose object graph refers back to an object that contains the reference.
    case cyclicReference(object: Int)
    /// A binary object kind that is valid for archives but not for defaults (null, UID, sets of non-values).
    case unsupportedObject(String)
    /// A Swift value that has no property-list form (for example a custom class, or a dictionary with
    /// non-string keys).
    case notAPropertyListValue(String)
    /// A value that the chosen format cannot hold: an XML property list holds dates in the years 0000–9999
    /// only, so a date beyond them (which a binary file or a program can produce) cannot be written as XML.
    /// `keyPath` names where the value sits (`Key`, `Key.Inner`, `Key[2]`).
    case unrepresentable(keyPath: String, reason: String)
}

extension PropertyListError: CustomStringConvertible {
    public var description: String {
        switch self {
        case .unrecognizedFormat:
            "not a property list (neither XML, binary nor old-style)"
        case .truncated(let what):
            "truncated property list: \(what)"
        case .malformed(let offset, let reason):
            "malformed property list at byte \(offset): \(reason)"
        case .nestingTooDeep(let limit):
            "property list nested deeper than \(limit) levels"
        case .tooManyObjects(let limit):
            "binary property list expands to more than \(limit) values through shared references"
        case .cyclicReference(let object):
            "binary property list has a cyclic reference (object \(object) contains itself)"
        case .unsupportedObject(let what):
            "property list contains \(what), which defaults cannot hold"
        case .notAPropertyListValue(let what):
            "\(what) is not a property-list value (String, Int, Double, Bool, Date, Data, Array, Dictionary)"
        case .unrepresentable(let keyPath, let reason):
            "the value at \(keyPath) cannot be written: \(reason)"
        }
    }
}

/// Bounds that every property-list reader enforces, so that hostile input fails fast instead of exhausting
/// the stack or memory.
public enum PropertyListLimits {
    /// The deepest nesting of arrays and dictionaries that a reader accepts (the top-level container counts
    /// as level 1). Deeper input fails with ``PropertyListError/nestingTooDeep(limit:)``.
    public static let maximumDepth = 512
    /// The most values (scalars and containers, counted in the expanded tree) that a binary property list
    /// may describe. Binary files can reference one object many times, so a tiny file could otherwise stand
    /// for an astronomically large value. Text formats cannot share, so their size bounds them already.
    public static let maximumExpandedObjects = 10_000_000

    /// How many values a binary file may describe per byte of its size.
    ///
    /// Every reference a binary file makes takes at least one byte, so a file whose references are not shared
    /// (what CF, Foundation and this library write) always stays below this. Only shared containers can go
    /// beyond, and then a file of a few hundred bytes would stand for millions of values: each costs
    /// little to read but tens of bytes to write, print or compare, for whoever uses the value next.
    public static let maximumExpandedObjectsPerByte = 8

    /// The most values a binary file of `size` bytes may describe: ``maximumExpandedObjectsPerByte`` per
    /// byte, at least 100,000 and at most ``maximumExpandedObjects``.
    public static func expandedObjectLimit(forFileSize size: Int) -> Int {
        let (scaled, overflow) = size.multipliedReportingOverflow(by: maximumExpandedObjectsPerByte)
        return overflow ? maximumExpandedObjects : min(maximumExpandedObjects, max(100_000, scaled))
    }
}
