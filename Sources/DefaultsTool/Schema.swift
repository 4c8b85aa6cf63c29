import ArgumentParser
import DefaultsToolSupport
import Foundation
import LiveDefaults

/// The schema a program published for a domain (Docs/Schema.md), as the command's verbs use it.
extension DomainTarget {
    /// The domain's published schema, from ``DefaultsLocations/schemaDirectories``; none for a plist path.
    func schema() throws -> DomainSchema? {
        guard !display.contains("/") else { return nil }
        do {
            return try DomainSchema.find(domain: name, in: DefaultsLocations.current.schemaDirectories)
        } catch {
            throw ToolError("\(error)")
        }
    }

    /// The published schema, failing with the directories searched when there is none.
    func requireSchema() throws -> DomainSchema {
        guard let schema = try schema() else {
            let searched = DefaultsLocations.current.schemaDirectories.joined(separator: ", ")
            throw ToolError("no schema is published for \(name) (searched: \(searched))")
        }
        return schema
    }

    /// Refuses keys the domain's schema does not declare, naming the declared key each most likely meant, and
    /// values it refuses, naming each key and what it accepts; with `noValidate`, warns on standard error and
    /// lets them through. Keys a fleet rollout is changing are refused whatever `noValidate` says: the rollout
    /// decides their value.
    func check(_ values: [String: PropertyList], noValidate: Bool) throws {
        try checkRollouts(Set(values.keys))
        guard let schema = try schema() else { return }
        // "RateLimt is not a key of com.example.api; did you mean RateLimit?"
        var problems = schema.undeclaredKeys(in: values.keys).map { key in
            "\(DefaultsError.undeclaredKey(key, domain: name, suggestion: schema.nearestKey(to: key)))"
        }
        let violations = schema.violations(in: values)
        if !violations.isEmpty {
            problems.append(
                "the schema of \(name) refuses it: " + violations.map { "\($0)" }.joined(separator: "; "))
        }
        guard !problems.isEmpty else { return }
        let reasons = problems.joined(separator: "; ")
        if noValidate {
            FileHandle.standardError.write(
                Data("defaults: warning: written anyway (--no-validate): \(reasons)\n".utf8))
            return
        }
        throw ToolError("nothing written: \(reasons) (--no-validate writes anyway)")
    }
}

extension DomainTarget {
    /// Refuses keys under a fleet rollout, as this machine's sync agent lists them (``KeysUnderRollout``).
    func checkRollouts(_ keys: Set<String>) throws {
        guard !display.contains("/") else { return }
        let underRollout = KeysUnderRollout.load(
            stateDirectory: KeysUnderRollout.stateDirectory(for: .current), domain: name
        ).keys
        guard let key = keys.sorted().first(where: { underRollout[$0] != nil }), let rollout = underRollout[key] else {
            return
        }
        throw ToolError(
            "nothing written: \(key) of \(name) is under \(rollout); it ends by itself, or with `defaults rollout --abort \(name) \(key)`"
        )
    }
}

/// `--no-validate`, for the verbs that write.
struct ValidationOptions: ParsableArguments {
    @Flag(
        name: .customLong("no-validate"),
        help: "Write values the domain's published schema refuses (with a warning).")
    var noValidate = false
}

/// `--show-secrets`, for the verbs that print values.
struct SecretOptions: ParsableArguments {
    @Flag(name: .customLong("show-secrets"), help: "Print the values of keys the schema marks secret.")
    var showSecrets = false

    /// Replaces the values of secret keys with `<secret>` unless secrets are to be shown.
    func masked(_ contents: [String: PropertyList], schema: DomainSchema?) -> [String: PropertyList] {
        guard !showSecrets, let schema else { return contents }
        var masked = contents
        for (name, key) in schema.keys where key.isSecret && masked[name] != nil { masked[name] = .string("<secret>") }
        return masked
    }

    /// Whether the value of `key` prints as `<secret>`: the schema marks it secret and secrets are not shown.
    func hides(_ key: String, schema: DomainSchema?) -> Bool {
        !showSecrets && schema?.keys[key]?.isSecret == true
    }

    /// A value, or `<secret>` for a secret key unless secrets are to be shown.
    func masked(_ value: PropertyList, key: String, schema: DomainSchema?) -> PropertyList {
        hides(key, schema: schema) ? .string("<secret>") : value
    }

    /// A value on one line, or `<secret>` for a secret key unless secrets are to be shown.
    func line(_ value: PropertyList, key: String, schema: DomainSchema?) -> String {
        hides(key, schema: schema) ? "<secret>" : Output.line(value)
    }
}

/// `defaults schema domain [--json-schema]`.
struct SchemaVerb: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schema",
        abstract: "Print the schema a program published for a domain, or export it as JSON Schema.",
        discussion: """
            Schemas are <domain>.plist files in $LIVEDEFAULTS_SCHEMA_PATH (colon-separated) when it is set, else \
            in $XDG_DATA_HOME/livedefaults/schemas (~/.local/share/...) then /usr/share/livedefaults/schemas. \
            --json-schema prints JSON Schema (draft 2020-12) that validates the domain's JSON export \
            (defaults export DOMAIN - --json).
            """)

    @OptionGroup var host: HostOptions
    @Argument var domain: String
    @Flag(name: .customLong("json-schema"), help: "Print JSON Schema (draft 2020-12).") var jsonSchema = false

    func run() {
        perform {
            let schema = try DomainTarget(domain, host: host).requireSchema()
            if jsonSchema {
                emit(Output.json(JSONSchemaExport.document(schema)))
            } else {
                emit(Output.text(schema.propertyList))
            }
        }
    }
}

/// `defaults describe domain [key]`.
struct Describe: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "describe",
        abstract: "Describe a domain's keys from its published schema, with the values in effect.",
        discussion: """
            For each key (or the one named): its type, default, range or choices, summary, whether it is secret, \
            and the value in effect with the file it comes from; a value a temporary change holds (write --for), \
            with when it ends and what it returns to. Secret values print as <secret> unless --show-secrets is \
            given.
            """)

    @OptionGroup var host: HostOptions
    @OptionGroup var secrets: SecretOptions
    @Argument var domain: String
    @Argument(help: "Describe only this key.") var key: String?

    func run() {
        perform {
            let target = try DomainTarget(domain, host: host)
            let schema = try target.requireSchema()
            let keys: [KeySchema]
            if let key {
                guard let declared = schema.keys[key] else {
                    throw ToolError("the schema of \(target.name) declares no key \(key)")
                }
                keys = [declared]
            } else {
                keys = schema.sortedKeys
            }
            // Opened first: a temporary change that expired is undone before the values are read.
            let temporary = TemporaryReport(store: try target.store()) { value, key in
                Output.text(secrets.masked(value, key: key, schema: schema))
            }
            let files = try EffectiveValues(target: target)
            var blocks: [String] = []
            for key in keys {
                let lines =
                    describe(key, files: files, schema: schema)
                    + temporary.keyLines(of: [key.name]).map { "  temporary: " + $0 }
                blocks.append(lines.joined(separator: "\n"))
            }
            emit(blocks.joined(separator: "\n\n"))
        }
    }

    func describe(_ key: KeySchema, files: EffectiveValues, schema: DomainSchema) -> [String] {
        var lines = [key.summary.map { "\(key.name): \($0)" } ?? key.name]
        lines.append("  type: \(key.type?.rawValue ?? "any")")
        let defaultText = key.defaultValue.map { secrets.line($0, key: key.name, schema: schema) }
        lines.append("  default: \(defaultText ?? "none (the key reads as absent)")")
        if key.minimum != nil || key.maximum != nil {
            let low = key.minimum.map(Output.line) ?? "…"
            let high = key.maximum.map(Output.line) ?? "…"
            lines.append("  range: \(low)…\(high)")
        }
        if let choices = key.choices { lines.append("  choices: " + choices.map(Output.line).joined(separator: ", ")) }
        if key.isSecret { lines.append("  secret: yes") }
        lines.append("  value: " + files.effective(key, secrets: secrets, schema: schema))
        return lines
    }
}

/// `defaults reset domain key`.
struct Reset: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reset",
        abstract: "Remove the user's value of a key, and print the value that shows now.",
        discussion: """
            The key goes from the user's file of the domain (or the per-host one with -currentHost); what a \
            program reads then is printed: a value from another file (a forced value, the global domain) or \
            the default from the published schema.
            """)

    @OptionGroup var host: HostOptions
    @OptionGroup var secrets: SecretOptions
    @OptionGroup var reason: ReasonOptions
    @Argument var domain: String
    @Argument var key: String

    func run() {
        perform(reason) {
            let target = try DomainTarget(domain, host: host)
            let store = try target.store()
            let contents = try store.contents() ?? [:]
            if contents[key] != nil {
                try store.set(nil, forKey: key)
                try store.commit()
            }
            let schema = try target.schema()
            let files = try EffectiveValues(target: target)
            let declared = schema?.keys[key] ?? KeySchema(name: key, type: nil)
            let prefix = contents[key] == nil ? "\(key) had no value in \(target.path); " : ""
            emit(prefix + "\(key) now reads " + files.effective(declared, secrets: secrets, schema: schema))
        }
    }
}

/// Every layer's file of a domain and of the global domain, to tell where a key's value comes from.
struct EffectiveValues {
    let files: [FileReport]
    /// The programs reading the domain, whose environment may pin a key.
    let readers: [ReadingProcess]

    init(target: DomainTarget) throws {
        let store = try target.store()
        readers = store.defaults.readers(inDomain: target.name, layer: target.layer)
        var domains = [target.name]
        if target.name != Defaults.globalDomain { domains.append(Defaults.globalDomain) }
        var files: [FileReport] = []
        for name in domains {
            for layer in PreferenceLayer.searchOrder {
                files.append(
                    FileReport(domain: name, layer: layer, store: store.defaults, target: target, mountPoints: []))
            }
        }
        self.files = files
    }

    /// The value in effect and where it comes from, or the default.
    func effective(_ key: KeySchema, secrets: SecretOptions, schema: DomainSchema?) -> String {
        let report = KeyReport(key: key.name, files: files, readers: readers)
        let pinned = report.pinnedBy.map { "; but \($0)" }.joined()
        guard let holder = report.holders.first else {
            guard let value = key.defaultValue else {
                return "none (no file holds the key; it has no default)" + pinned
            }
            return "\(secrets.line(value, key: key.name, schema: schema)) (the default: no file holds the key)" + pinned
        }
        var text =
            "\(secrets.line(holder.value, key: key.name, schema: schema)) "
            + "(from \(holder.file.domain) \(holder.file.layer.rawValue), \(holder.file.path))"
        if let violation = key.violation(for: holder.value) {
            text += "; the schema refuses it (\(violation.reason.rawValue)): programs read their last valid value"
        }
        return text + pinned
    }
}
