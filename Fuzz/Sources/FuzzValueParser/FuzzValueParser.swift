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
/// kernel hands arguments over). Every word list is an edit or a `ToolError`, never a trap (and each word as a
/// `--for` duration too); and the whole input, as the text of `defaults edit`, is a domain that reads back the
/// same when shown, an abort, or a problem.
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
    // The whole input as the text `defaults edit` reads back: a domain, an abort (nil) or a problem; a domain
    // shown again (with a schema beside its keys) reads back as the same values, compared as they show.
    let text = String(decoding: data, as: UTF8.self)
    if let values = try? EditText.parse(text) {
        let shown = EditText.render(values, header: ["fuzz"], schema: declared)
        guard let again = try? EditText.parse(shown) else {
            require(false, "a rendered domain reads back")
            return 0
        }
        require(
            again.mapValues(EditText.canonical) == values.mapValues(EditText.canonical),
            "a rendered domain reads back as the same values")
        _ = EditText.annotate(text, general: ["fuzz"], atKeys: values.mapValues { _ in ["note"] }, atLines: [2: ["x"]])
    }
    for word in words.prefix(4) {
        // A key as typed: the declared key it most likely meant (`write`, `merge` and `import` ask).
        if let suggestion = declared.nearestKey(to: word) {
            require(declared.keys[suggestion] != nil, "a suggestion is a declared key")
        }
        _ = try? ValueParser.bare(word)
        _ = ValueParser.hexData(word)
        _ = ValueParser.parseDate(word)
        // A temporary change's `--for`: a duration within its bound, spelled back as it reads.
        if let duration = try? DurationText.parse(word) {
            require(duration > .zero && duration <= .seconds(DurationText.longestSeconds), "a duration in bounds")
            require((try? DurationText.parse(DurationText.describe(duration))) == duration, "a duration reads back")
        }
    }
    return 0
}
