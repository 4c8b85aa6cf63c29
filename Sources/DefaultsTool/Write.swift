import ArgumentParser
import DefaultsToolSupport
import LiveDefaults

/// `defaults write domain key value` and `defaults write domain plist`.
struct Write: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "write",
        abstract: "Write a key, or replace a whole domain with a dictionary.",
        discussion: """
            defaults write <domain> <key> <value>            a bare value is an old-style plist: 42, "A B", (a, b), { k = v; }
            defaults write <domain> <key> -string|-int|-integer|-float|-bool|-boolean|-date|-data <value>
            defaults write <domain> <key> -array|-array-add <value>…
            defaults write <domain> <key> -dict|-dict-add <key> <value>…
            defaults write <domain> '{ Key = value; … }'     replaces the whole domain
            The command returns once the value is on disk. A value the domain's published schema refuses (wrong \
            type, out of range, not one of the choices) is not written: exit status 1, with what the key \
            accepts; --no-validate (before the domain, or last) writes it anyway, with a warning. --wait [SECONDS] \
            (before the domain, or last) then waits for every process reading the domain to apply or refuse the \
            new version: one line per process; exit status 1 when one refused it or did not answer. A version a \
            reader refused does not wait on disk for the next start: it is rolled back to the version before it (one \
            change, logged with the refusal as its reason) unless --keep-refused (before the domain, or last) \
            keeps it. --reason TEXT (before the domain, or last) records why in the domain's change log: \
            defaults log shows it. --for DURATION (90s, 30m, 2h, 1d, 1h30m; before the domain, or last) makes the \
            change temporary: at its end each key it changed returns to its value before (a key it added is \
            removed), unless the key was changed again meanwhile; defaults read shows what is pending.
            """)

    @OptionGroup var host: HostOptions
    @OptionGroup var validation: ValidationOptions
    @OptionGroup var wait: WaitOptions
    @OptionGroup var reason: ReasonOptions
    @OptionGroup var temporary: TemporaryOptions
    @Argument(help: "A domain name, -g, or a path to a plist file.") var domain: String
    @Argument(parsing: .captureForPassthrough, help: "The key and the value, or a dictionary for the whole domain.")
    var words: [String] = []

    func run() {
        perform {
            let target = try DomainTarget(domain, host: host)
            let store = try target.store()
            var words = words
            var noValidate = validation.noValidate
            var wait = wait
            var reason = reason
            var temporary = temporary
            // Trailing options, in either order (the words after the domain are otherwise the key and value).
            while let last = words.last {
                if words.count >= 2, words[words.count - 2] == "--reason" {
                    try ReasonOptions.check(last)
                    reason.reason = last
                    words.removeLast()
                } else if words.count >= 2, words[words.count - 2] == "--for" {
                    _ = try TemporaryOptions.duration(last)
                    temporary.text = last
                    words.removeLast()
                } else if last.hasPrefix("--for=") {
                    temporary.text = String(last.dropFirst(6))
                    _ = try TemporaryOptions.duration(temporary.text ?? "")
                } else if last.hasPrefix("--reason=") {
                    reason.reason = String(last.dropFirst(9))
                    try ReasonOptions.check(reason.reason ?? "")
                } else if last == "--no-validate" {
                    noValidate = true
                } else if last == "--keep-refused" {
                    wait.keepRefused = true
                } else if last.hasPrefix("--wait="), let seconds = Double(last.dropFirst(7)) {
                    wait.seconds = seconds
                    try wait.validate()
                } else {
                    break
                }
                words.removeLast()
            }
            let duration = try temporary.lasting()
            try reason.attributing {
                try write(words, to: target, store: store, noValidate: noValidate, wait: wait, lasting: duration)
            }
        }
    }

    /// Writes the key and value, or the whole domain, that `words` give.
    private func write(
        _ words: [String], to target: DomainTarget, store: ToolStore, noValidate: Bool, wait: WaitOptions,
        lasting duration: Duration?
    ) throws {
        // A temporary change is one transaction, whose keys are undone at its end; a plain one is a set.
        let put: (String, PropertyList) throws -> Void = { key, value in
            if let duration {
                try store.change([key: value], lasting: duration)
            } else {
                try store.set(value, forKey: key)
            }
        }
        let before = try wait.versionBefore(in: store)
        var written: [String] = []
        switch words.count {
        case 0:
            throw ToolError("write needs a key and a value, or a dictionary for the whole domain")
        case 1:
            guard case .dictionary(let contents) = try ValueParser.bare(words[0]) else {
                throw ToolError("\"\(words[0])\" is not a dictionary; to write a key, give the key and a value")
            }
            try target.check(contents, noValidate: noValidate)
            if let duration {
                try store.change(store.replacementEdits(contents), lasting: duration)
            } else {
                try store.replace(with: contents)
            }
            written = contents.keys.sorted()
        default:
            let key = words[0]
            written = [key]
            let current = try store.contents()?[key]
            switch try ValueParser.parse(Array(words.dropFirst())) {
            case .set(let value):
                try target.check([key: value], noValidate: noValidate)
                try put(key, value)
            case .appendToArray(let elements):
                guard case .array(let existing) = current ?? .array([]) else {
                    throw ToolError(
                        "-array-add: the value of \(key) in \(domain) is a \(current!.typeName), not an array")
                }
                try target.check([key: .array(existing + elements)], noValidate: noValidate)
                try put(key, .array(existing + elements))
            case .mergeIntoDictionary(let entries):
                guard case .dictionary(var existing) = current ?? .dictionary([:]) else {
                    throw ToolError(
                        "-dict-add: the value of \(key) in \(domain) is a \(current!.typeName), not a dictionary")
                }
                existing.merge(entries) { _, new in new }
                try target.check([key: .dictionary(existing)], noValidate: noValidate)
                try put(key, .dictionary(existing))
            }
        }
        if duration == nil { try store.commit() }
        store.warnOfPinnedKeys(written)
        try wait.waitForReaders(of: store, before: before)
    }
}
