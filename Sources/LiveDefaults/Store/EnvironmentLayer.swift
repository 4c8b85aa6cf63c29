package import Foundation

/// The environment layer of a store with an ``Defaults/Configuration/environmentPrefix``: the settings an
/// operator hands over as environment variables (`MYSERVER_RATE_LIMIT=200`) and as files that hold one value each
/// (`MYSERVER_API_KEY_FILE=/run/secrets/api_key`), as a volatile domain (``DomainName/environment``) directly
/// below the argument domain and above every file (forced values excepted, which win over everything).
///
/// **Names.** A key's variable is the prefix and the key's name in upper snake case (``variableSuffix(forKey:)``):
/// `RateLimit`, `rateLimit`, `rate.limit` and `rate-limit` are all `RATE_LIMIT`. Which key a variable sets is
/// decided from the keys the store knows — every key of every domain of its search list (registered defaults
/// included) and every key of the application domain's published schema: the one known key of that variable's
/// name; when two known keys share it, the variable sets neither and is reported; when none does, the name in
/// upper camel case (`RATE_LIMIT` → `RateLimit`, the convention of defaults keys).
///
/// **Values.** The text is typed by the key's type in the published schema — an integer, a real number, a
/// Boolean (`true`/`false`/`yes`/`no`/`1`/`0`), a date, or old-style property-list text for data, arrays and
/// dictionaries — and checked by the schema like any write; without a schema, text that reads as an old-style
/// array or dictionary (it starts with `(` or `{`) is one, anything else a string, which the getters and typed
/// keys read as a number or a Boolean as they read a `defaults write` without a type flag. A value that cannot
/// be parsed or that the schema refuses is left out (the key reads from the layers below) and reported once.
///
/// **Files.** `<prefix><NAME>_FILE=<path>` takes the value of `<NAME>` from the file at `path` (a regular file of
/// at most ``maximumFileSize`` bytes, one trailing newline dropped), unless a known key's own variable is
/// `<NAME>_FILE`. The store watches the file (when it watches): a secret rotated by rename or rewritten in place
/// reaches the program as any change. Setting both `<NAME>` and `<NAME>_FILE` sets neither, reported.
struct EnvironmentLayer: Sendable {
    /// Where a key's value comes from.
    enum Origin: Sendable, Hashable {
        /// The variable's own text: the variable is `prefix` + `name` (kept apart, not joined for every variable
        /// of a fresh process's open: each join of a name longer than fifteen bytes is an allocation).
        case variable(prefix: String, name: String)
        /// The file a `_FILE` variable names: the variable and the path.
        case file(variable: String, path: String)
    }

    /// The largest file a `_FILE` variable may name.
    static let maximumFileSize = 1 << 20

    let prefix: String
    /// The variables' texts by name without the prefix (`RATE_LIMIT`, `API_KEY_FILE`). One dictionary of the
    /// type the environment is read into: on a fresh process's first open each new generic type costs the
    /// runtime a conformance scan (Docs/Benchmarks.md).
    let settings: [String: String]
    /// Whether a name ends in `_FILE`: without one, no name is looked up with `_FILE` appended.
    let hasFileNames: Bool

    /// The layer of the variables of `environment` that start with `prefix`; nil when none does (the store then
    /// has no environment layer at all).
    init?(prefix: String, environment: [String: String]) {
        guard !prefix.isEmpty else { return nil }
        var settings: [String: String] = [:]
        for (name, value) in environment where name.hasPrefix(prefix) && name.utf8.count > prefix.utf8.count {
            settings[String(name.dropFirst(prefix.count))] = value
        }
        self.init(prefix: prefix, settings: settings)
    }

    /// The layer of `settings`, variables' texts by name without `prefix` (``Environment/variables(withPrefix:)``
    /// reads them so); nil when there are none or the prefix is empty.
    init?(prefix: String, settings: [String: String]) {
        guard !prefix.isEmpty, !settings.isEmpty else { return nil }
        self.prefix = prefix
        self.settings = settings
        hasFileNames = settings.keys.contains { $0.hasSuffix("_FILE") }
    }

    /// A key's variable name without the prefix, in upper snake case: words split where a lower-case letter or a
    /// digit meets an upper-case one, before the last capital of a run that a lower-case letter follows (`APIKey`
    /// → `API_KEY`), and at `.`, `-`, `_` and spaces; nil for a key with any other character (no variable can
    /// name it) or none.
    static func variableSuffix(forKey key: String) -> String? {
        // On the key's bytes in place, written straight into the string made: a fresh process's first open names
        // every key it knows with this (see ``Claims``).
        var key = key
        return key.withUTF8(variableSuffix(of:))
    }

    private static func variableSuffix(of bytes: UnsafeBufferPointer<UInt8>) -> String? {
        guard !bytes.isEmpty else { return nil }
        func isUpper(_ byte: UInt8) -> Bool { byte >= 65 && byte <= 90 }
        func isLower(_ byte: UInt8) -> Bool { byte >= 97 && byte <= 122 }
        func isDigit(_ byte: UInt8) -> Bool { byte >= 48 && byte <= 57 }
        var valid = true
        // At most one `_` before each byte: twice the key's length.
        let text = String(unsafeUninitializedCapacity: bytes.count * 2) { out -> Int in
            var count = 0
            for (index, byte) in bytes.enumerated() {
                if byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
                    || byte == UInt8(ascii: " ")
                {
                    if count > 0, out[count - 1] != UInt8(ascii: "_") {
                        out[count] = UInt8(ascii: "_")
                        count += 1
                    }
                    continue
                }
                guard isUpper(byte) || isLower(byte) || isDigit(byte) else {
                    valid = false
                    return 0
                }
                // Something written before, not an `_`: the byte before this one is a letter or a digit.
                if isUpper(byte), count > 0, out[count - 1] != UInt8(ascii: "_") {
                    let previous = bytes[index - 1]
                    let next = index + 1 < bytes.count ? bytes[index + 1] : 0
                    if isLower(previous) || isDigit(previous) || (isUpper(previous) && isLower(next)) {
                        out[count] = UInt8(ascii: "_")
                        count += 1
                    }
                }
                out[count] = isLower(byte) ? byte - 32 : byte
                count += 1
            }
            while count > 0, out[count - 1] == UInt8(ascii: "_") { count -= 1 }
            return count
        }
        guard valid, !text.isEmpty else { return nil }
        return text
    }

    /// The key a variable name sets when no known key has it: upper camel case (`RATE_LIMIT` → `RateLimit`),
    /// with an `_` kept where camel case would not split back into the same words (`A_B` → `A_B`, `PORT_2` →
    /// `Port_2`): the key's own variable name is always the one it came from.
    static func defaultKey(forSuffix suffix: String) -> String {
        // One pass over the bytes in place (ASCII case mapping), written straight into the string made: a fresh
        // process names its 200 variables' keys with this at its first open.
        var suffix = suffix
        return suffix.withUTF8(defaultKey(of:))
    }

    private static func defaultKey(of bytes: UnsafeBufferPointer<UInt8>) -> String {
        func isLetter(_ byte: UInt8) -> Bool { (byte | 0x20) >= 97 && (byte | 0x20) <= 122 }
        func upper(_ byte: UInt8) -> UInt8 { byte >= 97 && byte <= 122 ? byte - 32 : byte }
        func lower(_ byte: UInt8) -> UInt8 { byte >= 65 && byte <= 90 ? byte + 32 : byte }
        // Never longer than the name: each word loses its `_` separators and gains at most one.
        return String(unsafeUninitializedCapacity: bytes.count) { key -> Int in
            var count = 0
            var previousEndsInUpper = false
            var start = 0
            while start < bytes.count {
                guard bytes[start] != UInt8(ascii: "_") else {
                    start += 1
                    continue
                }
                var end = start + 1
                while end < bytes.count, bytes[end] != UInt8(ascii: "_") { end += 1 }
                let first = bytes[start]
                if count > 0 {
                    let second = end - start > 1 ? bytes[start + 1] : nil
                    // variableSuffix splits before a capital that follows a small letter or a digit, or that
                    // starts a word of two letters or more after a capital; before a digit, never.
                    let splits = isLetter(first) && (!previousEndsInUpper || second.map(isLetter) == true)
                    if !splits {
                        key[count] = UInt8(ascii: "_")
                        count += 1
                    }
                }
                key[count] = upper(first)
                count += 1
                for index in (start + 1)..<end {
                    key[count] = lower(bytes[index])
                    count += 1
                }
                // Only a word of one letter ends in a capital: the rest of a word is lower case.
                previousEndsInUpper = end - start == 1 && isLetter(first)
                start = end
            }
            return count
        }
    }

    /// What the layer holds for the keys a store knows.
    struct Materialized: Sendable {
        var values: [String: PropertyList] = [:]
        /// Where each value came from.
        var origins: [String: Origin] = [:]
        /// Why a variable set nothing, one sentence each (reported once by the store).
        var problems: [Problem] = []
        /// The files of `_FILE` variables, to watch (absolute paths).
        var files: [String] = []
    }

    /// A variable that set nothing, and why.
    struct Problem: Sendable, Hashable {
        var variable: String
        var key: String?
        var reason: String
    }

    /// The values of the variables, for a store that knows `knownKeys`, typed by `schema`; `_FILE` files read on
    /// `fileSystem`, relative paths against `workingDirectory`.
    ///
    /// Each variable once, in the environment's order, with no dictionary or array beyond the results: the work
    /// of a fresh process's first open, which takes a runtime type instantiation for every new generic type.
    func materialize(
        knownKeys: some Sequence<String>, schema: DomainSchema?, fileSystem: any DefaultsFileSystem,
        workingDirectory: String
    ) -> Materialized {
        let claims = Claims(knownKeys: knownKeys, settings: settings, fileNames: hasFileNames)
        // A `NAME_FILE` variable is the file of `NAME` unless a known key claims `NAME_FILE` as its own name.
        func isFileVariable(_ suffix: String) -> Bool {
            suffix.utf8.count > 5 && suffix.hasSuffix("_FILE") && !claims.isClaimed(suffix)
        }
        var result = Materialized()
        result.values.reserveCapacity(settings.count)
        result.origins.reserveCapacity(settings.count)
        for (name, setting) in settings {
            let isFile = isFileVariable(name)
            let suffix = isFile ? String(name.dropLast(5)) : name
            // Its `_FILE` variable is set too: reported once, where that variable is taken.
            if !isFile, hasFileNames, settings[name + "_FILE"] != nil, isFileVariable(name + "_FILE") { continue }
            if let conflict = claims.conflict(suffix, variable: prefix + suffix) {
                result.problems.append(conflict)
                continue
            }
            let key = claims.keys[suffix] ?? Self.defaultKey(forSuffix: suffix)
            let text: String
            let origin: Origin
            if isFile {
                let fileVariable = prefix + name
                if settings[suffix] != nil, !isFileVariable(suffix) {
                    result.problems.append(
                        Problem(
                            variable: prefix + suffix, key: key,
                            reason: "both \(prefix + suffix) and \(fileVariable) are set; neither is used"))
                    continue
                }
                let absolute = PathComponents.absolute(setting, in: workingDirectory)
                result.files.append(absolute)
                switch Self.readValueFile(absolute, on: fileSystem) {
                case .success(let contents):
                    text = contents
                    origin = .file(variable: fileVariable, path: absolute)
                case .failure(let reason):
                    result.problems.append(Problem(variable: fileVariable, key: key, reason: reason.description))
                    continue
                }
            } else {
                text = setting
                origin = .variable(prefix: prefix, name: name)
            }
            switch Self.typedValue(text, key: key, schema: schema) {
            case .success(let value):
                result.values[key] = value
                result.origins[key] = origin
            case .failure(let reason):
                result.problems.append(Problem(variable: prefix + suffix, key: key, reason: reason.description))
            }
        }
        // The environment's order is no order: problems and files sorted, so that reports repeat alike.
        if result.problems.count > 1 { result.problems.sort { $0.variable < $1.variable } }
        if result.files.count > 1 { result.files.sort() }
        return result
    }

    /// Which known key each variable name (without the prefix) of the layer sets: the one known key of that
    /// upper-snake-case name; two or more keys of one name are a conflict, and the variable sets none of them.
    struct Claims {
        /// The one known key of a name, for the names the layer's variables use.
        var keys: [String: String] = [:]
        /// The keys of names that two or more known keys share; nil while none does (the usual case: its
        /// dictionary type is then never instantiated).
        var conflicts: [String: [String]]?

        /// The claims of `knownKeys` on the names of `settings`, of which some end in `_FILE` when `fileNames`.
        init(knownKeys: some Sequence<String>, settings: [String: String], fileNames: Bool) {
            for key in knownKeys {
                guard let suffix = EnvironmentLayer.variableSuffix(forKey: key),
                    settings[suffix] != nil || (fileNames && settings[suffix + "_FILE"] != nil)
                else { continue }
                guard let claimed = keys[suffix] ?? conflicts?[suffix]?.first else {
                    keys[suffix] = key
                    continue
                }
                if claimed == key || conflicts?[suffix]?.contains(key) == true { continue }
                var shared = conflicts?[suffix] ?? [claimed]
                shared.append(key)
                var all = conflicts ?? [:]
                all[suffix] = shared
                conflicts = all
                keys.removeValue(forKey: suffix)
            }
        }

        /// Whether a known key, or more than one, has the name `suffix`.
        func isClaimed(_ suffix: String) -> Bool {
            keys[suffix] != nil || conflicts?[suffix] != nil
        }

        /// The problem of a name two or more known keys share, nil when it has at most one.
        func conflict(_ suffix: String, variable: String) -> Problem? {
            guard let shared = conflicts?[suffix] else { return nil }
            return Problem(
                variable: variable, key: nil,
                reason: "keys \(shared.sorted().joined(separator: " and ")) both map to it; it sets neither")
        }
    }

    /// The text of a value file: a regular file (never a FIFO or a device, which could block or never end) of at
    /// most ``maximumFileSize`` bytes, in UTF-8, with one trailing newline (`\n` or `\r\n`) dropped.
    static func readValueFile(_ path: String, on fileSystem: any DefaultsFileSystem) -> Result<String, Reason> {
        let contents: Data
        do throws(SystemError) {
            switch try fileSystem.readSmallFile(atPath: path, maximumBytes: maximumFileSize) {
            case .contents(let data): contents = data
            case .absent: return .failure(Reason("the file \(path) does not exist"))
            case .notRegular: return .failure(Reason("\(path) is not a regular file"))
            case .tooLarge(let size):
                return .failure(
                    Reason("the file \(path) has \(size) bytes, more than the \(maximumFileSize) a value may have"))
            }
        } catch {
            return .failure(Reason("the file \(path) cannot be read: \(error.message)"))
        }
        // On the bytes: to `String`, `\r\n` is one character, and `hasSuffix("\n")` does not see its `\n`.
        var bytes = contents[...]
        if bytes.last == UInt8(ascii: "\n") {
            bytes = bytes.dropLast()
            if bytes.last == UInt8(ascii: "\r") { bytes = bytes.dropLast() }
        }
        // Validated from the contiguous bytes: through `Data`'s own sequence, a byte at a time.
        guard let text = bytes.withUnsafeBytes({ String(validating: $0, as: UTF8.self) }) else {
            return .failure(Reason("the file \(path) is not UTF-8 text"))
        }
        return .success(text)
    }

    /// Why a text gives no value.
    struct Reason: Error, Sendable, Hashable, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    /// `text` without the ASCII white space around it (spaces, tabs, line ends): what an operator's quoting leaves.
    static func trimmed(_ text: String) -> String {
        func isSpace(_ byte: UInt8) -> Bool { byte == 32 || (byte >= 9 && byte <= 13) }
        let bytes = text.utf8
        // The usual text has nothing to trim: itself, not a copy.
        if let first = bytes.first, let last = bytes.last, !isSpace(first), !isSpace(last) { return text }
        guard let first = bytes.firstIndex(where: { !isSpace($0) }),
            let last = bytes.lastIndex(where: { !isSpace($0) })
        else { return "" }
        return String(text[first...last])
    }

    /// The value `text` stands for as `key`'s type in `schema`, checked by the schema as any write is: what the
    /// environment's variables and the key files give a key.
    static func typedValue(_ text: String, key: String, schema: DomainSchema?) -> Result<PropertyList, Reason> {
        switch value(text, for: schema?.keys[key]) {
        case .success(let value):
            if let violation = schema?.violation(forKey: key, value: value) { return .failure(Reason("\(violation)")) }
            return .success(value)
        case .failure(let reason):
            return .failure(reason)
        }
    }

    /// The value `text` stands for as `schema`'s type, or, without one, an old-style array or dictionary when it
    /// reads as one, else the string.
    static func value(_ text: String, for schema: KeySchema?) -> Result<PropertyList, Reason> {
        let trimmed = Self.trimmed(text)
        func structured(_ kind: String) -> PropertyList? {
            guard let parsed = try? PropertyList.decode(Data(trimmed.utf8), as: .openStep) else { return nil }
            return parsed.typeName == kind ? parsed : nil
        }
        guard let type = schema?.type else {
            if trimmed.hasPrefix("(") || trimmed.hasPrefix("{"),
                let parsed = try? PropertyList.decode(Data(trimmed.utf8), as: .openStep)
            {
                switch parsed {
                case .array, .dictionary: return .success(parsed)
                default: break
                }
            }
            return .success(.string(text))
        }
        let value: PropertyList?
        switch type {
        case .string: value = .string(text)
        case .integer: value = Int(trimmed).map(PropertyList.integer)
        case .real: value = Double(trimmed).flatMap { $0.isFinite ? PropertyList.real($0) : nil }
        case .boolean: value = PropertyList.bool(fromText: trimmed).map(PropertyList.bool)
        case .date: value = PropertyList.date(fromText: trimmed).map(PropertyList.date)
        case .data: value = structured("data")
        case .array: value = structured("array")
        case .dictionary: value = structured("dictionary")
        }
        guard let value else {
            let shown = text.count > 40 ? String(text.prefix(40)) + "…" : text
            return .failure(Reason("\"\(shown)\" is not \(type.withArticle)"))
        }
        return .success(value)
    }
}

extension Defaults {
    /// What is wrong with the environment layer's reading of `data`, nil when nothing is: the first byte picks a
    /// schema type (or none), the rest is a variable's text and a key's name. Every text gives a value of the
    /// type or a reason; a key's variable name is upper snake case of `A`–`Z`, `0`–`9` and single `_` inside; a
    /// variable name's key maps back to that name. What the fuzz target `FuzzEnvironment` holds it to.
    package static func environmentProblem(_ data: Data) -> String? {
        guard let selector = data.first else { return nil }
        let types: [PropertyListType?] = [nil] + PropertyListType.allCases
        let type = types[Int(selector) % types.count]
        let text = String(decoding: data.dropFirst(), as: UTF8.self)
        let schema = type.map { KeySchema(name: "Key", type: $0) }
        if case .success(let value) = EnvironmentLayer.value(text, for: schema), let type,
            PropertyListType(of: value) != type
        {
            return "text \(text.debugDescription) gave \(value.typeName) for \(type)"
        }
        if let suffix = EnvironmentLayer.variableSuffix(forKey: text) {
            let allowed = suffix.utf8.allSatisfy { ($0 >= 65 && $0 <= 90) || ($0 >= 48 && $0 <= 57) || $0 == 95 }
            if !allowed || suffix.hasPrefix("_") || suffix.hasSuffix("_") || suffix.contains("__") {
                return "key \(text.debugDescription) gave the variable name \(suffix)"
            }
            let key = EnvironmentLayer.defaultKey(forSuffix: suffix)
            if EnvironmentLayer.variableSuffix(forKey: key) != suffix {
                return "variable name \(suffix) gave the key \(key), whose variable name is not \(suffix)"
            }
        }
        return nil
    }
}
