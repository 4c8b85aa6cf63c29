import Foundation
public import LiveDefaults

/// How values are printed: as macOS `defaults` prints them, or as JSON for scripts.
public enum Output {
    /// A value as `defaults read` prints it: strings and numbers bare, Booleans as 1/0, containers as
    /// old-style property lists.
    public static func text(_ value: PropertyList) -> String {
        switch value {
        case .string(let string): string
        default: value.openStepText(dateStyle: .defaultsTool)
        }
    }

    /// A value on one line (for `watch`): old-style text with its layout collapsed. Strings never hold a raw
    /// newline in old-style text (it is written `\n`), so only layout is removed.
    public static func line(_ value: PropertyList) -> String {
        let text = value.openStepText(dateStyle: .defaultsTool)
        return text.replacing(/\n\s*/, with: " ")
    }

    /// A value as a JSON-compatible Foundation object: dates as ISO 8601 strings, data as base64, and the
    /// reals JSON has no number for (NaN, the infinities) as the strings `"nan"`, `"+infinity"`, `"-infinity"`.
    public static func jsonObject(_ value: PropertyList?) -> Any {
        switch value {
        case nil: NSNull()
        case .string(let string): string
        case .integer(let integer): integer
        case .real(let real): real.isFinite ? real : PropertyList.real(real).openStepText()
        case .bool(let bool): bool
        case .date(let date): PropertyList.text(for: date, style: .iso8601)
        case .data(let data): data.base64EncodedString()
        case .array(let elements): elements.map { jsonObject($0) }
        case .dictionary(let entries): entries.mapValues { jsonObject($0) }
        }
    }

    /// JSON text, keys sorted; `pretty` for documents, one line for JSON Lines.
    public static func json(_ object: Any, pretty: Bool = true) -> String {
        var options: JSONSerialization.WritingOptions = [.sortedKeys, .fragmentsAllowed, .withoutEscapingSlashes]
        if pretty { options.insert(.prettyPrinted) }
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: options) else { return "null" }
        return String(decoding: data, as: UTF8.self)
    }
}
