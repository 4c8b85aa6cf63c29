import Foundation

/// Writes Apple's XML property-list format exactly as Foundation lays it out (tab indentation, sorted
/// dictionary keys), so a file written here diffs cleanly against one written by Foundation.
///
/// One kind of value has no XML form: a date outside the years 0000–9999 (or not finite at all), which only
/// a binary file or a program can produce. Rather than write text that no reader accepts, the writer fails
/// with ``PropertyListError/Code/unrepresentable`` naming where the value sits.
enum XMLPropertyListWriter {
    static let header: StaticString = """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
        <plist version="1.0">

        """

    static func data(from value: PropertyList) throws(PropertyListError) -> Data {
        // Written as UTF-8 bytes, not through `String` interpolation and appends: a domain's write encodes the
        // whole file each time, and the string steps were most of the encoding's time.
        var output = XMLOutput()
        output.append(header)
        do throws(Unrepresentable) {
            try write(value, indent: 0, into: &output)
        } catch {
            throw .unrepresentable(keyPath: KeyPathComponent.text(error.path.reversed()), reason: error.reason)
        }
        output.append("</plist>\n")
        return Data(output.bytes)
    }

    /// The path is collected innermost first as the error leaves each container, so writing a value that
    /// can be written costs nothing for it.
    private struct Unrepresentable: Error {
        var reason: String
        var path: [KeyPathComponent] = []
    }

    private static func write(_ value: PropertyList, indent: Int, into output: inout XMLOutput)
        throws(Unrepresentable)
    {
        output.tabs(indent)
        switch value {
        case .string(let string):
            output.append("<string>")
            output.escaped(string)
            output.append("</string>\n")
        case .integer(let integer):
            output.append("<integer>")
            output.bytes.appendDecimal(integer)
            output.append("</integer>\n")
        case .real(let real):
            output.append("<real>")
            output.append(realText(real))
            output.append("</real>\n")
        case .bool(let bool):
            output.append(bool ? "<true/>\n" : "<false/>\n")
        case .date(let date):
            guard let text = PropertyListDate.xmlText(date) else {
                throw Unrepresentable(
                    reason: "the date \(PropertyListDate.isoText(date)) is outside the years 0000–9999 that an XML "
                        + "property list can hold (a binary one can)")
            }
            output.append("<date>")
            output.append(text)
            output.append("</date>\n")
        case .data(let data):
            output.append("<data>\n")
            let encoded = Array(data.base64EncodedString().utf8)
            var index = 0
            while index < encoded.count {
                let end = min(index + 68, encoded.count)
                output.tabs(indent)
                output.bytes.append(contentsOf: encoded[index..<end])
                output.bytes.append(0x0A)
                index = end
            }
            output.tabs(indent)
            output.append("</data>\n")
        case .array(let elements):
            if elements.isEmpty {
                output.append("<array/>\n")
                return
            }
            output.append("<array>\n")
            for (index, element) in elements.enumerated() {
                do throws(Unrepresentable) { try write(element, indent: indent + 1, into: &output) } catch {
                    var error = error
                    error.path.append(.index(index))
                    throw error
                }
            }
            output.tabs(indent)
            output.append("</array>\n")
        case .dictionary(let entries):
            if entries.isEmpty {
                output.append("<dict/>\n")
                return
            }
            output.append("<dict>\n")
            for (key, entry) in entries.sorted(by: { $0.key < $1.key }) {
                output.tabs(indent + 1)
                output.append("<key>")
                output.escaped(key)
                output.append("</key>\n")
                do throws(Unrepresentable) { try write(entry, indent: indent + 1, into: &output) } catch {
                    var error = error
                    error.path.append(.key(key))
                    throw error
                }
            }
            output.tabs(indent)
            output.append("</dict>\n")
        }
    }

    static func realText(_ real: Double) -> String {
        if real.isNaN { return "nan" }
        if real.isInfinite { return real < 0 ? "-infinity" : "+infinity" }
        return "\(real)"
    }
}

/// The bytes of an XML property list as they are written: markup, tabs, decimal integers and escaped text
/// appended to one growing array.
private struct XMLOutput {
    var bytes: [UInt8] = []

    init() { bytes.reserveCapacity(1024) }

    mutating func append(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    mutating func append(_ text: String) {
        bytes.append(contentsOf: text.utf8)
    }

    mutating func tabs(_ count: Int) {
        for _ in 0..<count { bytes.append(0x09) }
    }

    /// `text` with markup characters escaped, and control characters (which XML 1.0 cannot carry literally) as
    /// numeric references that Foundation's and this library's readers accept. Every byte escaped is ASCII, so
    /// the text's UTF-8 is walked byte by byte: a multi-byte character's bytes are all 0x80 or above.
    mutating func escaped(_ text: String) {
        for byte in text.utf8 {
            switch byte {
            case 0x26: append("&amp;")
            case 0x3C: append("&lt;")
            case 0x3E: append("&gt;")
            // A literal CR would be turned into LF by every conforming XML reader (line-end normalisation).
            case 0x09, 0x0A: bytes.append(byte)
            case _ where byte < 0x20:
                append("&#x")
                if byte >= 0x10 { bytes.append(ASCIIDigits.hex(byte >> 4)) }
                bytes.append(ASCIIDigits.hex(byte))
                bytes.append(UInt8(ascii: ";"))
            default: bytes.append(byte)
            }
        }
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
