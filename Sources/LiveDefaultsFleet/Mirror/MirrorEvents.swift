#if Fleet
    import Foundation
    import NIOConcurrencyHelpers

    /// What a mirror's loop reacts to, gathered since it last looked: at most one entry per key, so that
    /// however fast the file and etcd change while the loop is busy (a push waiting for etcd, say), what waits
    /// is bounded by the number of keys, never by the number of changes.
    struct MirrorBatch: Sendable {
        /// Keys of the domain changed in the local file (any process, the mirror's own writes included). Only the
        /// key: the loop reads the file's current value when it pushes.
        var localKeys: Set<String> = []
        /// The connection generation of ``watchedEvents`` and ``progressRevision``; events of an older
        /// generation are dropped when a newer one arrives.
        var watchGeneration = 0
        /// The newest event of each etcd key the watch reported (a later event of a key replaces an earlier
        /// one: the mirror would apply both in turn and keep the second).
        var watchedEvents: [Data: EtcdEvent] = [:]
        /// The newest event of each of this host's target keys (`<prefix>.targets/<domain>/<host>/`), from the
        /// watch beside the domain's of the same generation.
        var targetEvents: [Data: EtcdEvent] = [:]
        /// The highest revision the targets' watch reported as having nothing more (its own progress: it says
        /// nothing of the domain's keys).
        var targetProgress: Int64?
        /// The highest revision etcd reported, in a response without events, as having nothing more for the
        /// prefix (a progress notification).
        var progressRevision: Int64?
        /// Whether ``watchGeneration`` received anything (events or a progress notification).
        var watched = false
        /// The watch (or the health check beside it) of a generation failed: the newest generation's failure.
        var watchFailure: (generation: Int, error: FleetError)?
        /// The domain's local file cannot be read any more (the store keeps serving its last known good version,
        /// so no change says so): the mirror writes the agreed values back.
        var localFileBroken = false
        /// The newest health check's answer (what etcd holds of the domain) and the generation it checked.
        var health: (generation: Int, summary: EtcdClient.RangeSummary)?
        /// The domain's keys under rollout now (key: what to tell a person), when the last look found them.
        var rollouts: [String: String]?

        var isEmpty: Bool {
            localKeys.isEmpty && !watched && watchFailure == nil && !localFileBroken && health == nil
                && targetEvents.isEmpty && targetProgress == nil && rollouts == nil
        }

        /// How many entries wait: keys, watched keys, and one each for a progress notification, a failure, a
        /// broken file and a health check.
        var pendingCount: Int {
            localKeys.count + watchedEvents.count + (progressRevision == nil ? 0 : 1) + (watchFailure == nil ? 0 : 1)
                + (localFileBroken ? 1 : 0) + (health == nil ? 0 : 1) + targetEvents.count
                + (targetProgress == nil ? 0 : 1) + (rollouts == nil ? 0 : 1)
        }

        /// The watched events in etcd's order (by revision).
        var eventsInOrder: [EtcdEvent] { Self.inOrder(watchedEvents) }

        /// The target events in etcd's order.
        var targetEventsInOrder: [EtcdEvent] { Self.inOrder(targetEvents) }

        private static func inOrder(_ events: [Data: EtcdEvent]) -> [EtcdEvent] {
            events.values.sorted { ($0.kv?.mod_revision?.value ?? 0) < ($1.kv?.mod_revision?.value ?? 0) }
        }

        /// Moves to `generation` when it is newer (dropping what an older connection's watches sent); false
        /// for an older generation's report.
        private mutating func enter(generation: Int) -> Bool {
            guard generation >= watchGeneration else { return false }
            if generation > watchGeneration {
                watchGeneration = generation
                watchedEvents = [:]
                progressRevision = nil
                targetEvents = [:]
                targetProgress = nil
            }
            return true
        }

        /// Keeps the newest event of each key.
        private static func add(_ events: [EtcdEvent], to known: inout [Data: EtcdEvent]) {
            for event in events {
                guard let key = event.kv?.key else { continue }
                let revision = event.kv?.mod_revision?.value ?? 0
                if let newest = known[key]?.kv?.mod_revision?.value, newest > revision { continue }
                known[key] = event
            }
        }

        mutating func addTargets(generation: Int, _ response: EtcdWatchResponse) {
            guard enter(generation: generation) else { return }
            let events = response.events ?? []
            Self.add(events, to: &targetEvents)
            if events.isEmpty, response.created != true, let revision = response.header?.revision?.value {
                targetProgress = max(targetProgress ?? revision, revision)
            }
        }

        mutating func addWatched(generation: Int, _ response: EtcdWatchResponse) {
            guard enter(generation: generation) else { return }
            watched = true
            let events = response.events ?? []
            Self.add(events, to: &watchedEvents)
            // A progress notification says nothing up to its revision concerns the prefix; the response that
            // confirms the watch's creation does not (the replay of older events may follow it).
            if events.isEmpty, response.created != true, let revision = response.header?.revision?.value {
                progressRevision = max(progressRevision ?? revision, revision)
            }
        }

        mutating func addFailure(generation: Int, _ error: FleetError) {
            if let known = watchFailure, known.generation > generation { return }
            watchFailure = (generation, error)
        }
    }

    /// The mirror's inbox: producers (the local change stream, the watch, the health check, the file check) add
    /// to one ``MirrorBatch``; the loop takes it whole, so that a burst of local changes becomes one etcd
    /// transaction and a burst of etcd events one pass over the file. Bounded: one entry per key.
    final class MirrorInbox: Sendable {
        private let batch = NIOLockedValueBox(MirrorBatch())
        private let doorbell: AsyncStream<Void>
        private let ring: AsyncStream<Void>.Continuation

        init() {
            (doorbell, ring) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        }

        func postLocalChange(key: String) {
            batch.withLockedValue { _ = $0.localKeys.insert(key) }
            ring.yield()
        }

        func postWatched(generation: Int, _ response: EtcdWatchResponse) {
            batch.withLockedValue { $0.addWatched(generation: generation, response) }
            ring.yield()
        }

        func postTargets(generation: Int, _ response: EtcdWatchResponse) {
            batch.withLockedValue { $0.addTargets(generation: generation, response) }
            ring.yield()
        }

        func postWatchFailed(generation: Int, _ error: FleetError) {
            batch.withLockedValue { $0.addFailure(generation: generation, error) }
            ring.yield()
        }

        func postHealth(generation: Int, _ summary: EtcdClient.RangeSummary) {
            batch.withLockedValue { batch in
                if let known = batch.health, known.generation > generation { return }
                batch.health = (generation, summary)
            }
            ring.yield()
        }

        func postRollouts(_ keys: [String: String]) {
            batch.withLockedValue { $0.rollouts = keys }
            ring.yield()
        }

        func postLocalFileBroken() {
            batch.withLockedValue { $0.localFileBroken = true }
            ring.yield()
        }

        /// How many entries wait to be taken (see ``MirrorBatch/pendingCount``).
        var pendingCount: Int {
            batch.withLockedValue { $0.pendingCount }
        }

        /// Waits until something is there (or the task is cancelled, or the inbox closed: then the batch may be
        /// empty), and takes it all.
        func takeAll() async -> MirrorBatch {
            var iterator = doorbell.makeAsyncIterator()
            while true {
                let taken = batch.withLockedValue { batch -> MirrorBatch in
                    // The generation stays, so that an older watch's late events are still recognised as old.
                    defer { batch = MirrorBatch(watchGeneration: batch.watchGeneration) }
                    return batch
                }
                if !taken.isEmpty || Task.isCancelled { return taken }
                if await iterator.next() == nil { return taken }
            }
        }

        /// Ends waiting for good.
        func close() {
            ring.finish()
        }
    }
#endif
