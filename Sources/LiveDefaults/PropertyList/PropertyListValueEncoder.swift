import Foundation

/// Encodes any `Encodable` value as a ``PropertyList`` *structure*: a struct or class becomes a
/// dictionary, an array an array, a `Date` a date, `Data` data, numbers and strings themselves.
///
/// This is what makes a Codable setting readable and editable with `defaults read` / `defaults write` and by
/// hand, instead of a JSON string or an opaque data blob.
///
/// ```swift
/// struct Limits: Codable { var perMinute: Int; var burst: Int? }
/// let value = try PropertyListValueEncoder().encode(Limits(perMinute: 60, burst: nil))
/// // ["perMinute": 60]   (a nil optional leaves the key out)
/// ```
///
/// Property lists have no null: a `nil` optional property is left out of its dictionary, and a `nil` inside
/// an array is an error. A `URL` is stored as its absolute string, and integers beyond `Int.max` are an
/// error.
public struct PropertyListValueEncoder: Sendable {
    /// Context for custom `encode(to:)` implementations.
    public var userInfo: [CodingUserInfoKey: any Sendable] = [:]

    /// An encoder with the default behaviour (no options to set).
    public init() {}

    /// Encodes a value.
    ///
    /// - Throws: `EncodingError.invalidValue` for values with no property-list form (a nil in an array, an
    ///   integer beyond `Int.max`) or a type that encodes nothing at the top level.
    public func encode<T: Encodable>(_ value: T) throws -> PropertyList {
        let box = EncodingBox()
        try box.encode(value, codingPath: [], userInfo: userInfo)
        guard let result = box.materialized else {
            throw EncodingError.invalidValue(
                value, .init(codingPath: [], debugDescription: "\(T.self) did not encode any value"))
        }
        return result
    }
}

/// A value under construction. Containers are boxes too, so that nested containers can be filled after they
/// are handed out, as the Codable protocols require.
final class EncodingBox {
    enum Content {
        case empty
        case scalar(PropertyList)
        case array([EncodingBox])
        case dictionary([String: EncodingBox])
    }

    var content: Content = .empty

    var materialized: PropertyList? {
        switch content {
        case .empty: nil
        case .scalar(let value): value
        case .array(let boxes): .array(boxes.map { $0.materialized ?? .dictionary([:]) })
        case .dictionary(let boxes): .dictionary(boxes.compactMapValues { $0.materialized ?? .dictionary([:]) })
        }
    }

    /// Encodes a value into this box, handling the types whose own `Codable` form is not the plist one.
    func encode<T: Encodable>(_ value: T, codingPath: [any CodingKey], userInfo: [CodingUserInfoKey: any Sendable])
        throws
    {
        switch value {
        case let date as Date: content = .scalar(.date(date))
        case let data as Data: content = .scalar(.data(data))
        case let url as URL: content = .scalar(.string(url.absoluteString))
        case let value as PropertyList: content = .scalar(value)
        default:
            let encoder = ValueEncoder(box: self, codingPath: codingPath, userInfo: userInfo)
            try value.encode(to: encoder)
            // A type that encodes nothing (an empty struct) becomes an empty dictionary, as in Foundation.
            if case .empty = content { content = .dictionary([:]) }
            // A set's order changes from process to process: sort it, so an unchanged value rewrites the same file.
            // Each element's text is made once, not once per comparison.
            if value is any UnorderedCollection, case .array(let boxes) = content {
                let keyed = boxes.map { (text: "\($0.materialized ?? .dictionary([:]))", box: $0) }
                content = .array(keyed.sorted { $0.text < $1.text }.map(\.box))
            }
        }
    }

    func child(at path: [any CodingKey], userInfo: [CodingUserInfoKey: any Sendable]) -> ValueEncoder {
        ValueEncoder(box: self, codingPath: path, userInfo: userInfo)
    }

    /// Appends to an array box in place. `content` lets go of the array first, so the array is uniquely
    /// referenced and grows without a copy (copying it out and back in made a container of n elements cost n²).
    func append(_ child: EncodingBox) {
        guard case .array(var boxes) = content else { return }
        content = .empty
        boxes.append(child)
        content = .array(boxes)
    }

    /// Sets a key of a dictionary box in place (see ``append(_:)``).
    func insert(_ child: EncodingBox, named name: String) {
        guard case .dictionary(var boxes) = content else { return }
        content = .empty
        boxes[name] = child
        content = .dictionary(boxes)
    }
}

/// Collections whose iteration order means nothing.
protocol UnorderedCollection {}
extension Set: UnorderedCollection {}

struct EncodingKey: CodingKey {
    var stringValue: String
    var intValue: Int?
    init(stringValue: String) { self.stringValue = stringValue }
    init(intValue: Int) {
        self.stringValue = "Index \(intValue)"
        self.intValue = intValue
    }
}

/// The `Encoder` the Codable machinery talks to.
struct ValueEncoder: Encoder {
    let box: EncodingBox
    let codingPath: [any CodingKey]
    let userInfoValues: [CodingUserInfoKey: any Sendable]

    init(box: EncodingBox, codingPath: [any CodingKey], userInfo: [CodingUserInfoKey: any Sendable]) {
        self.box = box
        self.codingPath = codingPath
        self.userInfoValues = userInfo
    }

    var userInfo: [CodingUserInfoKey: Any] { userInfoValues }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        if case .dictionary = box.content {} else { box.content = .dictionary([:]) }
        return KeyedEncodingContainer(KeyedContainer<Key>(box: box, codingPath: codingPath, userInfo: userInfoValues))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        if case .array = box.content {} else { box.content = .array([]) }
        return UnkeyedContainer(box: box, codingPath: codingPath, userInfo: userInfoValues)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        SingleValueContainer(box: box, codingPath: codingPath, userInfo: userInfoValues)
    }
}

/// Integers as ``PropertyList/storedInteger(_:)`` stores them; one that no property list holds is an error.
private func integer<T: FixedWidthInteger>(_ value: T, _ codingPath: [any CodingKey]) throws -> PropertyList {
    guard let stored = PropertyList.storedInteger(value) else {
        throw EncodingError.invalidValue(
            value,
            .init(codingPath: codingPath, debugDescription: "\(value) does not fit a property-list integer (Int)"))
    }
    return stored
}

private struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let box: EncodingBox
    let codingPath: [any CodingKey]
    let userInfo: [CodingUserInfoKey: any Sendable]

    private func set(_ value: PropertyList, _ key: Key) {
        let child = EncodingBox()
        child.content = .scalar(value)
        insert(child, key)
    }

    private func insert(_ child: EncodingBox, _ key: Key) {
        insert(child, named: key.stringValue)
    }

    private func insert(_ child: EncodingBox, named name: String) {
        box.insert(child, named: name)
    }

    /// Property lists have no null: the key is left out.
    mutating func encodeNil(forKey key: Key) throws {}
    mutating func encode(_ value: Bool, forKey key: Key) throws { set(.bool(value), key) }
    mutating func encode(_ value: String, forKey key: Key) throws { set(.string(value), key) }
    mutating func encode(_ value: Double, forKey key: Key) throws { set(.real(value), key) }
    mutating func encode(_ value: Float, forKey key: Key) throws { set(.real(Double(value)), key) }
    mutating func encode(_ value: Int, forKey key: Key) throws { set(.integer(value), key) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { set(.integer(Int(value)), key) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { set(.integer(Int(value)), key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { set(.integer(Int(value)), key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { set(.integer(Int(value)), key) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { set(try integer(value, codingPath + [key]), key) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { set(.integer(Int(value)), key) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { set(.integer(Int(value)), key) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { set(.integer(Int(value)), key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { set(try integer(value, codingPath + [key]), key) }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        let child = EncodingBox()
        try child.encode(value, codingPath: codingPath + [key], userInfo: userInfo)
        insert(child, key)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type, forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
        let child = EncodingBox()
        insert(child, key)
        return child.child(at: codingPath + [key], userInfo: userInfo).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let child = EncodingBox()
        insert(child, key)
        return child.child(at: codingPath + [key], userInfo: userInfo).unkeyedContainer()
    }

    /// The superclass's values go under "super", whether or not `Key` has such a case.
    mutating func superEncoder() -> any Encoder {
        let child = EncodingBox()
        insert(child, named: "super")
        return child.child(at: codingPath + [EncodingKey(stringValue: "super")], userInfo: userInfo)
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        let child = EncodingBox()
        insert(child, key)
        return child.child(at: codingPath + [key], userInfo: userInfo)
    }
}

private struct UnkeyedContainer: UnkeyedEncodingContainer {
    let box: EncodingBox
    let codingPath: [any CodingKey]
    let userInfo: [CodingUserInfoKey: any Sendable]

    var count: Int {
        if case .array(let boxes) = box.content { return boxes.count }
        return 0
    }

    private var nextKey: EncodingKey { EncodingKey(intValue: count) }

    private func append(_ child: EncodingBox) {
        box.append(child)
    }

    private func append(_ value: PropertyList) {
        let child = EncodingBox()
        child.content = .scalar(value)
        append(child)
    }

    mutating func encodeNil() throws {
        throw EncodingError.invalidValue(
            Optional<Int>.none as Any,
            .init(codingPath: codingPath + [nextKey], debugDescription: "a property-list array cannot hold nil"))
    }
    mutating func encode(_ value: Bool) throws { append(.bool(value)) }
    mutating func encode(_ value: String) throws { append(.string(value)) }
    mutating func encode(_ value: Double) throws { append(.real(value)) }
    mutating func encode(_ value: Float) throws { append(.real(Double(value))) }
    mutating func encode(_ value: Int) throws { append(.integer(value)) }
    mutating func encode(_ value: Int8) throws { append(.integer(Int(value))) }
    mutating func encode(_ value: Int16) throws { append(.integer(Int(value))) }
    mutating func encode(_ value: Int32) throws { append(.integer(Int(value))) }
    mutating func encode(_ value: Int64) throws { append(.integer(Int(value))) }
    mutating func encode(_ value: UInt) throws { append(try integer(value, codingPath + [nextKey])) }
    mutating func encode(_ value: UInt8) throws { append(.integer(Int(value))) }
    mutating func encode(_ value: UInt16) throws { append(.integer(Int(value))) }
    mutating func encode(_ value: UInt32) throws { append(.integer(Int(value))) }
    mutating func encode(_ value: UInt64) throws { append(try integer(value, codingPath + [nextKey])) }

    mutating func encode<T: Encodable>(_ value: T) throws {
        let child = EncodingBox()
        try child.encode(value, codingPath: codingPath + [nextKey], userInfo: userInfo)
        append(child)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<
        NestedKey
    > {
        let child = EncodingBox()
        let path = codingPath + [nextKey]
        append(child)
        return child.child(at: path, userInfo: userInfo).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let child = EncodingBox()
        let path = codingPath + [nextKey]
        append(child)
        return child.child(at: path, userInfo: userInfo).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        let child = EncodingBox()
        let path = codingPath + [nextKey]
        append(child)
        return child.child(at: path, userInfo: userInfo)
    }
}

private struct SingleValueContainer: SingleValueEncodingContainer {
    let box: EncodingBox
    let codingPath: [any CodingKey]
    let userInfo: [CodingUserInfoKey: any Sendable]

    private func set(_ value: PropertyList) { box.content = .scalar(value) }

    mutating func encodeNil() throws {
        throw EncodingError.invalidValue(
            Optional<Int>.none as Any,
            .init(codingPath: codingPath, debugDescription: "a property list cannot hold nil"))
    }
    mutating func encode(_ value: Bool) throws { set(.bool(value)) }
    mutating func encode(_ value: String) throws { set(.string(value)) }
    mutating func encode(_ value: Double) throws { set(.real(value)) }
    mutating func encode(_ value: Float) throws { set(.real(Double(value))) }
    mutating func encode(_ value: Int) throws { set(.integer(value)) }
    mutating func encode(_ value: Int8) throws { set(.integer(Int(value))) }
    mutating func encode(_ value: Int16) throws { set(.integer(Int(value))) }
    mutating func encode(_ value: Int32) throws { set(.integer(Int(value))) }
    mutating func encode(_ value: Int64) throws { set(.integer(Int(value))) }
    mutating func encode(_ value: UInt) throws { set(try integer(value, codingPath)) }
    mutating func encode(_ value: UInt8) throws { set(.integer(Int(value))) }
    mutating func encode(_ value: UInt16) throws { set(.integer(Int(value))) }
    mutating func encode(_ value: UInt32) throws { set(.integer(Int(value))) }
    mutating func encode(_ value: UInt64) throws { set(try integer(value, codingPath)) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        try box.encode(value, codingPath: codingPath, userInfo: userInfo)
    }
}
