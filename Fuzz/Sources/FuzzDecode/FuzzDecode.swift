import FuzzSupport
import LiveDefaults

/// `PropertyList.decode`, the entry every domain file goes through: format detection, then any reader.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let data = fuzzInput(start, count)
    guard let (value, _) = try? PropertyList.decode(data) else { return 0 }
    // What opening a domain does next with the value: measure it, hash it, compare it.
    _ = value.depth
    var hasher = Hasher()
    hasher.combine(value)
    _ = hasher.finalize()
    return 0
}
