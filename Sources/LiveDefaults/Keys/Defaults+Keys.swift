import Logging

/// Typed access: `defaults[.rateLimit]`.
extension Defaults {
    /// The key's value: the effective stored value read as `Value`, else the key's default.
    ///
    /// A stored value the key refuses — of the wrong shape (a string where a number belongs, a hand-edited
    /// structure that no longer matches), out of the key's range, not one of its choices — is never
    /// returned: the read returns the last valid value this store saw for the key (else the default), and
    /// the value is reported once (``DefaultsError/Code/invalidValue``: logged at `.notice`,
    /// ``lastError``, the error handler); the next valid value reads normally. Assigning stores the value
    /// in the key's suite or the application domain (nil removes an optional key); a forced key, a value
    /// with no property-list form or one the key refuses is not stored and is reported —
    /// ``trySet(_:for:)`` throws instead.
    @inlinable
    public subscript<Value>(key: DefaultsKey<Value>) -> Value {
        // Inlinable, so that a read specialises for `Value` in the caller: for a scalar, a few loads from
        // the key's read slot and a direct conversion, without the store's lock.
        get {
            // Not `let store = key.suite == nil ? self : …`: holding the store in a local retains it, and a
            // store is weakly referenced (by its files' observers), so that retain takes the slow path and
            // cost more than the whole read.
            key.suite == nil ? read(key) : store(for: key).read(key)
        }
        set {
            // As in `get`: no local holding the store when the key has no suite (its retain takes the slow path).
            if key.suite == nil {
                report { () throws(DefaultsError) in try write(newValue, for: key) }
            } else {
                let target = store(for: key)
                target.report { () throws(DefaultsError) in try target.write(newValue, for: key) }
            }
        }
    }

    /// A typed read from this store (the key's suite already resolved).
    @inlinable
    func read<Value>(_ key: DefaultsKey<Value>) -> Value {
        let stored: PropertyList
        // A scalar or a missing key: from the key's slot, without the lock (``ScalarReadSlots``).
        // Nil also while a change of the view is under way (``ViewGate``): then filled under the lock.
        switch viewGate.read({ readSlots.read(key.slot) }) ?? nil {
        case (.missing, _)?:
            return key.defaultValue
        case (.other, _)?:
            // The key accepted the value when the slot was written; one that replaced it since, before the
            // slot says so, is checked here (strings and collections only: scalars never take this path).
            guard let value = value(forKey: key.name) else { return key.defaultValue }
            guard key.violation(value) == nil else { return typedValue(key) }
            stored = value
        case (.held, _)?:
            return typedValue(key)
        case (let tag, let payload)?:
            stored = ScalarReadSlots.decode(tag, payload)
        case nil:
            guard let value = fillReadSlot(key) else { return key.defaultValue }
            stored = value
        }
        if let value = exactScalar(stored, as: Value.self) { return value }
        if let value = try? Value(propertyList: stored) { return value }
        return decode(stored, for: key)
    }

    /// Stores a typed value, or removes the key when the value is nil.
    ///
    /// - Throws: ``DefaultsError/Code/forcedKey``, ``DefaultsError/Code/notAPropertyList``,
    ///   ``DefaultsError/Code/invalidValue`` (out of the key's range, say); nothing is stored then.
    public func trySet<Value>(_ value: Value, for key: DefaultsKey<Value>) throws(DefaultsError) {
        if key.suite == nil { try write(value, for: key) } else { try store(for: key).write(value, for: key) }
    }

    /// Stores a value given in its property-list form through a key of any type, with the checks of a typed
    /// write (the key's type must read it, within its range, one of its choices); nil removes the key. For
    /// code that handles keys without knowing their `Value` — a settings form generated from the keys'
    /// schemas, an importer:
    ///
    /// ```swift
    /// let keys: [AnyDefaultsKey] = [.rateLimit, .theme]
    /// try defaults.trySet(propertyList: .integer(250), for: keys[0])
    /// ```
    ///
    /// - Throws: ``DefaultsError/Code/invalidValue`` for a value the key refuses,
    ///   ``DefaultsError/Code/forcedKey``; nothing is stored then.
    public func trySet(propertyList value: PropertyList?, for key: AnyDefaultsKey) throws(DefaultsError) {
        try store(forSuite: key.suite).write(stored: value, for: key)
    }

    /// Removes the stored values of one or more keys (each from its own suite): they read a lower domain's
    /// value or their defaults again.
    public func reset(_ keys: AnyDefaultsKey...) {
        for key in keys { store(forSuite: key.suite).removeObject(forKey: key.name) }
    }

    /// Whether no domain in the search list has a value for the key (its default applies).
    public func isDefault<Value>(_ key: DefaultsKey<Value>) -> Bool {
        store(for: key).value(forKey: key.name) == nil
    }

    // MARK: Internals

    /// What a typed read of the key returns, filling the key's read slot on the way (a slot is filled once;
    /// the merged view's changes keep it current from then on): the effective value when the key accepts
    /// it, else the last valid value (none at first); a refused value is reported once.
    @usableFromInline
    func fillReadSlot(_ key: DefaultsKeys) -> PropertyList? {
        fillReadSlot(slot: key.slot, name: key.name, validate: { [key] in key.violation($0) })
    }

    /// A typed read of a key whose slot holds back a refused value, under the lock.
    @usableFromInline
    func typedValue<Value>(_ key: DefaultsKey<Value>) -> Value {
        guard let stored = typedStoredValue(slot: key.slot, name: key.name) else { return key.defaultValue }
        return (try? Value(propertyList: stored)) ?? key.defaultValue
    }

    /// Reports a stored value a typed key refuses, unless it was reported before.
    func reportRefusal(_ violation: SchemaViolation) {
        report(firstReports(of: [violation]))
    }

    /// Reports stored values that typed keys refuse (no lock held): logged at `.notice`, ``lastError``, the
    /// error handler.
    func report(_ refusals: [SchemaViolation]) {
        for violation in refusals {
            record(.invalidValue(violation, domain: domainProviding(violation.key) ?? configuration.applicationDomain))
        }
    }

    /// Converts a stored value, falling back to the default (logged once per stored value) when it has the
    /// wrong shape.
    @usableFromInline
    func decode<Value>(_ stored: PropertyList, for key: DefaultsKey<Value>) -> Value {
        do {
            return try Value(propertyList: stored)
        } catch {
            if isFirstUnreadableReport(of: stored, forKey: key.name) {
                let domain = domainProviding(key.name) ?? "?"
                // The caller gets the default and carries on; nothing for the API to report: a notice.
                // A secret's value is never logged: neither the stored one (the error names it) nor the default.
                if key.schema.isSecret {
                    configuration.logger.notice(
                        "domain \(domain), key \"\(key.name)\": the stored value (secret) cannot be read as \(Value.self); using the default"
                    )
                } else {
                    configuration.logger.notice(
                        "domain \(domain), key \"\(key.name)\": the stored value cannot be read as \(Value.self) (\(error)); using the default \(key.defaultValue)"
                    )
                }
            }
            return key.defaultValue
        }
    }

    @usableFromInline
    func write<Value>(_ value: Value, for key: DefaultsKey<Value>) throws(DefaultsError) {
        let stored: PropertyList?
        do {
            stored = try value.propertyList()
        } catch {
            throw .notAPropertyList(key: key.name, .notAPropertyListValue("\(Value.self) (\(error))"))
        }
        try write(stored: stored, for: key)
    }

    /// A typed write of a value in its stored form, to this store (the key's suite already resolved): refused
    /// when the key refuses it, else stored, and the key's guard started.
    func write(stored: PropertyList?, for key: AnyDefaultsKey) throws(DefaultsError) {
        if let stored, let violation = key.violation(stored) {
            throw .invalidValue(violation, domain: configuration.applicationDomain)
        }
        try trySet(stored, forKey: key.name)
        guardKey(key)
    }

    /// Makes the key's slot guard follow the key from now on (once; later a few loads), so that a value
    /// another writer stores against it later reads as the last valid one this store saw. Not generic: a
    /// typed read from unspecialised code looks up `Value`'s metadata, which cost more than the rest of a
    /// typed write.
    func guardKey(_ key: DefaultsKeys) {
        if readSlots.read(key.slot) == nil { _ = fillReadSlot(key) }
    }

    /// The store that holds a key: this one, or the store of the key's suite (same files, same arguments).
    @usableFromInline
    func store<Value>(for key: DefaultsKey<Value>) -> Defaults {
        store(forSuite: key.suite)
    }
}
