import Foundation
import LiveDefaults
import Logging

/// The settings the page shows and edits, from the domain's published schema: no code here knows any one
/// key. What a key accepts, its summary and whether it is a secret come from the schema; a value is checked
/// by the schema (as `defaults write` checks it) and then written through the program's typed key of that
/// name, if it has one, with the typed write's own checks (a Codable value's shape).
struct SettingsCatalog: Sendable {
    let defaults: Defaults
    /// The program's typed keys, by name (what it published).
    let keys: [String: DefaultsKeys]
    let logger: Logger

    /// What the page shows in place of a secret's value.
    static let secretText = "<secret>"

    init(defaults: Defaults, keys: [AnyDefaultsKey], logger: Logger) {
        self.defaults = defaults
        self.keys = Dictionary(keys.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        self.logger = logger
    }

    /// The domain's schema as published (read each time: a package may install a newer one while the
    /// server runs); the program's own keys when none is published or it cannot be read.
    func schema() -> DomainSchema {
        let domain = defaults.configuration.applicationDomain
        do {
            if let published = try defaults.publishedSchema(inDomain: domain) { return published }
            logger.notice("no schema is published for \(domain); the page shows the server's own keys")
        } catch {
            logger.warning(
                "the published schema of \(domain) cannot be read (\(error)); the page shows the server's own keys")
        }
        return DomainSchema(domain: domain, keys: keys.values.map(\.schema))
    }

    /// A key's effective value as JSON (its default when no domain has it), `<secret>` for a secret; from
    /// `version` (``Defaults/dictionaryRepresentationValues()``) when given, else read now.
    func value(of key: KeySchema, in version: [String: PropertyList]? = nil) -> Any {
        if key.isSecret { return Self.secretText }
        let stored = version.map { $0[key.name] } ?? defaults.value(forKey: key.name)
        guard let value = stored ?? key.defaultValue else { return NSNull() }
        return JSONValues.json(value)
    }

    /// Why the key's stored value is refused (the server's typed readers keep their last valid value), or
    /// nil.
    func problem(of key: KeySchema) -> String? {
        guard let stored = defaults.value(forKey: key.name) else { return nil }
        let violation = key.violation(for: stored) ?? keys[key.name]?.violation(for: stored)
        return violation.map {
            var violation = $0; violation.isSecret = key.isSecret; return "\(violation)"
        }
    }

    /// Every setting's value, by name, all from one version of the settings (never some keys before a change
    /// made with others and the rest after it).
    func snapshot(_ schema: DomainSchema) -> [String: Any] {
        let version = defaults.dictionaryRepresentationValues()
        return schema.keys.mapValues { value(of: $0, in: version) }
    }

    /// What the page builds its form from: each key's name, type, summary, default, range or choices,
    /// secrecy, what it accepts in words, and why its stored value is refused when it is.
    func form(_ schema: DomainSchema) -> [String: Any] {
        let entries: [[String: Any]] = schema.sortedKeys.map { key in
            var entry: [String: Any] = [
                "name": key.name, "accepted": key.accepted, "secret": key.isSecret,
                "type": key.type?.rawValue ?? "any",
            ]
            if let summary = key.summary { entry["summary"] = summary }
            if let value = key.defaultValue {
                entry["default"] = key.isSecret ? Self.secretText : JSONValues.json(value)
            }
            if let minimum = key.minimum { entry["minimum"] = JSONValues.json(minimum) }
            if let maximum = key.maximum { entry["maximum"] = JSONValues.json(maximum) }
            if let choices = key.choices { entry["choices"] = choices.map(JSONValues.json) }
            if let problem = problem(of: key) { entry["refused"] = problem }
            entry["source"] = source(of: key)
            return entry
        }
        return ["domain": schema.domain, "keys": entries]
    }

    /// Where each setting's value comes from now, by name: what the page shows under each value, so that a
    /// value the environment pins (``serverEnvironmentPrefix``) is not mistaken for the file's.
    func sources(_ schema: DomainSchema) -> [String: String] {
        schema.keys.mapValues(source(of:))
    }

    /// Where the key's value comes from, in words: the environment variable, the secret file, the settings
    /// file, a forced file, or the default.
    func source(of key: KeySchema) -> String {
        defaults.source(ofKey: key.name).map { "\($0)" } ?? "the default"
    }

    /// Checks a JSON value against the key's schema and the program's typed key, and stores it through the
    /// library; JSON `null` removes the user's value (the key reads its default again).
    ///
    /// - Throws: ``SettingError/unknown(_:)`` for a key the schema does not declare,
    ///   ``SettingError/invalid(_:)`` for a value it refuses (the message names what the key accepts),
    ///   ``SettingError/refused(_:)`` when the store refuses (a key forced by an administrator).
    func write(_ name: String, json: Any, schema: DomainSchema) throws(SettingError) {
        let value = try checked(name, json: json, schema: schema)
        do {
            if let typed = keys[name] {
                try defaults.trySet(propertyList: value, for: typed)
            } else {
                try defaults.trySet(value, forKey: name)
            }
        } catch {
            if error.code == .invalidValue || error.code == .versionRefused { throw .invalid("\(error)") }
            throw .refused("\(error)")
        }
    }

    /// A JSON value as the property list stored for the key, once the schema accepts it.
    private func checked(_ name: String, json: Any, schema: DomainSchema) throws(SettingError) -> PropertyList? {
        guard let key = schema.keys[name] else {
            throw .unknown(
                "no setting named \"\(name)\"; settings: \(schema.sortedKeys.map(\.name).joined(separator: ", "))")
        }
        let value = try JSONValues.propertyList(json, as: key.type)
        if let value, let violation = schema.violation(forKey: name, value: value) {
            throw .invalid("\(violation)")
        }
        return value
    }

    /// Stores several settings as one change (a transaction): every value is checked first, as ``write(_:json:schema:)``
    /// checks one, and nothing is stored when one is refused; programs and pages following the domain see all of
    /// them at once, never some.
    func write(_ settings: [String: Any], schema: DomainSchema) throws(SettingError) {
        var values: [String: PropertyList?] = [:]
        for (name, json) in settings {
            let value = try checked(name, json: json, schema: schema)
            if let value, let violation = keys[name]?.violation(for: value) { throw .invalid("\(violation)") }
            values[name] = .some(value)
        }
        do {
            try defaults.transaction { tx in
                for (name, value) in values { tx.set(value, forKey: name) }
            }
        } catch let error as DefaultsError {
            if error.code == .invalidValue || error.code == .versionRefused { throw .invalid("\(error)") }
            throw .refused("\(error)")
        } catch {
            throw .refused("\(error)")
        }
    }
}

/// Why a setting was not stored.
enum SettingError: Error {
    /// No such setting: 404.
    case unknown(String)
    /// The value does not fit the setting: 422.
    case invalid(String)
    /// The store refused it (a forced key): 409.
    case refused(String)
}
