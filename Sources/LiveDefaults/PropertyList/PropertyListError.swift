/// Why bytes could not be read as a property list, or a value could not become one.
///
/// Every malformed or hostile input ends in one of these errors; the readers never trap and never loop on
/// input they cannot make sense of. A struct with a ``code`` rather than an enum, so that new kinds can be
/// added without breaking callers (see ``DefaultsError``); make one with the static members named after
/// the codes, and tell kinds apart by ``code``.
public struct PropertyListError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of error. New codes can appear in any release: a `switch` over codes needs a `default`.
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
        public let rawValue: String

        /// A code by name.
        public init(rawValue: String) {
            self.rawValue = rawValue
        }

        /// The bytes are not a property list in any format this library reads (XML, binary, old-style).
        public static let unrecognizedFormat = Code(rawValue: "unrecognizedFormat")
        /// The input ends before the value does (a cut-off file, or a binary trailer that points past the end).
        public static let truncated = Code(rawValue: "truncated")
        /// The input is in a known format but breaks its grammar; ``PropertyListError/position`` is the byte offset.
        public static let malformed = Code(rawValue: "malformed")
        /// Arrays and dictionaries are nested deeper than ``PropertyListLimits/maximumDepth``.
        public static let nestingTooDeep = Code(rawValue: "nestingTooDeep")
        /// A binary property list whose shared references expand to more values than its size allows (see
        /// ``PropertyListLimits/maximumExpandedObjects``).
        public static let tooManyObjects = Code(rawValue: "tooManyObjects")
        /// A binary property list whose object graph refers back to an object that contains the reference.
        public static let cyclicReference = Code(rawValue: "cyclicReference")
        /// A binary object kind that is valid for archives but not for defaults (null, UID, sets of non-values).
        public static let unsupportedObject = Code(rawValue: "unsupportedObject")
        /// A Swift value that has no property-list form (for example a custom class, or a dictionary with
        /// non-string keys).
        public static let notAPropertyListValue = Code(rawValue: "notAPropertyListValue")
        /// A value that the chosen format cannot hold: an XML property list holds dates in the years 0000–9999
        /// only, so a date beyond them (which a binary file or a program can produce) cannot be written as XML.
        /// `keyPath` names where the value sits (`Key`, `Key.Inner`, `Key[2]`).
        public static let unrepresentable = Code(rawValue: "unrepresentable")

        // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
        public var description: String { rawValue }
    }

    /// The kind of error.
    public let code: Code
    /// A byte offset into the input (malformed input), a limit that was exceeded, or an object number.
    public let position: Int?
    /// Where the value sits, for a value that cannot be written (`Key`, `Key.Inner`, `Key[2]`).
    public let keyPath: String?
    /// Details in words.
    public let detail: String?

    /// An error of any code with the given context.
    init(code: Code, position: Int? = nil, keyPath: String? = nil, detail: String? = nil) {
        self.code = code
        self.position = position
        self.keyPath = keyPath
        self.detail = detail
    }

    /// An error of code ``Code/unrecognizedFormat``.
    package static let unrecognizedFormat = PropertyListError(code: .unrecognizedFormat)

    /// An error of code ``Code/truncated``.
    package static func truncated(_ what: String) -> PropertyListError {
        PropertyListError(code: .truncated, detail: what)
    }

    /// An error of code ``Code/malformed``.
    package static func malformed(offset: Int, reason: String) -> PropertyListError {
        PropertyListError(code: .malformed, position: offset, detail: reason)
    }

    /// An error of code ``Code/nestingTooDeep``.
    package static func nestingTooDeep(limit: Int) -> PropertyListError {
        PropertyListError(code: .nestingTooDeep, position: limit)
    }

    /// An error of code ``Code/tooManyObjects``.
    package static func tooManyObjects(limit: Int) -> PropertyListError {
        PropertyListError(code: .tooManyObjects, position: limit)
    }

    /// An error of code ``Code/cyclicReference``.
    package static func cyclicReference(object: Int) -> PropertyListError {
        PropertyListError(code: .cyclicReference, position: object)
    }

    /// An error of code ``Code/unsupportedObject``.
    package static func unsupportedObject(_ what: String) -> PropertyListError {
        PropertyListError(code: .unsupportedObject, detail: what)
    }

    /// An error of code ``Code/notAPropertyListValue``.
    package static func notAPropertyListValue(_ what: String) -> PropertyListError {
        PropertyListError(code: .notAPropertyListValue, detail: what)
    }

    /// An error of code ``Code/unrepresentable``.
    package static func unrepresentable(keyPath: String, reason: String) -> PropertyListError {
        PropertyListError(code: .unrepresentable, keyPath: keyPath, detail: reason)
    }

    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    public var description: String {
        let detail = detail ?? "unknown"
        let position = position.map(String.init) ?? "?"
        switch code {
        case .unrecognizedFormat:
            return "not a property list (neither XML, binary nor old-style)"
        case .truncated:
            return "truncated property list: \(detail)"
        case .malformed:
            return "malformed property list at byte \(position): \(detail)"
        case .nestingTooDeep:
            return "property list nested deeper than \(position) levels"
        case .tooManyObjects:
            return "binary property list expands to more than \(position) values through shared references"
        case .cyclicReference:
            return "binary property list has a cyclic reference (object \(position) contains itself)"
        case .unsupportedObject:
            return "property list contains \(detail), which defaults cannot hold"
        case .notAPropertyListValue:
            return "\(detail) is not a property-list value (String, Int, Double, Bool, Date, Data, Array, Dictionary)"
        case .unrepresentable:
            return "the value at \(keyPath ?? "?") cannot be written: \(detail)"
        default:
            let context = [self.position.map { "at \($0)" }, keyPath, self.detail].compactMap { $0 }
            return ([code.rawValue] + context).joined(separator: ": ")
        }
    }
}

/// Bounds that every property-list reader enforces, so that hostile input fails fast instead of exhausting
/// the stack or memory.
public enum PropertyListLimits {
    /// The deepest nesting of arrays and dictionaries that a reader accepts (the top-level container counts
    /// as level 1). Deeper input fails with ``PropertyListError/Code/nestingTooDeep``.
    public static let maximumDepth = 512
    /// The most values (scalars and containers, counted in the expanded tree) that a binary property list
    /// may describe. Binary files can reference one object many times, so a tiny file could otherwise stand
    /// for an astronomically large value. Text formats cannot share, so their size bounds them already.
    ///
    /// A smaller file is held to less: eight values per byte of its size, and at least 100,000. Every
    /// reference takes at least one byte, so a file whose references are not shared (what CF, Foundation and
    /// this library write) always stays below that; only shared containers go beyond, and a file of a few
    /// hundred bytes would then stand for millions of values, each costing little to read but tens of bytes
    /// to write, print or compare for whoever uses the value next.
    public static let maximumExpandedObjects = 10_000_000

    /// How many values a binary file may describe per byte of its size (see ``maximumExpandedObjects``).
    static let maximumExpandedObjectsPerByte = 8

    /// The most values a binary file of `size` bytes may describe: ``maximumExpandedObjectsPerByte`` per
    /// byte, at least 100,000 and at most ``maximumExpandedObjects``.
    static func expandedObjectLimit(forFileSize size: Int) -> Int {
        let (scaled, overflow) = size.multipliedReportingOverflow(by: maximumExpandedObjectsPerByte)
        return overflow ? maximumExpandedObjects : min(maximumExpandedObjects, max(100_000, scaled))
    }
}
