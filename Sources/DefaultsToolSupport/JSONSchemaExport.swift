import Foundation
public import LiveDefaults

/// A domain's schema as JSON Schema (draft 2020-12), for `defaults schema DOMAIN --json-schema`: it validates
/// the domain's JSON export (`defaults export DOMAIN - --json`), whose encoding it follows — dates as ISO 8601
/// strings, data as base64 strings.
///
/// What JSON Schema cannot say is left out rather than approximated: the range of a string or a date (JSON
/// Schema orders numbers only) and NaN or the infinities, which the JSON export writes as strings. A secret
/// key is marked `writeOnly` and its default left out.
public enum JSONSchemaExport {
    /// The JSON Schema document, as a JSON-compatible Foundation object.
    public static func document(_ schema: DomainSchema) -> [String: Any] {
        var properties: [String: Any] = [:]
        for key in schema.sortedKeys { properties[key.name] = property(key) }
        return [
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": schema.domain,
            "description":
                "The keys of the defaults domain \(schema.domain) that its program declares (LiveDefaults schema).",
            "type": "object",
            "properties": properties,
        ]
    }

    static func property(_ key: KeySchema) -> [String: Any] {
        var object: [String: Any] = [:]
        if let type = key.type {
            switch type {
            case .integer: object["type"] = "integer"
            case .real: object["type"] = "number"
            case .boolean: object["type"] = "boolean"
            case .string: object["type"] = "string"
            case .date:
                object["type"] = "string"
                object["format"] = "date-time"
            case .data:
                object["type"] = "string"
                object["contentEncoding"] = "base64"
            case .array: object["type"] = "array"
            case .dictionary: object["type"] = "object"
            }
            if type == .integer || type == .real {
                if let minimum = key.minimum.flatMap(number) { object["minimum"] = minimum }
                if let maximum = key.maximum.flatMap(number) { object["maximum"] = maximum }
            }
        }
        if let choices = key.choices { object["enum"] = choices.map { Output.jsonObject($0) } }
        if let summary = key.summary { object["description"] = summary }
        if key.isSecret {
            object["writeOnly"] = true
        } else if let value = key.defaultValue {
            object["default"] = Output.jsonObject(value)
        }
        return object
    }

    /// A bound JSON Schema can state: a finite number.
    static func number(_ value: PropertyList) -> Any? {
        switch value {
        case .integer(let integer): integer
        case .real(let real) where real.isFinite: real
        default: nil
        }
    }
}
