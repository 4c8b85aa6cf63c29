import DefaultsToolSupport
import FuzzSupport
import LiveDefaults

/// A schema to suggest keys from, as a published one would be.
let declared = DomainSchema(
    domain: "com.example.api",
    keys: ["RateLimit", "Theme", "APIToken", "Ratio", "LogLevel", "Features", "é", "日本語キー"].map {
        KeySchema(name: $0, type: .string)
    })

/// The `defaults write` value parser: the input is the words after the key, separated by NUL bytes (as the
/// kernel hands arguments over). Every word list is an edit or a `ToolError`, never a trap.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let data = fuzzInput(start, count)
    let words = data.split(separator: 0, omittingEmptySubsequences: false).map {
        String(decoding: $0, as: UTF8.self)
    }
    if let edit = try? ValueParser.parse(words) {
        // What `defaults write` does next: store the value (written as XML), and print it back.
        switch edit {
        case .set(let value):
            _ = try? value.encoded(as: .xml)
            _ = Output.text(value)
        case .appendToArray(let elements): _ = Output.text(.array(elements))
        case .mergeIntoDictionary(let entries): _ = Output.text(.dictionary(entries))
        }
    }
    for word in words.prefix(4) {
        // A key as typed: the declared key it most likely meant (`write`, `merge` and `import` ask).
        if let suggestion = declared.nearestKey(to: word) {
            require(declared.keys[suggestion] != nil, "a suggestion is a declared key")
        }
        _ = try? ValueParser.bare(word)
        _ = ValueParser.hexData(word)
        _ = ValueParser.parseDate(word)
    }
    return 0
}
