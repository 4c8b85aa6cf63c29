import Foundation

extension PropertyList {
    /// Converts a Foundation-style value (`String`, any integer or floating-point type, `Bool`, `NSNumber`,
    /// `Date`, `Data`, arrays and string-keyed dictionaries of those, `NSArray`, `NSDictionary`) into a property
    /// list.
    ///
    /// - Throws: ``PropertyListError/Code/notAPropertyListValue`` naming the first value that has no
    ///   property-list form, or ``PropertyListError/Code/nestingTooDeep``.
    public init(foundationValue value: Any) throws(PropertyListError) {
        self = try Self.convert(value, depth: 0)
    }

    /// The value as Foundation types: `String`, `Int`, `Double`, `Bool`, `Date`, `Data`, `[Any]` and
    /// `[String: Any]`, the shapes `Foundation.UserDefaults.object(forKey:)` returns.
    public var foundationValue: Any {
        switch self {
        case .string(let value): value
        case .integer(let value): value
        case .real(let value): value
        case .bool(let value): value
        case .date(let value): value
        case .data(let value): value
        case .array(let value): value.map(\.foundationValue)
        case .dictionary(let value): value.mapValues(\.foundationValue)
        }
    }

    private static func convert(_ value: Any, depth: Int) throws(PropertyListError) -> PropertyList {
        guard depth < PropertyListLimits.maximumDepth else {
            throw .nestingTooDeep(limit: PropertyListLimits.maximumDepth)
        }
        // Exact native types first: on Linux a native Int also answers `is NSNumber`, and an NSNumber 1
        // answers `as? Bool`, so the order matters.
        switch value {
        case let value as PropertyList: return value
        case let value as String: return .string(value)
        case let value as Substring: return .string(String(value))
        case let value as Bool where type(of: value as Any) == Bool.self: return .bool(value)
        case let value as Int where type(of: value as Any) == Int.self: return .integer(value)
        case let value as Double where type(of: value as Any) == Double.self: return .real(value)
        case let value as Float where type(of: value as Any) == Float.self: return .real(Double(value))
        case let value as Date: return .date(value)
        case let value as Data: return .data(value)
        default: break
        }
        if let integer = value as? any BinaryInteger, !(type(of: value) is NSNumber.Type) {
            guard let fitting = Int(exactly: integer) else {
                throw .notAPropertyListValue("the integer \(integer) (beyond 64-bit signed)")
            }
            return .integer(fitting)
        }
        if let number = value as? NSNumber, type(of: value) is NSNumber.Type {
            return fromNumber(number)
        }
        if let array = value as? [Any] {
            var elements: [PropertyList] = []
            elements.reserveCapacity(array.count)
            for element in array { elements.append(try convert(element, depth: depth + 1)) }
            return .array(elements)
        }
        if let dictionary = value as? [AnyHashable: Any] {
            var entries: [String: PropertyList] = [:]
            entries.reserveCapacity(dictionary.count)
            for (key, element) in dictionary {
                guard let key = key.base as? String else {
                    throw .notAPropertyListValue("a dictionary key of type \(type(of: key.base))")
                }
                entries[key] = try convert(element, depth: depth + 1)
            }
            return .dictionary(entries)
        }
        throw .notAPropertyListValue("a value of type \(type(of: value))")
    }

    private static func fromNumber(_ number: NSNumber) -> PropertyList {
        // swift-corelibs-foundation backs Booleans by a private __NSCFBoolean subclass; Darwin by __NSCFBoolean too.
        if String(describing: type(of: number)).hasSuffix("Boolean") { return .bool(number.boolValue) }
        let kind = String(cString: number.objCType)
        if kind == "f" || kind == "d" { return .real(number.doubleValue) }
        if kind == "Q" || kind == "L", number.uint64Value > UInt64(Int.max) { return .real(number.doubleValue) }
        return .integer(number.intValue)
    }
}
