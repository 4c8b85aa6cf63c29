import Foundation

/// Decodes any `Decodable` value from a ``PropertyList`` structure, the inverse of
/// ``PropertyListValueEncoder``.
///
/// Values edited by hand or written with `defaults write` are accepted where their meaning is clear: an
/// old-style dictionary such as `{ perMinute = 60; }` holds only strings, so a number or Boolean may also be
/// read from a string that spells one exactly (`"60"`, `"2.5"`, `"YES"`, `"true"`, `"1"`), an integer
/// from a whole real (`60.0`), a real from an integer, and a date from an ISO 8601 string. Anything else
/// of the wrong kind is a `DecodingError` naming the path and what was found.
public struct PropertyListValueDecoder: Sendable {
    /// Context for custom `init(from:)` implementations.
    public var userInfo: [CodingUserInfoKey: any Sendable] = [:]

    /// A decoder with the default behaviour (no options to set).
    public init() {}

    /// Decodes a value of the given type.
    ///
    /// - Throws: `DecodingError` when the structure does not match the type.
    public func decode<T: Decodable>(_ type: T.Type, from value: PropertyList) throws -> T {
        try ValueDecoder(value: value, codingPath: [], userInfo: userInfo).decodeValue(type)
    }
}

struct ValueDecoder: Decoder {
    let value: PropertyList
    let codingPath: [any CodingKey]
    let userInfoValues: [CodingUserInfoKey: any Sendable]

    init(value: PropertyList, codingPath: [any CodingKey], userInfo: [CodingUserInfoKey: any Sendable]) {
        self.value = value
        self.codingPath = codingPath
        self.userInfoValues = userInfo
    }

    var userInfo: [CodingUserInfoKey: Any] { userInfoValues }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .dictionary(let entries) = value else {
            throw Self.mismatch([String: Any].self, value, codingPath)
        }
        return KeyedDecodingContainer(
            KeyedContainer<Key>(entries: entries, codingPath: codingPath, userInfo: userInfoValues))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let elements) = value else { throw Self.mismatch([Any].self, value, codingPath) }
        return UnkeyedContainer(elements: elements, codingPath: codingPath, userInfo: userInfoValues)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        SingleValueContainer(decoder: self)
    }

    /// Decodes the value itself, handling the types whose property-list form is not their Codable form.
    func decodeValue<T: Decodable>(_ type: T.Type) throws -> T {
        if type == Date.self { return try Self.date(value, codingPath) as! T }
        if type == Data.self {
            guard case .data(let data) = value else { throw Self.mismatch(Data.self, value, codingPath) }
            return data as! T
        }
        if type == URL.self {
            guard case .string(let string) = value, let url = URL(string: string) else {
                throw Self.mismatch(URL.self, value, codingPath)
            }
            return url as! T
        }
        if type == PropertyList.self { return value as! T }
        return try T(from: self)
    }

    // MARK: Scalars, with the conversions a hand-edited file needs

    static func mismatch(_ type: Any.Type, _ value: PropertyList, _ codingPath: [any CodingKey]) -> DecodingError {
        .typeMismatch(
            type, .init(codingPath: codingPath, debugDescription: "expected \(type), found \(value.typeName) \(value)"))
    }

    static func bool(_ value: PropertyList, _ codingPath: [any CodingKey]) throws -> Bool {
        switch value {
        case .bool(let bool): return bool
        case .integer(0): return false
        case .integer(1): return true
        case .string(let string):
            if let bool = PropertyList.bool(fromText: string) { return bool }
        default: break
        }
        throw mismatch(Bool.self, value, codingPath)
    }

    static func integer<T: FixedWidthInteger>(_ value: PropertyList, _ type: T.Type, _ codingPath: [any CodingKey])
        throws -> T
    {
        let converted: T?
        switch value {
        case .integer(let integer): converted = T(exactly: integer)
        case .real(let real): converted = real.isFinite ? T(exactly: real) : nil
        case .string(let string):
            // Only what a property list can store again (so "18446744073709551615" is no UInt64 here: no Double
            // holds it, and writing it back would fail).
            converted = T(string.trimmingCharacters(in: .whitespaces)).flatMap { value in
                PropertyList.storedInteger(value) != nil ? value : nil
            }
        default: converted = nil
        }
        guard let converted else {
            if case .integer = value {
                throw DecodingError.dataCorrupted(
                    .init(
                        codingPath: codingPath, debugDescription: "\(value) does not fit \(T.self) (\(T.min)…\(T.max))")
                )
            }
            throw mismatch(T.self, value, codingPath)
        }
        return converted
    }

    static func real(_ value: PropertyList, _ codingPath: [any CodingKey]) throws -> Double {
        switch value {
        case .real(let real): return real
        case .integer(let integer): return Double(integer)
        case .string(let string):
            if let real = Double(string.trimmingCharacters(in: .whitespaces)) { return real }
        default: break
        }
        throw mismatch(Double.self, value, codingPath)
    }

    static func string(_ value: PropertyList, _ codingPath: [any CodingKey]) throws -> String {
        guard case .string(let string) = value else { throw mismatch(String.self, value, codingPath) }
        return string
    }

    static func date(_ value: PropertyList, _ codingPath: [any CodingKey]) throws -> Date {
        switch value {
        case .date(let date): return date
        case .string(let string):
            // The one date parser for text (ISO 8601 and the forms `defaults` prints), not Foundation's third.
            if let date = PropertyList.date(fromText: string) { return date }
        default: break
        }
        throw mismatch(Date.self, value, codingPath)
    }
}

private struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let entries: [String: PropertyList]
    let codingPath: [any CodingKey]
    let userInfo: [CodingUserInfoKey: any Sendable]

    var allKeys: [Key] { entries.keys.compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool { entries[key.stringValue] != nil }

    private func value(_ key: Key) throws -> PropertyList {
        guard let value = entries[key.stringValue] else {
            throw DecodingError.keyNotFound(
                key, .init(codingPath: codingPath, debugDescription: "no value for key \"\(key.stringValue)\""))
        }
        return value
    }

    /// Property lists have no null: a missing key is nil.
    func decodeNil(forKey key: Key) throws -> Bool { entries[key.stringValue] == nil }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool {
        try ValueDecoder.bool(value(key), codingPath + [key])
    }
    func decode(_ type: String.Type, forKey key: Key) throws -> String {
        try ValueDecoder.string(value(key), codingPath + [key])
    }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double {
        try ValueDecoder.real(value(key), codingPath + [key])
    }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float {
        Float(try ValueDecoder.real(value(key), codingPath + [key]))
    }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try integer(key) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try integer(key) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try integer(key) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try integer(key) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try integer(key) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try integer(key) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try integer(key) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try integer(key) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try integer(key) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try integer(key) }

    private func integer<T: FixedWidthInteger>(_ key: Key) throws -> T {
        try ValueDecoder.integer(value(key), T.self, codingPath + [key])
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try decoder(key).decodeValue(type)
    }

    private func decoder(_ key: Key) throws -> ValueDecoder {
        ValueDecoder(value: try value(key), codingPath: codingPath + [key], userInfo: userInfo)
    }

    func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type, forKey key: Key
    ) throws -> KeyedDecodingContainer<NestedKey> {
        try decoder(key).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try decoder(key).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        ValueDecoder(value: entries["super"] ?? .dictionary([:]), codingPath: codingPath, userInfo: userInfo)
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        ValueDecoder(
            value: entries[key.stringValue] ?? .dictionary([:]), codingPath: codingPath + [key], userInfo: userInfo)
    }
}

private struct UnkeyedContainer: UnkeyedDecodingContainer {
    let elements: [PropertyList]
    let codingPath: [any CodingKey]
    let userInfo: [CodingUserInfoKey: any Sendable]
    private(set) var currentIndex = 0

    init(elements: [PropertyList], codingPath: [any CodingKey], userInfo: [CodingUserInfoKey: any Sendable]) {
        self.elements = elements
        self.codingPath = codingPath
        self.userInfo = userInfo
    }

    var count: Int? { elements.count }
    var isAtEnd: Bool { currentIndex >= elements.count }

    private var path: [any CodingKey] { codingPath + [EncodingKey(intValue: currentIndex)] }

    private mutating func next() throws -> PropertyList {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(
                PropertyList.self,
                .init(codingPath: path, debugDescription: "the array has only \(elements.count) elements"))
        }
        defer { currentIndex += 1 }
        return elements[currentIndex]
    }

    mutating func decodeNil() throws -> Bool { false }

    mutating func decode(_ type: Bool.Type) throws -> Bool {
        let path = path
        return try ValueDecoder.bool(next(), path)
    }
    mutating func decode(_ type: String.Type) throws -> String {
        let path = path
        return try ValueDecoder.string(next(), path)
    }
    mutating func decode(_ type: Double.Type) throws -> Double {
        let path = path
        return try ValueDecoder.real(next(), path)
    }
    mutating func decode(_ type: Float.Type) throws -> Float {
        let path = path
        return Float(try ValueDecoder.real(next(), path))
    }
    mutating func decode(_ type: Int.Type) throws -> Int { try integer() }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try integer() }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try integer() }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try integer() }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try integer() }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try integer() }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try integer() }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try integer() }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try integer() }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try integer() }

    private mutating func integer<T: FixedWidthInteger>() throws -> T {
        let path = path
        return try ValueDecoder.integer(next(), T.self, path)
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try nextDecoder().decodeValue(type)
    }

    private mutating func nextDecoder() throws -> ValueDecoder {
        let path = path
        return ValueDecoder(value: try next(), codingPath: path, userInfo: userInfo)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<
        NestedKey
    > {
        try nextDecoder().container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try nextDecoder().unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder { try nextDecoder() }
}

private struct SingleValueContainer: SingleValueDecodingContainer {
    let decoder: ValueDecoder
    var codingPath: [any CodingKey] { decoder.codingPath }
    private var value: PropertyList { decoder.value }

    func decodeNil() -> Bool { false }
    func decode(_ type: Bool.Type) throws -> Bool { try ValueDecoder.bool(value, codingPath) }
    func decode(_ type: String.Type) throws -> String { try ValueDecoder.string(value, codingPath) }
    func decode(_ type: Double.Type) throws -> Double { try ValueDecoder.real(value, codingPath) }
    func decode(_ type: Float.Type) throws -> Float { Float(try ValueDecoder.real(value, codingPath)) }
    func decode(_ type: Int.Type) throws -> Int { try ValueDecoder.integer(value, Int.self, codingPath) }
    func decode(_ type: Int8.Type) throws -> Int8 { try ValueDecoder.integer(value, Int8.self, codingPath) }
    func decode(_ type: Int16.Type) throws -> Int16 { try ValueDecoder.integer(value, Int16.self, codingPath) }
    func decode(_ type: Int32.Type) throws -> Int32 { try ValueDecoder.integer(value, Int32.self, codingPath) }
    func decode(_ type: Int64.Type) throws -> Int64 { try ValueDecoder.integer(value, Int64.self, codingPath) }
    func decode(_ type: UInt.Type) throws -> UInt { try ValueDecoder.integer(value, UInt.self, codingPath) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try ValueDecoder.integer(value, UInt8.self, codingPath) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try ValueDecoder.integer(value, UInt16.self, codingPath) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try ValueDecoder.integer(value, UInt32.self, codingPath) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try ValueDecoder.integer(value, UInt64.self, codingPath) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try decoder.decodeValue(type) }
}
