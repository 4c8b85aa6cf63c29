import Foundation

/// Writing this process's edits: the commit that follows the protocol of Docs/Reliability.md through
/// ``DomainWrite``, judged first when validators judge the file, and the adoption of the version written.
extension DomainFile {
    // MARK: Writing

    /// Writes this process's pending edits to disk, merged with whatever other processes wrote meanwhile.
    ///
    /// - Throws: ``DefaultsError/Code/writeFailed``; the edits then stay pending.
    func commit() throws(DefaultsError) {
        _ = try commit(nil)
    }

    /// A transaction's part of a commit: its writes, and the values its reads saw (nil: the key was absent).
    struct TransactionEdits {
        var writes: DomainEdits
        var expected: [String: PropertyList?]
        /// Set for a temporary transaction: when and why it is undone.
        var temporary: TemporaryChange?
    }

    /// Writes this process's pending edits followed by a transaction's `writes` as one version of the file, if
    /// every key in `expected` still has the value given there in the file as it is now (re-read under the
    /// file lock) with this process's pending edits on top.
    ///
    /// The writes reach this process's observers as one `.local` event, after the keys other processes changed
    /// meanwhile (one `.external` event), so that readers only ever see versions someone wrote.
    ///
    /// - Returns: false, having written nothing (this process's earlier edits stay pending), when a key read
    ///   was changed since: the caller runs the transaction again on the new version.
    /// - Throws: what ``commit()`` throws; the transaction's writes are then dropped, the earlier edits kept.
    ///
    /// With `temporary`, the version's entry in the pending reverts is written before it (``PendingReverts``).
    func commit(
        transaction writes: [String: PropertyList?], expecting expected: [String: PropertyList?],
        temporary: TemporaryChange? = nil
    ) throws(DefaultsError) -> Bool {
        loadIfNeeded()
        return try commit(
            TransactionEdits(writes: DomainEdits(keys: writes), expected: expected, temporary: temporary))
    }

    /// How many times a commit of a judged file judges what it would write before it gives up on a file that
    /// changes under it each time (or edits that keep coming while it judges).
    static let judgedCommitAttempts = 20

    /// ``commit()``, with a transaction's writes and check when given one; false when its check failed.
    ///
    /// A judged file's write is judged first, with no lock held: the edits on top of the version on disk as this
    /// process knows it. The write then goes on only if, on the file as it is under the file lock, it writes
    /// exactly what was judged; else the file is read again (and judged, as another process's version is) and
    /// the edits are judged anew. Refused, a transaction throws having written nothing (the earlier edits stay
    /// pending); a plain commit drops its edits, which readers of this process then no longer see, and throws.
    private func commit(_ transaction: TransactionEdits?) throws(DefaultsError) -> Bool {
        guard state.isJudged else { return try commit(transaction, judged: nil) }
        for _ in 0..<Self.judgedCommitAttempts {
            let (candidate, judges) = candidate { pending in
                if let transaction { pending = pending.followed(by: transaction.writes) }
            }
            if let reason = judges.verdict(on: candidate) {
                let error = refusedChange(reason)
                guard transaction == nil else { throw error }
                dropPendingEdits(refused: error)
                throw error
            }
            if try commit(transaction, judged: candidate) { return true }
            if transaction != nil { return false }
            // Written over by another process meanwhile: its version is judged, then the edits on top of it.
            reload(recordingExternal: false)
        }
        throw .transactionConflict(domain: DefaultsMetrics.domain(ofFile: path), attempts: Self.judgedCommitAttempts)
    }

    /// Drops this process's pending edits (a validator refused them on top of the file as it now is): readers
    /// see the file's contents again, and the store's observers hear of the refusal.
    private func dropPendingEdits(refused error: DefaultsError) {
        let deltas: [KeyDelta] = diskLock.withLock {
            let deltas = state.change { state in
                let before = state.contents
                state.pending = DomainEdits()
                state.scheduled = false
                state.contents = Self.overlay(state.disk, state.inFlight, state.pending)
                return KeyDelta.between(before, state.contents)
            }
            deliveries.begin()
            return deltas
        }
        deliver(deltas.isEmpty ? [.failed(error)] : [.changed(deltas, .ofThisProcess), .failed(error)])
    }

    /// The commit proper; with `judged`, the contents the judges accepted, which the write must be exactly (else
    /// it writes nothing and answers false).
    private func commit(_ transaction: TransactionEdits?, judged: [String: PropertyList]?) throws(DefaultsError)
        -> Bool
    {
        // As in reload(), observers are told after the disk lock is released.
        var written: (keys: Int, nanoseconds: Int64)?
        let (result, events): (Result<Bool, DefaultsError>, [Event]) = diskLock.withLock {
            let (pending, edits, held, loggedVersion) = state.change { state in
                let pending = state.pending
                let edits = transaction.map { pending.followed(by: $0.writes) } ?? pending
                state.pending = DomainEdits()
                state.scheduled = false
                state.inFlight = edits.isEmpty ? nil : edits
                let held = CurrentVersion.Held(
                    stamp: state.stamp, contents: state.disk, servedDigest: state.servedDigest, format: state.format,
                    knownCorrupt: state.corruptStamp, refused: state.refused?.version?.stamp)
                return (pending, edits, held, state.loggedVersion)
            }
            if edits.isEmpty { return (.success(true), []) }
            // The transaction saw the file with this process's edits on top: so is each key checked.
            let transactionCheck = transaction.map { transaction in
                { (base: [String: PropertyList]) -> Bool in
                    transaction.expected.allSatisfy { key, seen in pending.value(forKey: key, over: base[key]) == seen }
                }
            }
            let check: (([String: PropertyList]) -> Bool)? =
                if let judged {
                    { base in (transactionCheck?(base) ?? true) && edits.applied(to: base) == judged }
                } else {
                    transactionCheck
                }
            let start = ContinuousClock.now
            let outcome = writeSettled(
                DomainWrite(
                    path: path, lockPath: lockPath, fileSystem: fileSystem, owner: owner, clock: clock, edits: edits,
                    held: held, check: check, loggedVersion: loggedVersion, sweeps: context.sweeps,
                    logsChanges: context.changeLogIsEnabled, identity: context.identity,
                    processes: context.processes,
                    intentAfterRename: context.hasReintroduced(.logIntentAfterRename),
                    temporary: transaction?.temporary.map { temporary in
                        var temporary = temporary
                        temporary.earlier = pending
                        return temporary
                    }))
            if case .written = outcome {
                written = (edits.keyCount, Int64((ContinuousClock.now - start).clampedNanoseconds))
            }
            switch outcome {
            case .conflict:
                state.change { state in
                    state.pending = pending.followed(by: state.pending)
                    state.inFlight = nil
                }
                if !pending.isEmpty { context.writer.schedule(self) }
                return (.success(false), [])
            case .written(let version):
                let (external, local) = state.change { state in
                    Self.adopt(version, into: &state, transactionKeys: transaction?.writes.keys.keys)
                }
                var events: [Event] = []
                if let kept = version.keptAside { events.append(.failed(kept)) }
                if !external.isEmpty { events.append(.changed(external, .external)) }
                if !local.isEmpty { events.append(.changed(local, .ofThisProcess)) }
                if !events.isEmpty { deliveries.begin() }
                return (.success(true), events)
            case .failed(let error):
                state.change { state in
                    // A transaction commits nothing when its write fails: only the earlier edits stay pending.
                    state.pending = (transaction == nil ? state.inFlight ?? DomainEdits() : pending)
                        .followed(by: state.pending)
                    state.inFlight = nil
                }
                if transaction != nil && !pending.isEmpty { context.writer.schedule(self) }
                deliveries.begin()
                return (.failure(error), [.failed(error)])
            }
        }
        deliver(events)
        if let written {
            context.announcer.changed(self)
            // After the locks: the metrics backend's factory is the program's code.
            let origin = ChangeOrigin.ofThisProcess.rawValue
            let path = path
            DefaultsMetrics.report {
                let domain = DefaultsMetrics.domain(ofFile: path)
                DefaultsMetrics.wrote(domain: domain, nanoseconds: written.nanoseconds)
                DefaultsMetrics.changesApplied(written.keys, domain: domain, origin: origin)
                // Not reportMetrics: a commit's failure event is a file kept aside, not a failed reload.
                for case .changed(let deltas, .external) in events {
                    DefaultsMetrics.changesApplied(deltas.count, domain: domain, origin: ChangeOrigin.external.rawValue)
                }
            }
        }
        return try result.get()
    }

    /// Takes a written version as the one `disk` holds, and works out what readers of `contents` see change:
    /// keys another process changed (external) and, for a transaction, the keys it wrote (local).
    private static func adopt(
        _ version: WrittenVersion, into state: inout State, transactionKeys: Dictionary<String, PropertyList?>.Keys?
    ) -> (external: [KeyDelta], local: [KeyDelta]) {
        state.disk = version.contents
        // Written by this process: the next version read is parsed whole (no index).
        state.adopt(version.version, format: version.format, index: nil)
        state.inFlight = nil
        state.corruptStamp = nil
        switch version.logged {
        case .unchanged: break
        case .logged(let logged): state.loggedVersion = logged
        case .failed: state.loggedVersion = nil
        }
        if version.reread {
            let before = state.contents
            state.contents = overlay(state.disk, nil, state.pending)
            let deltas = KeyDelta.between(before, state.contents)
            guard let transactionKeys else { return (deltas, []) }
            let written = Set(transactionKeys)
            return (deltas.filter { !written.contains($0.key) }, deltas.filter { written.contains($0.key) })
        }
        // The file held what this process last knew: the new disk contents are exactly the cached contents
        // without the newer pending edits, so nothing changed for readers but a transaction's keys, which are
        // changed in place (recomputing the cache would share the disk dictionary and make the next `set` copy
        // the whole domain).
        guard let transactionKeys else { return ([], []) }
        var contents = state.contents
        state.contents = [:]
        var local: [KeyDelta] = []
        for key in transactionKeys {
            let new = state.pending.value(forKey: key, over: state.disk[key])
            let old = new.map { contents.updateValue($0, forKey: key) } ?? contents.removeValue(forKey: key)
            if old != new { local.append(KeyDelta(key: key, old: old, new: new)) }
        }
        state.contents = contents
        return ([], local)
    }

    /// A write of `edits` (``DomainWrite``), attempted again after a pause while the file reads as unreadable
    /// and may be mid-write. The pause is taken with the file lock released: sleeping under it would stall
    /// every other writer of the domain, in every process.
    private func writeSettled(_ write: DomainWrite) -> WriteOutcome {
        var attempt = 1
        while true {
            switch write.attempt(attempt) {
            case .done(let outcome): return outcome
            case .unsettled:
                clock.pause(for: VersionReading.settlePause)
                attempt += 1
            }
        }
    }
}
