import Foundation

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
        try transaction(inDomain: domain, layer: layer, reason: reason, lasting: nil, body)
    }

    /// A temporary change: ``transaction(inDomain:layer:reason:_:)``, undone by itself once `duration` has
    /// passed — each key it changed returns to the value it had before (a key it added is removed again) — in
    /// the domain's file, so that every reader sees it, Foundation's included.
    ///
    /// ```swift
    /// try defaults.transaction(for: .seconds(30 * 60), reason: "incident 4521") { tx in
    ///     tx[.logLevel] = "debug"
    /// }
    /// ```
    ///
    /// A key changed again by anyone before the expiry keeps that newer value; the change's other keys are still
    /// undone. The revert is written by every LiveDefaults process that has the domain open, at the expiry (on
    /// its clock, within about a second while any of them watches the domain; one writes it, the others find it
    /// done), or, when none has, before the first read of the next process that opens the domain, the `defaults`
    /// command included. It is logged as a change of its own (reason `temporary change expired: <reason>`).
    ///
    /// What is still to be undone lives beside the domain's file (`.<domain>.plist.reverts`, Docs/OnDisk.md),
    /// written before the change's version and dropped after its revert's: a crash, a power loss or a failed
    /// write between the two never loses the revert nor applies it twice. ``pendingReverts(inDomain:layer:)``
    /// lists them.
    ///
    /// - Parameters:
    ///   - duration: How long the change lasts; one of zero or less is undone at the next look.
    ///   - domain: The persistent domain to change; the store's application domain (or suite) when nil.
    ///   - layer: The domain's file to change: ``PreferenceLayer/currentUser`` unless given.
    ///   - reason: Why the change is made, recorded with it in the change log and with its pending revert; the
    ///     revert is logged as `temporary change expired: <reason>`.
    ///   - body: Reads and changes values through the transaction; what it returns, `transaction` returns.
    /// - Throws: what ``transaction(inDomain:layer:reason:_:)`` throws; ``DefaultsError/Code/writeFailed`` too
    ///   when the pending reverts cannot be written (nothing is changed then).
    @discardableResult
    public func transaction<Result>(
        for duration: Duration, inDomain domain: String? = nil, layer: PreferenceLayer = .currentUser,
        reason: String? = nil, _ body: (DefaultsTransaction) throws -> Result
    ) throws -> Result {
        try transaction(inDomain: domain, layer: layer, reason: reason, lasting: duration, body)
    }

    /// The temporary changes of a domain's file not yet undone, in the order they were made.
    ///
    /// - Throws: ``DefaultsError/Code/invalidDomainName``; ``DefaultsError/Code/readFailed`` when the file of
    ///   pending reverts cannot be read (it is then left as it is, and no revert of it is applied).
    public func pendingReverts(inDomain domain: String? = nil, layer: PreferenceLayer = .currentUser)
        throws(DefaultsError) -> [PendingRevert]
    {
        let domain = domainOrOwn(domain)
        if domain != configuration.applicationDomain { try DomainName.validate(domain) }
        let file = file(forDomain: domain, layer: layer)
        switch file.pendingReverts {
        case .success(let reverts): return reverts.entries.map(PendingRevert.init)
        case .failure(let unreadable):
            throw .readFailed(
                path: PendingReverts.path(forDomainFile: file.path), errno: 0, message: unreadable.reason)
        }
    }

    private func transaction<Result>(
        inDomain domain: String?, layer: PreferenceLayer, reason: String?, lasting duration: Duration?,
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
            let temporary = duration.map { duration in
                TemporaryChange(
                    expiry: file.clock.now.addingTimeInterval(duration.timeInterval),
                    reason: reason ?? ChangeLogAttribution.currentReason,
                    keys: Set(writes.keys))
            }
            let commit = { try file.commit(transaction: writes, expecting: reads, temporary: temporary) }
            if try reason.map({ try ChangeLogAttribution.withReason($0, commit) }) ?? commit() {
                // Its revert scheduled (and counted) as the pending reverts on disk now say.
                if temporary != nil { file.scheduleReverts() }
                return result
            }
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
