import Foundation
import FuzzSupport
import LiveDefaults

/// `decode(encode(x)) == x` for every value a reader accepts, in every format, within the formats' documented
/// limits: XML keeps dates to the whole second and holds years 0000–9999 only; old-style text has only
/// strings, data, arrays and dictionaries (numbers, Booleans and dates come back as the text printed).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard let (value, _) = try? PropertyList.decode(fuzzInput(start, count)) else { return 0 }

    let binary = encode(value, as: .binary)
    check(binary, as: .binary, expected: value, dates: .exact)

    do {
        let xml = try value.encoded(as: .xml)
        check(xml, as: .xml, expected: value, dates: .wholeSeconds)
    } catch {
        require(hasDateBeyondXML(value), "XML refused a value it can hold: \(error)")
    }

    let text = encode(value, as: .openStep)
    check(text, as: .openStep, expected: openStepProjection(value), dates: .exact)
    return 0
}

private func encode(_ value: PropertyList, as format: PropertyList.Format) -> Data {
    do { return try value.encoded(as: format) } catch { fatalError("\(format) writer refused \(value): \(error)") }
}

private func check(_ data: Data, as format: PropertyList.Format, expected: PropertyList, dates: DatePrecision) {
    let reread: PropertyList
    do { reread = try PropertyList.decode(data, as: format) } catch {
        fatalError("\(format) output does not read back: \(error)\n\(String(decoding: data, as: UTF8.self))")
    }
    require(
        equivalent(reread, expected, dates: dates),
        "\(format) round trip changed the value:\nbefore \(expected)\nafter  \(reread)")
    if format != .openStep {
        // Files are read through format detection: what a writer wrote must be detected as that format.
        require((try? PropertyList.decode(data))?.format == format, "\(format) output detected as another format")
    }
}
