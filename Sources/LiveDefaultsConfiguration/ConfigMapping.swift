public import Configuration
public import LiveDefaults

/// How defaults keys and property-list values map to swift-configuration's keys and contents — the same
/// mapping as swift-configuration's own `PropertyListSnapshot`, so that a settings file means the same
/// through either:
///
/// - **Keys.** A configuration key's components joined with dots (`http.port`) name a value: a top-level
///   defaults key `http` holding a dictionary with `port`, or a top-level key spelled `http.port`, or any
///   mix (`{"http": {"tls.port": 1}}` is `http.tls.port`). When several spellings hold a value, the one with
///   the longest top-level name wins (`http.port` before `http` → `port`). A dictionary is never a value.
/// - **Values.** A string is a string; integers, reals and Booleans are numbers, readable as `int` (a real
///   only when whole), `double` and `bool` (non-zero is true); data is bytes. An array of strings, of numbers
///   or of data is the matching array type; an empty array is an empty array of any type. Dates, and arrays
///   that mix kinds or hold dictionaries, have no configuration type: asking for them throws
///   ``LiveDefaultsConfigError``, for that key only.
public enum LiveDefaultsConfigMapping {
    /// The most components a key may have for the split search; longer keys match a top-level name or a
    /// plain nested path only.
    static let maximumSplitComponents = 12

    /// The value a configuration key names, looked up with `lookup` (a store's or a snapshot's top-level
    /// values).
    public static func value(
        forComponents components: [String], lookup: (String) -> PropertyList?
    ) -> PropertyList? {
        guard !components.isEmpty else { return nil }
        if components.count > maximumSplitComponents {
            if let value = lookup(components.joined(separator: ".")), !value.isDictionary { return value }
            return walk(components[...], from: lookup(components[0]))
        }
        return resolve(components[...], lookup: lookup)
    }

    /// The top-level defaults keys whose change can change the value of a configuration key: every dotted
    /// prefix of it (`a`, `a.b`, `a.b.c` for `a.b.c`).
    public static func topLevelNames(forComponents components: [String]) -> Set<String> {
        var names: Set<String> = []
        var name = ""
        for (index, component) in components.enumerated() {
            name = index == 0 ? component : name + "." + component
            names.insert(name)
        }
        return names
    }

    /// A property-list value as the content of a configuration type.
    ///
    /// - Throws: ``LiveDefaultsConfigError`` when the value cannot be read as that type.
    public static func content(of value: PropertyList, as type: ConfigType, key: String) throws(LiveDefaultsConfigError)
        -> ConfigContent
    {
        func mismatch() -> LiveDefaultsConfigError {
            LiveDefaultsConfigError(key: key, requested: type, found: value.kindName)
        }
        switch type {
        case .string:
            guard case .string(let string) = value else { throw mismatch() }
            return .string(string)
        case .int:
            guard let number = Number(value), let int = number.int else { throw mismatch() }
            return .int(int)
        case .double:
            guard let number = Number(value), let double = number.double else { throw mismatch() }
            return .double(double)
        case .bool:
            guard let number = Number(value) else { throw mismatch() }
            return .bool(number.bool)
        case .bytes:
            guard case .data(let data) = value else { throw mismatch() }
            return .bytes([UInt8](data))
        case .stringArray:
            guard case .array(let elements) = value else { throw mismatch() }
            var strings: [String] = []
            for element in elements {
                guard case .string(let string) = element else { throw mismatch() }
                strings.append(string)
            }
            return .stringArray(strings)
        case .intArray:
            return .intArray(try numbers(value, mismatch: mismatch) { $0.int })
        case .doubleArray:
            return .doubleArray(try numbers(value, mismatch: mismatch) { $0.double })
        case .boolArray:
            return .boolArray(try numbers(value, mismatch: mismatch) { $0.bool })
        case .byteChunkArray:
            guard case .array(let elements) = value else { throw mismatch() }
            var chunks: [[UInt8]] = []
            for element in elements {
                guard case .data(let data) = element else { throw mismatch() }
                chunks.append([UInt8](data))
            }
            return .byteChunkArray(chunks)
        }
    }

    // MARK: Internals

    /// A number as swift-configuration reads it: a Boolean is 0 or 1, a real is an int only when whole.
    struct Number {
        var int: Int?
        var double: Double?
        var bool: Bool

        init?(_ value: PropertyList) {
            switch value {
            case .integer(let integer):
                (int, double, bool) = (integer, Double(exactly: integer), integer != 0)
            case .real(let real):
                (int, double, bool) = (Int(exactly: real), real, real != 0)
            case .bool(let flag):
                (int, double, bool) = (flag ? 1 : 0, flag ? 1 : 0, flag)
            default:
                return nil
            }
        }
    }

    private static func numbers<Element>(
        _ value: PropertyList, mismatch: () -> LiveDefaultsConfigError, _ element: (Number) -> Element?
    ) throws(LiveDefaultsConfigError) -> [Element] {
        guard case .array(let elements) = value else { throw mismatch() }
        var result: [Element] = []
        result.reserveCapacity(elements.count)
        for item in elements {
            guard let number = Number(item), let converted = element(number) else { throw mismatch() }
            result.append(converted)
        }
        return result
    }

    /// The split search: the longest top-level name first, then into its dictionary with the rest.
    private static func resolve(_ components: ArraySlice<String>, lookup: (String) -> PropertyList?) -> PropertyList? {
        var end = components.endIndex
        while end > components.startIndex {
            let name = components[components.startIndex..<end].joined(separator: ".")
            if let value = lookup(name) {
                if end == components.endIndex {
                    if !value.isDictionary { return value }
                } else if case .dictionary(let nested) = value,
                    let found = resolve(components[end...], lookup: { nested[$0] })
                {
                    return found
                }
            }
            end -= 1
        }
        return nil
    }

    /// A plain nested path: each component one dictionary key.
    private static func walk(_ components: ArraySlice<String>, from start: PropertyList?) -> PropertyList? {
        var current = start
        for component in components.dropFirst() {
            guard case .dictionary(let nested)? = current else { return nil }
            current = nested[component]
        }
        if let current, !current.isDictionary { return current }
        return nil
    }
}

/// A stored value that the requested configuration type cannot read (a string asked for as an int, a date,
/// an array of mixed kinds).
public struct LiveDefaultsConfigError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The configuration key, dot-separated.
    public var key: String
    /// The type asked for.
    public var requested: ConfigType
    /// What the store holds there (`string`, `integer`, `date`, `array`, …).
    public var found: String

    /// An error for `key`.
    public init(key: String, requested: ConfigType, found: String) {
        self.key = key
        self.requested = requested
        self.found = found
    }

    /// One line naming the key, the type asked for and what is stored.
    public var description: String {
        "LiveDefaults: the value at \(key) is a \(found), which cannot be read as \(requested.rawValue)"
    }
}

extension PropertyList {
    var isDictionary: Bool {
        if case .dictionary = self { return true }
        return false
    }

    /// The kind's name, for errors.
    var kindName: String {
        switch self {
        case .string: "string"
        case .integer: "integer"
        case .real: "real"
        case .bool: "Boolean"
        case .date: "date"
        case .data: "data"
        case .array: "array"
        case .dictionary: "dictionary"
        }
    }
}
