import Foundation

/// Writes Apple's XML property-list format exactly as Foundation lays it out (tab indentation, sorted
/// dictionary keys), so a file written here diffs cleanly against one written by Foundation.
enum XMLPropertyListWriter {
    static let header = """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
        <plist version="1.0">

        """

    static func data(from value: PropertyList) -> Data {
        var output = header
        write(value, indent: 0, into: &output)
        output += "</plist>\n"
        return Data(output.utf8)
    }

    private static func write(_ value: PropertyList, indent: Int, into output: inout String) {
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
            output += "\(tabs)<date>\(PropertyListDate.format(date))</date>\n"
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
            for element in elements { write(element, indent: indent + 1, into: &output) }
            output += "\(tabs)</array>\n"
        case .dictionary(let entries):
            if entries.isEmpty {
                output += "\(tabs)<dict/>\n"
                return
            }
            output += "\(tabs)<dict>\n"
            for (key, entry) in entries.sorted(by: { $0.key < $1.key }) {
                output += "\(tabs)\t<key>\(escaped(key))</key>\n"
                write(entry, indent: indent + 1, into: &output)
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
        guard text.utf8.contains(where: { $0 == 0x26 || $0 == 0x3C || $0 == 0x3E || $0 < 0x20 }) else {
            return text
        }
        var result = ""
        result.reserveCapacity(text.utf8.count + 16)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\t", "\n", "\r": result.unicodeScalars.append(scalar)
            case _ where scalar.value < 0x20: result += "&#x\(String(scalar.value, radix: 16));"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }
}
