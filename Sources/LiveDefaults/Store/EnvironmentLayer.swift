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
        /// The variable's own text.
        case variable(String)
        /// The file a `_FILE` variable names: the variable and the path.
        case file(variable: String, path: String)
    }

    /// One variable name (less the prefix and any `_FILE`): its text, or the file that holds it, or both.
    struct Setting: Sendable, Hashable {
        var text: String?
        var file: String?
    }

    /// The largest file a `_FILE` variable may name.
    static let maximumFileSize = 1 << 20

    let prefix: String
    /// The settings by name: `RATE_LIMIT`.
    let settings: [String: Setting]

    /// The layer of the variables of `environment` that start with `prefix`; nil when none does (the store then
    /// has no environment layer at all).
    init?(prefix: String, environment: [String: String]) {
        guard !prefix.isEmpty else { return nil }
        var settings: [String: Setting] = [:]
        for (name, value) in environment where name.hasPrefix(prefix) && name.utf8.count > prefix.utf8.count {
            let suffix = String(name.dropFirst(prefix.count))
            settings[suffix, default: Setting()].text = value
        }
        guard !settings.isEmpty else { return nil }
        self.prefix = prefix
        self.settings = settings
    }

    /// A key's variable name without the prefix, in upper snake case: words split where a lower-case letter or a
    /// digit meets an upper-case one, before the last capital of a run that a lower-case letter follows (`APIKey`
    /// → `API_KEY`), and at `.`, `-`, `_` and spaces; nil for a key with any other character (no variable can
    /// name it) or none.
    static func variableSuffix(forKey key: String) -> String? {
        let bytes = Array(key.utf8)
        guard !bytes.isEmpty else { return nil }
        func isUpper(_ byte: UInt8) -> Bool { byte >= 65 && byte <= 90 }
        func isLower(_ byte: UInt8) -> Bool { byte >= 97 && byte <= 122 }
        func isDigit(_ byte: UInt8) -> Bool { byte >= 48 && byte <= 57 }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count + 4)
        for (index, byte) in bytes.enumerated() {
            if byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
                || byte == UInt8(ascii: " ")
            {
                if let last = out.last, last != UInt8(ascii: "_") { out.append(UInt8(ascii: "_")) }
                continue
            }
            guard isUpper(byte) || isLower(byte) || isDigit(byte) else { return nil }
            if isUpper(byte), index > 0, let last = out.last, last != UInt8(ascii: "_") {
                let previous = bytes[index - 1]
                let next = index + 1 < bytes.count ? bytes[index + 1] : 0
                if isLower(previous) || isDigit(previous) || (isUpper(previous) && isLower(next)) {
                    out.append(UInt8(ascii: "_"))
                }
            }
            out.append(isLower(byte) ? byte - 32 : byte)
        }
        while out.last == UInt8(ascii: "_") { out.removeLast() }
        guard !out.isEmpty else { return nil }
        return String(decoding: out, as: UTF8.self)
    }

    /// The key a variable name sets when no known key has it: upper camel case (`RATE_LIMIT` → `RateLimit`),
    /// with an `_` kept where camel case would not split back into the same words (`A_B` → `A_B`, `PORT_2` →
    /// `Port_2`): the key's own variable name is always the one it came from.
    static func defaultKey(forSuffix suffix: String) -> String {
        // On the bytes (ASCII case mapping): a fresh process names its variables without Unicode's tables.
        func isLetter(_ byte: UInt8) -> Bool { (byte | 0x20) >= 97 && (byte | 0x20) <= 122 }
        func upper(_ byte: UInt8) -> UInt8 { byte >= 97 && byte <= 122 ? byte - 32 : byte }
        func lower(_ byte: UInt8) -> UInt8 { byte >= 65 && byte <= 90 ? byte + 32 : byte }
        var key: [UInt8] = []
        var previousEndsInUpper = false
        for word in suffix.utf8.split(separator: UInt8(ascii: "_")) {
            guard let first = word.first else { continue }
            var camel = [upper(first)]
            camel += word.dropFirst().map(lower)
            if !key.isEmpty {
                let second = camel.count > 1 ? camel[1] : nil
                // variableSuffix splits before a capital that follows a small letter or a digit, or that starts a
                // word of two letters or more after a capital; before a digit, never.
                let splits = isLetter(first) && (!previousEndsInUpper || second.map(isLetter) == true)
                if !splits { key.append(UInt8(ascii: "_")) }
            }
            key += camel
            previousEndsInUpper = camel.last.map { $0 >= 65 && $0 <= 90 } ?? false
        }
        return String(decoding: key, as: UTF8.self)
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
    /// `fileSystem`.
    func materialize(
        knownKeys: some Sequence<String>, schema: DomainSchema?, fileSystem: any DefaultsFileSystem,
        workingDirectory: String
    ) -> Materialized {
        var claimants: [String: [String]] = [:]
        for key in knownKeys {
            guard let suffix = Self.variableSuffix(forKey: key) else { continue }
            claimants[suffix, default: []].append(key)
        }
        var result = Materialized()
        // Each name once: a `_FILE` variable is the file of its base name unless a known key claims it as is.
        var resolved: [String: Setting] = [:]
        var fileVariables: [String: String] = [:]
        for (suffix, setting) in settings {
            if suffix.hasSuffix("_FILE"), suffix.utf8.count > 5, claimants[suffix] == nil, let text = setting.text {
                let base = String(suffix.dropLast(5))
                resolved[base, default: Setting()].file = text
                fileVariables[base] = prefix + suffix
            } else {
                resolved[suffix, default: Setting()].text = setting.text
            }
        }
        for (suffix, setting) in resolved.sorted(by: { $0.key < $1.key }) {
            let variable = prefix + suffix
            var claimed: [String] = []
            for key in claimants[suffix] ?? [] where !claimed.contains(key) { claimed.append(key) }
            if claimed.count > 1 {
                result.problems.append(
                    Problem(
                        variable: variable, key: nil,
                        reason: "keys \(claimed.sorted().joined(separator: " and ")) both map to it; it sets neither"))
                continue
            }
            let key = claimed.first ?? Self.defaultKey(forSuffix: suffix)
            let text: String
            let origin: Origin
            switch (setting.text, setting.file) {
            case (.some, .some):
                result.problems.append(
                    Problem(
                        variable: variable, key: key,
                        reason:
                            "both \(variable) and \(fileVariables[suffix] ?? variable + "_FILE") are set; neither is used"
                    ))
                continue
            case (let direct?, nil):
                text = direct
                origin = .variable(variable)
            case (nil, let path?):
                let fileVariable = fileVariables[suffix] ?? variable + "_FILE"
                let absolute = path.hasPrefix("/") ? path : workingDirectory + "/" + path
                result.files.append(absolute)
                switch Self.readValueFile(absolute, on: fileSystem) {
                case .success(let contents):
                    text = contents
                    origin = .file(variable: fileVariable, path: absolute)
                case .failure(let reason):
                    result.problems.append(Problem(variable: fileVariable, key: key, reason: reason.description))
                    continue
                }
            case (nil, nil):
                continue
            }
            switch Self.value(text, for: schema?.keys[key]) {
            case .success(let value):
                if let violation = schema?.violation(forKey: key, value: value) {
                    result.problems.append(Problem(variable: variable, key: key, reason: "\(violation)"))
                    continue
                }
                result.values[key] = value
                result.origins[key] = origin
            case .failure(let reason):
                result.problems.append(Problem(variable: variable, key: key, reason: reason.description))
            }
        }
        return result
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
        guard let text = String(validating: bytes, as: UTF8.self) else {
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
        guard let first = bytes.firstIndex(where: { !isSpace($0) }),
            let last = bytes.lastIndex(where: { !isSpace($0) })
        else { return "" }
        return String(text[first...last])
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
