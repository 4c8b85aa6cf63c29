/// Migrations of stored keys: run them once at start, before the keys are used. Each is idempotent, so
/// running it again (or in several processes at once) changes nothing, and there is no bookkeeping to keep.
///
/// ```swift
/// // Version 2 renamed "Limit" to "RateLimit":
/// try defaults.migrateKey(from: "Limit", to: .rateLimit)
/// // Version 3 stores the timeout in seconds as a Double instead of milliseconds as an Int:
/// try defaults.migrate(.timeout, from: Int.self) { milliseconds in Double(milliseconds) / 1000 }
/// ```
///
/// Migrations work on the domain that the key's writes go to (its suite, or the application domain) in the
/// current user's file, and are written like any other change.
extension Defaults {
    /// What a migration did.
    public enum MigrationOutcome: Sendable, Hashable {
        /// The value was converted and written.
        case migrated
        /// Nothing to do: no old value, or the value already has the new form.
        case nothingToDo
        /// (Renames only) the new key already had a value: it was kept, and the old key removed.
        case keptExistingValue
    }

    /// Renames a stored key, converting its value.
    ///
    /// If the old key has a value and the new one has none, the converted value is stored under the new key;
    /// the old key is removed in any case.
    ///
    /// - Throws: ``DefaultsError/Code/migrationFailed`` when the old value cannot be read as
    ///   `Old` or `transform` throws (nothing is changed), or the errors of a write.
    @discardableResult
    public func migrateKey<Old: DefaultsSerializable, New>(
        from oldName: String, as oldType: Old.Type, to key: DefaultsKey<New>, transform: (Old) throws -> New
    ) throws(DefaultsError) -> MigrationOutcome {
        try rename(oldName, to: key) { (target, stored, domain) throws(DefaultsError) in
            let converted: New
            do {
                converted = try transform(try Old(propertyList: stored))
            } catch {
                throw .migrationFailed(key: oldName, domain: domain, reason: "\(error)")
            }
            try target.write(converted, for: key)
        }
    }

    /// Renames a stored key, keeping its value.
    @discardableResult
    public func migrateKey<Value>(from oldName: String, to key: DefaultsKey<Value>) throws(DefaultsError)
        -> MigrationOutcome
    {
        try rename(oldName, to: key) { (target, stored, _) throws(DefaultsError) in
            try target.trySet(stored, forKey: key.name)
        }
    }

    /// What both renames share: find the old value in the key's domain, keep an existing new value, write
    /// the new key with `store` (given the target store, the old value and the domain's name) only when
    /// it has none, and remove the old key.
    private func rename<Value>(
        _ oldName: String, to key: DefaultsKey<Value>,
        store: (Defaults, PropertyList, String) throws(DefaultsError) -> Void
    ) throws(DefaultsError) -> MigrationOutcome {
        let target = self.store(for: key)
        let domain = target.configuration.applicationDomain
        let contents = target.persistentDomainValues(forName: domain) ?? [:]
        guard let stored = contents[oldName] else { return .nothingToDo }
        let hasNewValue = contents[key.name] != nil
        if !hasNewValue { try store(target, stored, domain) }
        try target.trySet(nil, forKey: oldName)
        return hasNewValue ? .keptExistingValue : .migrated
    }

    /// Changes the stored type of a key: a stored value that is not already in the form the key's type
    /// writes, and reads as `Old`, is converted with `transform` and written back.
    ///
    /// - Throws: ``DefaultsError/Code/migrationFailed`` when the value reads as neither type
    ///   or `transform` throws (nothing is changed), or the errors of a write.
    @discardableResult
    public func migrate<Old: DefaultsSerializable, New>(
        _ key: DefaultsKey<New>, from oldType: Old.Type, transform: (Old) throws -> New
    ) throws(DefaultsError) -> MigrationOutcome {
        let target = store(for: key)
        let domain = target.configuration.applicationDomain
        guard let stored = target.persistentDomainValues(forName: domain)?[key.name] else { return .nothingToDo }
        // "Already in the new form" means: stored exactly as the new type writes itself. Reading alone is not
        // enough, since reads are lenient (an integer reads as a Double), and a second run would convert a
        // converted value again.
        if let current = try? New(propertyList: stored), (try? current.propertyList()) == stored { return .nothingToDo }
        let converted: New
        do {
            converted = try transform(try Old(propertyList: stored))
        } catch {
            throw .migrationFailed(key: key.name, domain: domain, reason: "\(error)")
        }
        try target.write(converted, for: key)
        return .migrated
    }
}
