import Foundation
import LiveDefaults

/// Property-list values as the page's JSON carries them, and back, guided by a key's schema.
///
/// Out: integers and reals as numbers, Booleans as `true`/`false`, dates as ISO 8601 strings, data as
/// base64, arrays and dictionaries as JSON arrays and objects. In: the same, and where the key's type says
/// so, an ISO 8601 string becomes a date, a base64 string data, a whole number a real or a real without
/// fraction an integer. Anything else converts as it is, so that the schema, not this bridge, says why a
/// value of the wrong type is refused.
enum JSONValues {
    /// The JSON form of a value (for `JSONSerialization`).
    static func json(_ value: PropertyList) -> Any {
        switch value {
        case .string(let text): return text
        case .integer(let number): return number
        // JSON has no NaN or infinity: they travel as text.
        case .real(let number): return number.isFinite ? number : "\(number)"
        case .bool(let flag): return flag
        case .date(let date): return date.formatted(.iso8601)
        case .data(let data): return data.base64EncodedString()
        case .array(let elements): return elements.map(json)
        case .dictionary(let entries): return entries.mapValues(json)
        }
    }

    /// A value from its JSON form, for a key of `type` (nil: any type); nil for JSON `null` (no value).
    ///
    /// - Throws: ``SettingError/invalid(_:)`` for what has no property-list form: `null` inside an array,
    ///   nesting deeper than a property list may.
    static func propertyList(_ json: Any, as type: PropertyListType?, depth: Int = 0) throws(SettingError)
        -> PropertyList?
    {
        guard depth < 64 else { throw .invalid("the value nests more than 64 levels deep") }
        switch json {
        case is NSNull:
            return nil
        case let number as NSNumber:
            return self.number(number, as: type)
        case let text as String:
            switch type {
            case .date: return (try? Date(text, strategy: .iso8601)).map(PropertyList.date) ?? .string(text)
            case .data: return Data(base64Encoded: text).map(PropertyList.data) ?? .string(text)
            default: return .string(text)
            }
        case let elements as [Any]:
            var values: [PropertyList] = []
            for element in elements {
                guard let value = try propertyList(element, as: nil, depth: depth + 1) else {
                    throw .invalid("an array cannot hold null")
                }
                values.append(value)
            }
            return .array(values)
        case let object as [String: Any]:
            var entries: [String: PropertyList] = [:]
            // A null field is an absent one (an optional property of a Codable value).
            for (name, element) in object {
                entries[name] = try propertyList(element, as: nil, depth: depth + 1)
            }
            return .dictionary(entries)
        default:
            throw .invalid("\(Swift.type(of: json)) is no JSON value")
        }
    }

    /// A JSON number or Boolean (both arrive as `NSNumber`; a Boolean's C type is `char`, "c").
    private static func number(_ number: NSNumber, as type: PropertyListType?) -> PropertyList {
        if String(cString: number.objCType) == "c" { return .bool(number.boolValue) }
        let integer = Int(number.stringValue)
        switch type {
        case .real:
            return .real(number.doubleValue)
        case .integer:
            return (integer ?? Int(exactly: number.doubleValue)).map(PropertyList.integer) ?? .real(number.doubleValue)
        default:
            return integer.map(PropertyList.integer) ?? .real(number.doubleValue)
        }
    }

    /// A JSON value as text, for messages.
    static func text(_ json: Any) -> String {
        guard let data = try? JSONSerialization.data(withJSONObject: json, options: [.fragmentsAllowed]) else {
            return "\(json)"
        }
        return String(decoding: data, as: UTF8.self)
    }
}
