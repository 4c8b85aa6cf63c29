import Foundation

/// This process's edits of a domain file in memory (`set`, `replace`), judged first when validators judge the
/// file, and the judges themselves.
extension DomainFile {
    // MARK: Editing

    /// Sets or removes one key in memory at once; the background writer persists it.
    ///
    /// - Throws: ``DefaultsError/Code/versionRefused`` when a validator refuses the domain with the change
    ///   (nothing changes).
    func set(_ value: PropertyList?, forKey key: String) throws(DefaultsError) {
        loadIfNeeded()
        if state.isJudged {
            try judge { edits in edits.keys[key] = .some(value) }
        }
        let reason = ChangeLogAttribution.currentReason
        // The observers to tell are taken under the same lock as the edit (one lock per `set`, not two).
        let (delta, mustSchedule, observers): (KeyDelta?, Bool, IntrusiveList<ObserverEntry>) = state.change {
            state in
            let mustSchedule = !state.scheduled
            state.scheduled = true
            let old =
                value.map { state.contents.updateValue($0, forKey: key) } ?? state.contents.removeValue(forKey: key)
            state.pending.keys[key] = .some(value)
            if let reason { state.pending.reason = reason }
            if old == value { return (nil, mustSchedule, IntrusiveList()) }
            return (KeyDelta(key: key, old: old, new: value), mustSchedule, state.observers)
        }
        if mustSchedule { context.writer.schedule(self) }
        if let delta {
            let event = Event.changedKey(delta, .ofThisProcess)
            for entry in observers { entry.observer(event) }
        }
    }

    /// Replaces the whole domain in memory at once; the background writer persists it.
    ///
    /// - Throws: ``DefaultsError/Code/versionRefused`` when a validator refuses the new contents.
    func replace(with contents: [String: PropertyList]) throws(DefaultsError) {
        loadIfNeeded()
        if state.isJudged {
            try judge { edits in edits = DomainEdits(replacement: contents) }
        }
        let reason = ChangeLogAttribution.currentReason
        let deltas: [KeyDelta] = state.change { state in
            let before = state.contents
            state.pending = DomainEdits(replacement: contents, reason: reason ?? state.pending.reason)
            state.scheduled = true
            state.contents = contents
            return KeyDelta.between(before, contents)
        }
        context.writer.schedule(self)
        if !deltas.isEmpty { notify(.changed(deltas, .ofThisProcess)) }
    }

    // MARK: Judging

    /// Adds a judge of the file's versions (``FileJudges``), under `id`.
    func addJudge(_ judge: @escaping FileJudges.Judge, id: UInt64) {
        loadIfNeeded()
        state.change { $0.judges.add(judge, id: id) }
    }

    /// Removes the judge added under `id`.
    func removeJudge(id: UInt64) {
        state.change { $0.judges.remove(id: id) }
    }

    /// What a write of this process goes onto, with its edits on top: the version on disk as this process knows
    /// it, which is the one readers see unless the judges refused it (a transaction reads this, so that its
    /// check holds against the file as it is).
    var contentsToWriteOver: [String: PropertyList] {
        loadIfNeeded()
        return state.read { state in
            guard let refused = state.refused else { return state.contents }
            return Self.overlay(refused.contents, state.inFlight, state.pending)
        }
    }

    /// The contents this process would write with `edit` made to its pending edits (onto the version on disk as
    /// it knows it), and the judges to ask.
    func candidate(_ edit: (inout DomainEdits) -> Void) -> ([String: PropertyList], FileJudges) {
        state.read { state in
            var pending = state.pending
            edit(&pending)
            return (Self.overlay(state.refused?.contents ?? state.disk, state.inFlight, pending), state.judges)
        }
    }

    /// Asks the judges, with no lock held, about the file with `edit` made to this process's pending edits.
    private func judge(_ edit: (inout DomainEdits) -> Void) throws(DefaultsError) {
        let (candidate, judges) = candidate(edit)
        if let reason = judges.verdict(on: candidate) { throw refusedChange(reason) }
    }

    /// A change of this process the judges refused for `reason`: counted in the domain's metric, as the error
    /// its caller throws.
    func refusedChange(_ reason: String) -> DefaultsError {
        let domain = DefaultsMetrics.domain(ofFile: path)
        DefaultsMetrics.report { DefaultsMetrics.versionRefused(domain: domain) }
        return .changeRefused(path: path, domain: domain, reason: reason)
    }
}
