public import Foundation

/// A type that typed keys (``DefaultsKey``) can store: it converts itself to and from a ``PropertyList``.
///
/// The standard types conform: `Bool`, every integer width, `Double`, `Float`, `String`, `Date`, `Data`,
/// `URL`, `UUID`, `PropertyList`, and arrays, sets, `String`-keyed dictionaries and optionals of conforming
/// types. Two kinds of your own types conform by declaring it, with nothing to implement:
///
/// ```swift
/// enum Theme: String, DefaultsSerializable { case light, dark, system }   // stored as its raw value
///
/// struct Limits: Codable, DefaultsSerializable {                          // stored as a dictionary:
///     var perMinute = 60                                                 // { perMinute = 60; burst = 10; }
///     var burst = 10
/// }
/// ```
///
/// A `Codable` type is stored as native property-list structure (``PropertyListValueEncoder``), so it can be
/// read and edited with `defaults read` / `defaults write` and by hand. Implement the two requirements
/// yourself for any other mapping.
public protocol DefaultsSerializable: Sendable {
    /// Reads a value from its stored form.
    ///
    /// - Throws: any error when the stored value has the wrong shape; the typed read then returns the key's
    ///   last valid value (else its default) and reports the value once.
    init(propertyList: PropertyList) throws

    /// The stored form of the value, or nil to remove the key (only `Optional.none` does that).
    func propertyList() throws -> PropertyList?
}

/// A typed read's fast path: the value when `stored` is exactly `Value`'s own stored form, for the four scalar
/// types reads meet most (`Int`, `String`, `Bool`, `Double`); nil otherwise, and `Value(propertyList:)` decides.
/// Tests of the metatype rather than a protocol requirement, so the fast path is no part of the public protocol:
/// an unspecialised read pays one switch and one comparison, a specialised one nothing.
@inlinable
func exactScalar<Value>(_ stored: PropertyList, as _: Value.Type) -> Value? {
    switch stored {
    case .integer(let integer) where Value.self == Int.self: unsafeBitCast(integer, to: Value.self)
    case .string(let string) where Value.self == String.self: unsafeBitCast(string, to: Value.self)
    case .bool(let bool) where Value.self == Bool.self: unsafeBitCast(bool, to: Value.self)
    case .real(let real) where Value.self == Double.self: unsafeBitCast(real, to: Value.self)
    default: nil
    }
}

/// Why a stored value could not be read as a key's type.
public struct DefaultsConversionError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The type that was expected.
    public var expected: String
    /// The stored value.
    public var found: PropertyList

    /// The error for a stored value `found` that cannot be read as `expected`.
    public init(expected: Any.Type, found: PropertyList) {
        self.expected = "\(expected)"
        self.found = found
    }

    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    public var description: String { "expected \(expected), found \(found.typeName) \(found)" }
}

// MARK: Codable and RawRepresentable types, by declaration

extension DefaultsSerializable where Self: Codable {
    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    public init(propertyList: PropertyList) throws {
        self = try PropertyListValueDecoder().decode(Self.self, from: propertyList)
    }

    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    public func propertyList() throws -> PropertyList? {
        try PropertyListValueEncoder().encode(self)
    }
}

extension DefaultsSerializable where Self: RawRepresentable, RawValue: DefaultsSerializable {
    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    public init(propertyList: PropertyList) throws {
        let raw = try RawValue(propertyList: propertyList)
        guard let value = Self(rawValue: raw) else {
            throw DefaultsConversionError(expected: Self.self, found: propertyList)
        }
        self = value
    }

    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    public func propertyList() throws -> PropertyList? { try rawValue.propertyList() }
}

/// A `Codable` enum with raw values is stored by its raw value (the two conformances above would agree;
/// this one settles which applies).
extension DefaultsSerializable where Self: RawRepresentable & Codable, RawValue: DefaultsSerializable {
    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    public init(propertyList: PropertyList) throws {
        let raw = try RawValue(propertyList: propertyList)
        guard let value = Self(rawValue: raw) else {
            throw DefaultsConversionError(expected: Self.self, found: propertyList)
        }
        self = value
    }

    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    public func propertyList() throws -> PropertyList? { try rawValue.propertyList() }
}

// MARK: Scalars

extension PropertyList: DefaultsSerializable {
    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    public init(propertyList: PropertyList) throws { self = propertyList }
    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    public func propertyList() throws -> PropertyList? { self }
}

extension Bool: DefaultsSerializable {
    /// A Boolean, the integers 0 and 1, or a string `YES`/`NO`/`true`/`false`/`1`/`0` (any case), as
    /// `defaults write` without `-bool` leaves it.
    public init(propertyList: PropertyList) throws {
        if case .bool(let bool) = propertyList { self = bool } else { self = try ValueDecoder.bool(propertyList, []) }
    }

    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    public func propertyList() throws -> PropertyList? { .bool(self) }
}

extension String: DefaultsSerializable {
    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    public init(propertyList: PropertyList) throws {
        guard case .string(let string) = propertyList else {
            throw DefaultsConversionError(expected: String.self, found: propertyList)
        }
        self = string
    }

    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    public func propertyList() throws -> PropertyList? { .string(self) }
}

extension Double: DefaultsSerializable {
    /// A real, an integer, or a string that is a number.
    public init(propertyList: PropertyList) throws {
        if case .real(let real) = propertyList { self = real } else { self = try ValueDecoder.real(propertyList, []) }
    }

    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    public func propertyList() throws -> PropertyList? { .real(self) }
}

extension Float: DefaultsSerializable {
    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    public init(propertyList: PropertyList) throws { self = Float(try ValueDecoder.real(propertyList, [])) }
    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    public func propertyList() throws -> PropertyList? { .real(Double(self)) }
}

/// An integer type that typed keys can store: the name this had first, when it was a protocol of its own.
@available(*, deprecated, message: "declare DefaultsSerializable: an integer type's conformance needs nothing more")
public typealias DefaultsSerializableInteger = FixedWidthInteger & DefaultsSerializable

/// Every integer width reads an integer that fits (a value out of range is an error, so the read returns
/// the key's default), a whole real, or a string that is a whole number. (`Codable` too, as every standard
/// integer is: this is then the more specific of the two ways of storing it, not the `Codable` encoding.)
extension DefaultsSerializable where Self: FixedWidthInteger & Codable {
    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    public init(propertyList: PropertyList) throws { self = try ValueDecoder.integer(propertyList, Self.self, []) }

    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    public func propertyList() throws -> PropertyList? {
        guard let stored = PropertyList.storedInteger(self) else {
            throw EncodingError.invalidValue(self, .init(codingPath: [], debugDescription: "\(self) is beyond Int.max"))
        }
        return stored
    }
}

extension Int: DefaultsSerializable {
    /// An integer, a whole real, or a string that is a whole number (the shared integer rules, with the
    /// stored type checked first, since typed reads are the hot path).
    public init(propertyList: PropertyList) throws {
        if case .integer(let integer) = propertyList {
            self = integer
        } else {
            self = try ValueDecoder.integer(propertyList, Int.self, [])
        }
    }

    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    public func propertyList() throws -> PropertyList? { .integer(self) }
}
extension Int8: DefaultsSerializable {}
extension Int16: DefaultsSerializable {}
extension Int32: DefaultsSerializable {}
extension Int64: DefaultsSerializable {}
extension UInt: DefaultsSerializable {}
extension UInt8: DefaultsSerializable {}
extension UInt16: DefaultsSerializable {}
extension UInt32: DefaultsSerializable {}
extension UInt64: DefaultsSerializable {}

extension Date: DefaultsSerializable {
    /// A date, or an ISO 8601 string.
    public init(propertyList: PropertyList) throws { self = try ValueDecoder.date(propertyList, []) }
    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    public func propertyList() throws -> PropertyList? { .date(self) }
}

extension Data: DefaultsSerializable {
    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    public init(propertyList: PropertyList) throws {
        guard case .data(let data) = propertyList else {
            throw DefaultsConversionError(expected: Data.self, found: propertyList)
        }
        self = data
    }

    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    public func propertyList() throws -> PropertyList? { .data(self) }
}

extension URL: DefaultsSerializable {
    /// As `url(forKey:)` reads it: a string with a scheme is that URL, any other string a file path (`~`
    /// expanded), data a keyed archive of a URL.
    public init(propertyList: PropertyList) throws {
        guard let url = Coercion.url(propertyList) else {
            throw DefaultsConversionError(expected: URL.self, found: propertyList)
        }
        self = url
    }

    /// A file URL as its path, abbreviated with `~` in the home directory (as Foundation stores it); any
    /// other URL as its absolute string, which stays readable and editable (Foundation archives it).
    public func propertyList() throws -> PropertyList? {
        isFileURL ? Coercion.storedValue(for: self) : .string(absoluteString)
    }
}

extension UUID: DefaultsSerializable {
    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    public init(propertyList: PropertyList) throws {
        guard case .string(let string) = propertyList, let uuid = UUID(uuidString: string) else {
            throw DefaultsConversionError(expected: UUID.self, found: propertyList)
        }
        self = uuid
    }

    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    public func propertyList() throws -> PropertyList? { .string(uuidString) }
}

// MARK: Collections and optionals

extension Optional: DefaultsSerializable where Wrapped: DefaultsSerializable {
    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    public init(propertyList: PropertyList) throws { self = .some(try Wrapped(propertyList: propertyList)) }
    /// nil removes the key.
    public func propertyList() throws -> PropertyList? { try self?.propertyList() }
}

extension Array: DefaultsSerializable where Element: DefaultsSerializable {
    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    public init(propertyList: PropertyList) throws {
        guard case .array(let elements) = propertyList else {
            throw DefaultsConversionError(expected: Self.self, found: propertyList)
        }
        self = try elements.map { try Element(propertyList: $0) }
    }

    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    public func propertyList() throws -> PropertyList? {
        .array(
            try map { element in
                guard let value = try element.propertyList() else {
                    throw EncodingError.invalidValue(
                        element, .init(codingPath: [], debugDescription: "a property-list array cannot hold nil"))
                }
                return value
            })
    }
}

extension Set: DefaultsSerializable where Element: DefaultsSerializable {
    /// Stored as an array (property lists have no sets), in a stable order so that an unchanged set
    /// rewrites the same file.
    public init(propertyList: PropertyList) throws { self = Set(try [Element](propertyList: propertyList)) }

    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    public func propertyList() throws -> PropertyList? {
        guard case .array(let elements)? = try Array(self).propertyList() else { return nil }
        return .array(elements.sorted { "\($0)" < "\($1)" })
    }
}

extension Dictionary: DefaultsSerializable where Key == String, Value: DefaultsSerializable {
    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    public init(propertyList: PropertyList) throws {
        guard case .dictionary(let entries) = propertyList else {
            throw DefaultsConversionError(expected: Self.self, found: propertyList)
        }
        self = try entries.mapValues { try Value(propertyList: $0) }
    }

    /// A nil value leaves its key out.
    public func propertyList() throws -> PropertyList? {
        .dictionary(try compactMapValues { try $0.propertyList() })
    }
}
