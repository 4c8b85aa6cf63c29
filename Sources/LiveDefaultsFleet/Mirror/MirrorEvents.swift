#if Fleet
    import NIOConcurrencyHelpers

    /// What a mirror's loop reacts to.
    enum MirrorEvent: Sendable {
        /// A key of the domain changed in the local file (any process, the mirror's own writes included).
        case localChange(key: String)
        /// A response of the etcd watch of one connection generation.
        case watched(generation: Int, EtcdWatchResponse)
        /// The watch (or the health check beside it) of one generation failed.
        case watchFailed(generation: Int, FleetError)
        /// The domain's local file cannot be read any more (the store keeps serving its last known good version,
        /// so no change says so): the mirror writes the agreed values back.
        case localFileBroken
    }

    /// The mirror's inbox: producers append events; the loop takes everything that arrived at once, so that a
    /// burst of local changes becomes one etcd transaction.
    final class MirrorInbox: Sendable {
        private let events = NIOLockedValueBox<[MirrorEvent]>([])
        private let doorbell: AsyncStream<Void>
        private let ring: AsyncStream<Void>.Continuation

        init() {
            (doorbell, ring) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        }

        func post(_ event: MirrorEvent) {
            events.withLockedValue { $0.append(event) }
            ring.yield()
        }

        /// Waits until at least one event is there (or the task is cancelled: then the result may be empty),
        /// and takes them all.
        func takeAll() async -> [MirrorEvent] {
            var iterator = doorbell.makeAsyncIterator()
            while true {
                let taken = events.withLockedValue { events -> [MirrorEvent] in
                    defer { events.removeAll(keepingCapacity: true) }
                    return events
                }
                if !taken.isEmpty || Task.isCancelled { return taken }
                if await iterator.next() == nil { return [] }
            }
        }

        /// Ends waiting for good.
        func close() {
            ring.finish()
        }
    }
#endif
