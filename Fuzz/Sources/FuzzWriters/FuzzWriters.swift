import DefaultsToolSupport
import FuzzSupport
import LiveDefaults

/// Every writer and formatter, fed with whatever a reader accepts: they must be total (a value or, for XML,
/// an `unrepresentable` error for a date beyond its years), never a trap.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard let (value, _) = try? PropertyList.decode(fuzzInput(start, count)) else { return 0 }
    for format in PropertyList.Format.allCases {
        do {
            _ = try value.encoded(as: format)
        } catch {
            guard error.code == .unrepresentable, format == .xml, hasDateBeyondXML(value) else {
                fatalError("\(format) writer refused a value it can hold: \(error)")
            }
        }
    }
    _ = value.description
    _ = value.openStepText(dateStyle: .iso8601)
    _ = value.openStepText(dateStyle: .defaultsTool)
    // `defaults read` (text and --json) and `defaults watch` (one line, JSON Lines).
    _ = Output.text(value)
    _ = Output.line(value)
    _ = Output.json(Output.jsonObject(value))
    _ = Output.json(Output.jsonObject(value), pretty: false)
    // The Foundation bridge, both ways.
    let bridged = try? PropertyList(foundationValue: value.foundationValue)
    require(bridged.map { equivalent($0, value, dates: .exact) } ?? false, "the Foundation bridge changed \(value)")
    return 0
}
