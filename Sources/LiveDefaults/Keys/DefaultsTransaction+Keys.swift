/// Typed keys in a transaction: `tx[.rateLimit] = 200`, `tx[.counter] += 1`.
extension DefaultsTransaction {
    /// The key's value as the transaction sees it (its own write, else the domain's current version; see
    /// ``DefaultsTransaction``), read as `Value`; the key's default when no domain has it. Assigning stores the
    /// value when the transaction commits (nil removes an optional key).
    ///
    /// A value the key refuses (of the wrong shape, out of range, not one of its choices) reads as the store's
    /// typed read does (the last valid value it saw, else the default); assigning one makes the transaction
    /// throw ``DefaultsError/Code/invalidValue``, naming the key, and commit nothing. A key of another suite
    /// (or, in a transaction of another domain, a key without a suite) makes it throw
    /// ``DefaultsError/Code/transactionSpansDomains``.
    public subscript<Value>(key: DefaultsKey<Value>) -> Value {
        get {
            guard belongs(key) else { return key.defaultValue }
            guard let stored = value(forKey: key.name) else { return key.defaultValue }
            if key.violation(stored) != nil { return defaults.read(key) }
            if let value = exactScalar(stored, as: Value.self) { return value }
            return defaults.decode(stored, for: key)
        }
        set {
            guard belongs(key) else { return }
            let stored: PropertyList?
            do {
                stored = try newValue.propertyList()
            } catch {
                return fail(.notAPropertyList(key: key.name, .notAPropertyListValue("\(Value.self) (\(error))")))
            }
            if let stored, let violation = key.violation(stored) {
                return fail(.invalidValue(violation, domain: domain))
            }
            set(stored, forKey: key.name)
        }
    }

    /// Whether the key lives in the transaction's domain; records why not otherwise.
    private func belongs(_ key: DefaultsKeys) -> Bool {
        let owner = key.suite ?? defaults.configuration.applicationDomain
        guard owner == domain else {
            fail(.transactionSpansDomains(key: key.name, suite: owner, domain: domain))
            return false
        }
        return true
    }
}
