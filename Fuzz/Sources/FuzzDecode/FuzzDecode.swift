import FuzzSupport
import LiveDefaults

/// `PropertyList.decode`, the entry every domain file goes through: format detection, then any reader; and
/// what a published schema file goes through next (`DomainSchema(data:)`, then checking values with it).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let data = fuzzInput(start, count)
    // A schema file is read from outside the process too: any bytes are a schema or an error.
    if let schema = try? DomainSchema(data: data) {
        // Its own defaults, bounds and choices, checked against it: every comparison of kinds it may hold.
        var values: [String: PropertyList] = [:]
        for key in schema.keys.values {
            for candidate in [key.defaultValue, key.minimum, key.maximum] + (key.choices ?? []).map(Optional.some) {
                if let candidate { values[key.name] = candidate }
                _ = candidate.map { key.violation(for: $0) }
            }
            _ = key.accepted
        }
        _ = schema.violations(in: values)
        _ = schema.propertyList
    }
    guard let (value, _) = try? PropertyList.decode(data) else { return 0 }
    // What opening a domain does next with the value: measure it, hash it, compare it.
    _ = value.depth
    var hasher = Hasher()
    hasher.combine(value)
    _ = hasher.finalize()
    return 0
}
