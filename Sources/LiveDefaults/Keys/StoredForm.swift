import Foundation

/// What a typed key's values look like stored: the property-list type a Swift type is stored as, and an
/// enumeration's cases as the values a key accepts. Used to build a key's ``KeySchema``.
enum StoredForm {
    /// The property-list type `type` is stored as, when the type alone says (the standard types, their
    /// optionals and collections); nil for `PropertyList` (any type) and for types whose stored form only
    /// their values show (a `Codable` struct: its default is encoded instead).
    static func type(of type: Any.Type) -> PropertyListType? {
        if let optional = type as? any OptionalStored.Type { return self.type(of: optional.wrappedType) }
        if type is any FixedWidthInteger.Type { return .integer }
        if type == Double.self || type == Float.self { return .real }
        if type == String.self || type == URL.self || type == UUID.self { return .string }
        if type == Bool.self { return .boolean }
        if type == Date.self { return .date }
        if type == Data.self { return .data }
        if type is any ArrayStored.Type { return .array }
        if type is any DictionaryStored.Type { return .dictionary }
        return nil
    }

    /// Whether `type` reads every value of its own stored type (no value of that type is refused): `Int`,
    /// `Double`, `String`, `Bool`, `Date`, `Data`. Not the narrower integers (a value can overflow them), and
    /// not collections or `Codable` types (a value of the right shape can still fail to decode).
    static func readsEveryValueOfItsType(_ type: Any.Type) -> Bool {
        type == Int.self || type == Double.self || type == String.self || type == Bool.self || type == Date.self
            || type == Data.self
    }

    /// The stored values of an enumeration's cases (`CaseIterable` and `DefaultsSerializable`), in
    /// declaration order; nil for any other type.
    static func choices(of type: Any.Type) -> [PropertyList]? {
        if let optional = type as? any OptionalStored.Type { return choices(of: optional.wrappedType) }
        guard let cases = type as? any (CaseIterable & DefaultsSerializable).Type else { return nil }
        return storedCases(cases)
    }

    private static func storedCases<T: CaseIterable & DefaultsSerializable>(_ type: T.Type) -> [PropertyList] {
        type.allCases.compactMap { (try? $0.propertyList()) ?? nil }
    }
}

/// Optionals, so that a key of `T?` has `T`'s stored type and choices.
protocol OptionalStored {
    static var wrappedType: Any.Type { get }
}

extension Optional: OptionalStored {
    static var wrappedType: Any.Type { Wrapped.self }
}

/// The types stored as property-list arrays.
protocol ArrayStored {}
extension Array: ArrayStored {}
extension Set: ArrayStored {}

/// The types stored as property-list dictionaries.
protocol DictionaryStored {}
extension Dictionary: DictionaryStored {}
