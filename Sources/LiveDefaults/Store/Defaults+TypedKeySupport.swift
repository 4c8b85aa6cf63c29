import Logging
import Synchronization

/// What typed keys (Keys/) need from the store, and all they reach of it: the store's lock and view are taken
/// for them here only, and the store's state for them (``Defaults/TypedKeyState``) is changed here and in the
/// store's own reporting only. Keys/ names neither `state` nor `typedKeys` (Scripts/check-architecture).
extension Defaults {
    /// The effective value a typed read of the key `name` with read slot `slot` returns, filling the slot on
    /// the way (a slot is filled once; the view's changes keep it current from then on): the effective value
    /// when `validate` accepts it, else the last valid value (none at first). A refused value is reported once.
    @usableFromInline
    func fillReadSlot(
        slot: Int, name: String, validate: @escaping @Sendable (PropertyList) -> SchemaViolation?
    ) -> PropertyList? {
        let (value, refusals) = state.withLock { state in
            let filled = state.view.fillSlot(slot, forKey: name, validate: validate)
            return (filled.value, filled.refusals)
        }
        report(firstReports(of: refusals))
        return value
    }

    /// The value a typed read of a key whose slot holds back a refused value returns, read under the lock.
    @usableFromInline
    func typedStoredValue(slot: Int, name: String) -> PropertyList? {
        state.withLock { $0.view.typedValue(slot, forKey: name) }
    }

    /// Whether a stored value that a typed key cannot read is met for the first time (it is then logged).
    func isFirstUnreadableReport(of stored: PropertyList, forKey name: String) -> Bool {
        typedKeys.withLock { $0.isFirstReport(of: stored, forKey: name) }
    }

    /// Takes the keys a published schema declares for `domain` (``publishSchema(for:)``): from now on a key of
    /// the domain's files outside them is reported, once, with the declared key `nearest` names for it. The
    /// keys the files hold already are looked at now.
    func declare(keys: Set<String>, ofDomain domain: String, nearest: @escaping @Sendable (String) -> String?) {
        typedKeys.withLock { $0.declaredKeys[domain] = DeclaredKeys(names: keys, nearest: nearest) }
        publishedSchema.store(true, ordering: .releasing)
        reportUndeclaredKeys((persistentDomainValues(forName: domain) ?? [:]).keys, domain: domain)
    }

    /// Reports, once each, the keys among `keys` (present in one of `domain`'s files) that the domain's declared
    /// keys leave out, each with the declared key it most likely meant.
    func reportUndeclaredKeys(_ keys: some Sequence<String>, domain: String) {
        let (found, nearest): ([String], (@Sendable (String) -> String?)?) = typedKeys.withLock { typed in
            guard let names = typed.declaredKeys[domain]?.names else { return ([], nil) }
            var found: [String] = []
            // The reported set is changed where it is (through the dictionary's subscript, with no other reference
            // to it held): a copy taken out and put back would copy the whole set, under the lock, at every
            // change of the domain.
            for key in keys where !names.contains(key) {
                if typed.declaredKeys[domain]?.reported.insert(key).inserted == true { found.append(key) }
            }
            return (found.sorted(), typed.declaredKeys[domain]?.nearest)
        }
        guard let nearest else { return }
        for key in found { record(.undeclaredKey(key, domain: domain, suggestion: nearest(key)), deferred: true) }
    }

    /// The store of a typed key's suite (this one for none or the application domain's own): made on first
    /// use with this store's configuration, and kept; the first made is published when threads race.
    func store(forSuite suite: String?) -> Defaults {
        guard let suite, suite != configuration.applicationDomain else { return self }
        var suiteConfiguration = configuration
        suiteConfiguration.applicationDomain = suite
        do {
            return try typedKeys.published(at: \.suiteStores[suite]) { () throws(DefaultsError) in
                try Defaults(configuration: suiteConfiguration, fileOwner: fileOwner)
            }
        } catch {
            // An invalid suite name: the key reads its default and writes are refused by this store.
            configuration.logger.notice("typed keys of suite \(suite): \(error); they read their defaults")
            return self
        }
    }
}
