import Foundation
import Synchronization

/// What a change of one of the store's files does: the effective view and its streams, the refusals of typed
/// keys' values, and the coalesced didChangeNotification.
extension Defaults {
    /// A file of one of the store's domains changed (by this process or another): update the merged view
    /// for the keys involved and tell observers about effective changes.
    func handle(_ event: DomainFile.Event, domain: String, layer: PreferenceLayer) {
        switch event {
        case .failed(let error):
            record(error, deferred: true)
        case .changed(let deltas, let origin):
            apply(deltas, domain: domain, layer: layer, origin: origin)
        case .changedKey(let delta, let origin):
            apply(CollectionOfOne(delta), domain: domain, layer: layer, origin: origin)
        }
    }

    /// Updates the merged view for the keys a file changed and tells observers about effective changes.
    func apply(
        _ deltas: some RandomAccessCollection<KeyDelta>, domain: String, layer: PreferenceLayer,
        origin: ChangeOrigin
    ) {
        var namesEnvironment = false
        let (changed, resumptions, refusals): (Bool, [Resumption], [SchemaViolation]) = state.withLock { state in
            namesEnvironment = environment != nil && environmentMayName(deltas, state)
            // The application domain is in the search list once attached (``SearchList/applicationFile`` is set
            // then); asking the attachments would hash its name again on every `set`.
            let inSearchList =
                domain == configuration.applicationDomain
                ? state.search.applicationFile != nil : state.search.persistent[domain]?.inSearchList == true
            var applied = EffectiveView.Applied()
            if inSearchList, deltas.count == 1, let delta = deltas.first {
                let key = EffectiveView.ResolvedKey(key: delta.key, value: resolve(delta.key, state))
                applied = state.view.apply(.key(key, domain: domain, origin: origin)) ?? applied
            } else if inSearchList {
                // Every key from one version of the file: another thread may commit a new version while the
                // keys are resolved one by one, and the view must not take some keys from each. (A later event
                // then resolves the keys again, from the newer version.)
                let file = state.search.persistent[domain]?.file(layer)
                let version = file?.values(forKeys: deltas.lazy.map(\.key))
                let keys = deltas.map { delta in
                    let value =
                        file.map { resolve(delta.key, state, replacing: $0, with: version?[delta.key]) }
                        ?? resolve(delta.key, state)
                    return EffectiveView.ResolvedKey(key: delta.key, value: value)
                }
                applied = state.view.apply(.keys(keys, domain: domain, origin: origin)) ?? applied
            }
            // The domain's own changes, for streams that follow it whatever the search list shows, in the batch
            // of the view's changes (a batch of their own when the domain is outside the search list).
            if state.view.followsDomain(domain), let attachment = state.search.persistent[domain] {
                if !inSearchList { state.view.beginBatch() }
                for delta in deltas {
                    let new = attachment.value(forKey: delta.key)
                    let old = attachment.value(forKey: delta.key, replacing: (layer, delta.old))
                    guard old != new else { continue }
                    let change = KeyChange(
                        domain: domain, key: delta.key, oldValue: old, newValue: new, origin: origin,
                        batch: state.view.batch)
                    applied.resumptions += state.view.deliverDomainChange(change)
                }
            }
            return (applied.changed, applied.resumptions, applied.refusals)
        }
        for resume in resumptions { resume() }
        for violation in firstReports(of: refusals) {
            record(.invalidValue(violation, domain: domain), deferred: true)
        }
        if publishedSchema.load(ordering: .relaxed) {
            reportUndeclaredKeys(deltas.lazy.filter { $0.new != nil }.map(\.key), domain: domain)
        }
        // One post per burst: only the change that finds none scheduled schedules one.
        if changed, claimNotification() { postDidChange() }
        if namesEnvironment { rebuildMerged(changedDomain: DomainName.environment) }
    }

    /// Marks a post as scheduled; false when one already was (the caller's change rides along with it).
    func claimNotification() -> Bool {
        guard !notificationPending.load(ordering: .acquiring) else { return false }
        return notificationPending.compareExchange(
            expected: false, desired: true, ordering: .sequentiallyConsistent
        ).exchanged
    }

    /// The refusals not reported before: a refused value is reported once per key, however many slots,
    /// streams and reads meet it.
    func firstReports(of refusals: [SchemaViolation]) -> [SchemaViolation] {
        guard !refusals.isEmpty else { return [] }
        return typedKeys.withLock { typed in
            refusals.filter { typed.isFirstReport(of: $0.value, forKey: $0.key) }
        }
    }

    /// Posts ``didChangeNotification`` shortly after a change, once for a burst of changes: a post costs
    /// more than the change itself, and observers of this notification re-read what they need anyway.
    ///
    /// The post waits ``notificationDelay`` rather than being queued at once: an immediate `async` wakes a
    /// thread for nearly every `set` (the queue drains faster than a loop of sets refills it), and a
    /// wake-up costs more than the rest of a `set`. While changes keep coming, posts are spaced apart
    /// (``notificationPacing``): a loop of `set` + `synchronize()` otherwise armed a timer, and woke the timer
    /// thread, for every other write, on the writing thread's path.
    ///
    /// A caller that set ``notificationPending`` passes `clearingPending: true`, and the post clears it;
    /// a whole-domain call that found a post already pending schedules one of its own (false).
    func postDidChange(clearingPending: Bool = true) {
        let clock = configuration.clock
        let last = lastNotificationPosted.withLock { $0 }
        let wait = Defaults.notificationPacing.wait(sinceLast: last.map { clock.now.timeIntervalSince($0) })
        clock.schedule(after: wait, on: Defaults.notificationQueue) { [weak self] in
            guard let self else { return }
            if clearingPending { self.notificationPending.store(false, ordering: .sequentiallyConsistent) }
            NotificationCenter.default.post(name: Defaults.didChangeNotification, object: self)
            let posted = clock.now
            self.lastNotificationPosted.withLock { $0 = posted }
        }
    }

    static let notificationQueue = DispatchQueue(label: "LiveDefaults.notifications")
    /// When ``didChangeNotification`` is posted after a change: a millisecond after a change that comes after a
    /// quiet moment (more changes ride along), a few milliseconds after the last post while changes keep coming.
    static let notificationPacing = SustainedSpacing(delay: .milliseconds(1), spacing: .milliseconds(5))
    /// How long ``didChangeNotification`` waits for more changes to ride along after a quiet moment.
    static var notificationDelay: Duration { notificationPacing.delay }
}
