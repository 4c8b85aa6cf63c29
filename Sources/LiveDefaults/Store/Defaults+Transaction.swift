/// Transactions: several changes of one domain, committed as one version (``DefaultsTransaction``).
extension Defaults {
    /// How many times a transaction's closure runs before ``transaction(inDomain:layer:reason:_:)`` gives up on a domain
    /// that other writers keep changing under it.
    static let transactionAttempts = 100

    /// Runs `body` and commits its changes to one domain as one change: this process's readers, snapshots
    /// (``updates(of:emitCurrentValue:)-(AnyDefaultsKey...,_)``) and observers see all of them or none (one
    /// ``didChangeNotification``; the ``KeyChange/batch`` of a ``changes()`` stream tells which changes came
    /// together), and other processes see one new version of the domain's file.
    ///
    /// ```swift
    /// try defaults.transaction { tx in
    ///     tx[.upstreamHost] = "db2"
    ///     tx[.upstreamPort] = 5433
    /// }
    /// let count = try defaults.transaction { tx in
    ///     tx[.counter] += 1          // from any number of processes at once: no increment is lost
    ///     return tx[.counter]
    /// }
    /// ```
    ///
    /// The closure runs with no lock held, on the domain's current version (read from disk when it changed).
    /// The commit takes the domain's file lock, reads the file again, and writes the transaction's changes
    /// only if no key the closure read from the domain has changed meanwhile (optimistic concurrency); else
    /// the closure runs again on the new version, up to 100 times. So a closure may run more than once: keep
    /// it free of other side effects. When `transaction` returns, the new version is on disk (written as
    /// every write is: temporary file, `fdatasync`, `rename`), together with this process's earlier unwritten
    /// edits of the domain.
    ///
    /// One domain per transaction, in one layer: its current-user file unless `layer` says otherwise. Typed
    /// keys must belong to that domain (a key of another suite makes the transaction throw).
    ///
    /// - Parameters:
    ///   - domain: The persistent domain to change; the store's application domain (or suite) when nil.
    ///   - layer: The domain's file to change: ``PreferenceLayer/currentUser`` unless given (the per-host
    ///     `ByHost` file, an any-user file); keys an administrator forces are refused unless it is a managed
    ///     layer itself.
    ///   - reason: Why the change is made, recorded with it in the domain's change log (``LoggedChange/reason``,
    ///     `defaults log`): one line of at most 1,000 bytes (a control character becomes a space, a longer
    ///     reason is cut). It is the reason of the whole version written, this process's earlier unwritten
    ///     edits of the domain included.
    ///   - body: Reads and changes values through the transaction; what it returns, `transaction` returns.
    /// - Throws: what `body` throws (nothing is committed); ``DefaultsError`` when nothing was committed:
    ///   ``DefaultsError/Code/invalidValue`` (a typed key refuses a value; the error names the key),
    ///   ``DefaultsError/Code/notAPropertyList``, ``DefaultsError/Code/forcedKey``,
    ///   ``DefaultsError/Code/transactionSpansDomains``, ``DefaultsError/Code/transactionConflict`` (the domain
    ///   kept changing), ``DefaultsError/Code/invalidDomainName``, or a failed write
    ///   (``DefaultsError/Code/writeFailed``, ``DefaultsError/Code/unrepresentableValue``). The one untyped
    ///   `throws` of the API, for that reason: `body`'s own errors pass through unchanged beside
    ///   ``DefaultsError``, and a typed `throws` names one error type.
    @discardableResult
    public func transaction<Result>(
        inDomain domain: String? = nil, layer: PreferenceLayer = .currentUser, reason: String? = nil,
        _ body: (DefaultsTransaction) throws -> Result
    ) throws -> Result {
        let domain = domainOrOwn(domain)
        if domain != configuration.applicationDomain { try DomainName.validate(domain) }
        let file = file(forDomain: domain, layer: layer)
        for _ in 0..<Self.transactionAttempts {
            // The latest version on disk (one `stat` when nothing changed). A version no LiveDefaults writer made
            // is recorded in the change log by the commit, which records the version it writes over.
            file.reload(recordingExternal: false)
            let transaction = DefaultsTransaction(
                defaults: self, domain: domain, file: file, base: file.contentsToWriteOver)
            let result = try body(transaction)
            // The base is let go before the commit, which then changes the file's contents in place.
            let (writes, reads, failure) = transaction.finish()
            if let failure { throw failure }
            if writes.isEmpty { return result }
            if !layer.isManaged, let forced = firstForcedKey(among: writes.keys, inDomain: domain) {
                throw DefaultsError.forcedKey(key: forced, domain: domain)
            }
            // A failed write reaches the store's observers of the file (lastError, the error handler) as well.
            let commit = { try file.commit(transaction: writes, expecting: reads) }
            if try reason.map({ try ChangeLogAttribution.withReason($0, commit) }) ?? commit() { return result }
        }
        throw DefaultsError.transactionConflict(domain: domain, attempts: Self.transactionAttempts)
    }

    /// The first of `keys` that an administrator forces in `domain` (one lock for all of them when the store
    /// has the domain attached).
    private func firstForcedKey(among keys: some Collection<String>, inDomain domain: String) -> String? {
        let attached: String?? = state.withLock { state in
            state.search.persistent[domain].map { attached in keys.first { attached.forces($0) } }
        }
        if let attached { return attached }
        return keys.first { objectIsForced(forKey: $0, inDomain: domain) }
    }

    /// The value a key would have in this store if `file` held `fileValue` for it (see
    /// ``resolve(_:_:replacing:with:)``).
    func resolve(_ key: String, replacing file: DomainFile, with fileValue: PropertyList?) -> PropertyList? {
        state.withLock { resolve(key, $0, replacing: file, with: fileValue) }
    }
}
