import Foundation

/// Writes Apple's XML property-list format exactly as Foundation lays it out (tab indentation, sorted
/// dictionary keys), so a file written here diffs cleanly against one written by Foundation.
///
/// One kind of value has no XML form: a date outside the years 0000–9999 (or not finite at all), which only
/// a binary file or a program can produce. Rather than write text that no reader accepts, the writer fails
/// with ``PropertyListError/Code/unrepresentable`` naming where the value sits.
enum XMLPropertyListWriter {
    static let header = """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
        <plist version="1.0">

        """

    static func data(from value: PropertyList) throws(PropertyListError) -> Data {
        var output = header
        do throws(Unrepresentable) {
            try write(value, indent: 0, into: &output)
        } catch {
            throw .unrepresentable(keyPath: KeyPathComponent.text(error.path.reversed()), reason: error.reason)
        }
        output += "</plist>\n"
        return Data(output.utf8)
    }

    /// The path is collected innermost first as the error leaves each container, so writing a value that
    /// can be written costs nothing for it.
    private struct Unrepresentable: Error {
        var reason: String
        var path: [KeyPathComponent] = []
    }

    private static func write(_ value: PropertyList, indent: Int, into output: inout String) throws(Unrepresentable) {
        let tabs = String(repeating: "\t", count: indent)
        switch value {
        case .string(let string):
            output += "\(tabs)<string>\(escaped(string))</string>\n"
        case .integer(let integer):
            output += "\(tabs)<integer>\(integer)</integer>\n"
        case .real(let real):
            output += "\(tabs)<real>\(realText(real))</real>\n"
        case .bool(let bool):
            output += bool ? "\(tabs)<true/>\n" : "\(tabs)<false/>\n"
        case .date(let date):
            guard let text = PropertyListDate.xmlText(date) else {
                throw Unrepresentable(
                    reason: "the date \(PropertyListDate.isoText(date)) is outside the years 0000–9999 that an XML "
                        + "property list can hold (a binary one can)")
            }
            output += "\(tabs)<date>\(text)</date>\n"
        case .data(let data):
            output += "\(tabs)<data>\n"
            let encoded = data.base64EncodedString()
            var index = encoded.startIndex
            while index < encoded.endIndex {
                let end = encoded.index(index, offsetBy: 68, limitedBy: encoded.endIndex) ?? encoded.endIndex
                output += "\(tabs)\(encoded[index..<end])\n"
                index = end
            }
            output += "\(tabs)</data>\n"
        case .array(let elements):
            if elements.isEmpty {
                output += "\(tabs)<array/>\n"
                return
            }
            output += "\(tabs)<array>\n"
            for (index, element) in elements.enumerated() {
                do throws(Unrepresentable) { try write(element, indent: indent + 1, into: &output) } catch {
                    var error = error
                    error.path.append(.index(index))
                    throw error
                }
            }
            output += "\(tabs)</array>\n"
        case .dictionary(let entries):
            if entries.isEmpty {
                output += "\(tabs)<dict/>\n"
                return
            }
            output += "\(tabs)<dict>\n"
            for (key, entry) in entries.sorted(by: { $0.key < $1.key }) {
                output += "\(tabs)\t<key>\(escaped(key))</key>\n"
                do throws(Unrepresentable) { try write(entry, indent: indent + 1, into: &output) } catch {
                    var error = error
                    error.path.append(.key(key))
                    throw error
                }
            }
            output += "\(tabs)</dict>\n"
        }
    }

    static func realText(_ real: Double) -> String {
        if real.isNaN { return "nan" }
        if real.isInfinite { return real < 0 ? "-infinity" : "+infinity" }
        return "\(real)"
    }

    /// Escapes markup characters, and control characters (which XML 1.0 cannot carry literally) as
    /// numeric references that Foundation's and this library's readers accept.
    private static func escaped(_ text: String) -> String {
        guard
            text.utf8.contains(where: {
                $0 == 0x26 || $0 == 0x3C || $0 == 0x3E || ($0 < 0x20 && $0 != 0x09 && $0 != 0x0A)
            })
        else {
            return text
        }
        var result = ""
        result.reserveCapacity(text.utf8.count + 16)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            // A literal CR would be turned into LF by every conforming XML reader (line-end normalisation).
            case "\t", "\n": result.unicodeScalars.append(scalar)
            case _ where scalar.value < 0x20: result += "&#x\(String(scalar.value, radix: 16));"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }
}

/// One step of the way from the top of a property list to a value inside it.
enum KeyPathComponent {
    case key(String)
    case index(Int)

    /// `Key`, `Key.Inner`, `Key[2].Name`; `the top-level value` for an empty path.
    static func text(_ path: [KeyPathComponent]) -> String {
        guard !path.isEmpty else { return "the top-level value" }
        var result = ""
        for component in path {
            switch component {
            case .key(let key): result += result.isEmpty ? key : ".\(key)"
            case .index(let index): result += "[\(index)]"
            }
        }
        return result
    }
}
