import FuzzSupport
import LiveDefaults

/// The OpenStep reader alone: any bytes are a value or a `PropertyListError`, never a trap, hang or leak.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let data = fuzzInput(start, count)
    _ = try? PropertyList.decode(data, as: .openStep)
    // Command-line values go through the text entry point (old-style, or XML when it looks like XML).
    _ = try? PropertyList(parsing: String(decoding: data, as: UTF8.self))
    return 0
}
