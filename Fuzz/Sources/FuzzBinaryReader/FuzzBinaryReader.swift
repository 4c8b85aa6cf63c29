import FuzzSupport
import LiveDefaults

/// The Binary reader alone: any bytes are a value or a `PropertyListError`, never a trap, hang or leak.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    _ = try? PropertyList.decode(fuzzInput(start, count), as: .binary)
    return 0
}
