#if Fleet
    import Foundation
    public import LiveDefaults

    /// Guarded rollouts: a key's new value given to a canary, then to stages of the live hosts, each stage gated
    /// by the health of every host in it, with the value rolled back from every reached host when one fails.
    /// What `defaults rollout` runs (Docs/Fleet.md, "Rollouts").
    ///
    /// The state lives in etcd: the record (``RolloutRecord``, `<prefix>.rollouts/<domain>/<key>`), the reached
    /// hosts' own values (``FleetLayout/targetsPrefix(domain:host:)``) and, while a driver runs, its lock
    /// (`<prefix>.locks/<domain>/<key>`, on the driver's lease). A driver that dies leaves all of it as it was —
    /// reached hosts keep the new value, the others the old one — until ``resume(domain:key:etcd:layout:progress:)``
    /// or ``abort(domain:key:etcd:layout:progress:)``.
    public enum FleetRollout {
        /// How a rollout moves.
        public struct Options: Sendable, Hashable {
            /// The stages, in order; the value becomes the domain's once the last one passes.
            public var stages: [RolloutStage]
            /// How long every host of a stage must stay healthy, once it has the value, for the stage to pass.
            public var bake: Duration
            /// How long a stage may take to pass (its hosts taking the value and the bake) before it fails.
            public var stageTimeout: Duration

            /// Options; the default stages are a canary, 10 %, 50 % and all hosts.
            public init(
                stages: [RolloutStage] = [.hosts(1), .percent(10), .percent(50), .percent(100)],
                bake: Duration = .seconds(60), stageTimeout: Duration = .seconds(60)
            ) {
                self.stages = stages.isEmpty ? [.percent(100)] : stages
                let longest = Duration.seconds(Int64(RolloutRecord.maximumSeconds))
                self.bake = min(max(bake, .zero), longest)
                self.stageTimeout = min(max(stageTimeout, .milliseconds(100)), longest)
            }
        }

        /// How often a driver reads the hosts' health while a stage bakes.
        static let pollInterval = Duration.milliseconds(100)
        /// How long a driver waits, after a rollback, for the reached hosts to report the old value back.
        static let rollbackConfirmation = Duration.seconds(10)

        /// Starts a rollout of `value` for `key` and drives it to its end: completed (the value is the
        /// domain's), or rolled back (every reached host back to the old value). Each step, and each look at a
        /// baking stage, is told to `progress`.
        ///
        /// - Throws: ``FleetError`` when etcd cannot be reached, no live host syncs the domain, or the key has a
        ///   rollout in progress (resume or abort it first).
        public static func start(
            domain: String, key: String, value: PropertyList, etcd: EtcdConnection, layout: FleetLayout = FleetLayout(),
            options: Options = Options(), progress: @escaping @Sendable (RolloutProgress) -> Void = { _ in }
        ) async throws(FleetError) -> RolloutRecord {
            try await driving(domain, key, etcd, layout, progress) { driver throws(FleetError) in
                try await driver.start(value: value, options: options)
            }
        }

        /// Continues a rollout whose driver stopped, from the stage it was in (baked again).
        ///
        /// - Throws: ``FleetError`` when there is no rollout of the key in progress, or a driver runs it.
        public static func resume(
            domain: String, key: String, etcd: EtcdConnection, layout: FleetLayout = FleetLayout(),
            progress: @escaping @Sendable (RolloutProgress) -> Void = { _ in }
        ) async throws(FleetError) -> RolloutRecord {
            try await driving(domain, key, etcd, layout, progress) { driver throws(FleetError) in
                try await driver.resume()
            }
        }

        /// Rolls a rollout in progress back: every reached host goes back to the old value, and the rollout is
        /// recorded as aborted. A driver still running it must be stopped first (it holds the lock).
        ///
        /// - Throws: ``FleetError`` when there is no rollout of the key in progress, or a driver runs it.
        public static func abort(
            domain: String, key: String, etcd: EtcdConnection, layout: FleetLayout = FleetLayout(),
            progress: @escaping @Sendable (RolloutProgress) -> Void = { _ in }
        ) async throws(FleetError) -> RolloutRecord {
            try await driving(domain, key, etcd, layout, progress) { driver throws(FleetError) in
                try await driver.abort()
            }
        }

        /// Runs `body` with the key's driver, holding the key's lock, on a client of its own.
        private static func driving(
            _ domain: String, _ key: String, _ etcd: EtcdConnection, _ layout: FleetLayout,
            _ progress: @escaping @Sendable (RolloutProgress) -> Void,
            _ body: (RolloutDriver) async throws(FleetError) -> RolloutRecord
        ) async throws(FleetError) -> RolloutRecord {
            try await EtcdClient.using(etcd) { client throws(FleetError) in
                let driver = try await RolloutDriver(
                    client: client, layout: layout, domain: domain, key: key, progress: progress)
                return try await driver.locked { () throws(FleetError) in try await body(driver) }
            }
        }

        /// What a driver tells as it goes.
        public enum RolloutProgress: Sendable {
            /// A step worth a line of its own: a stage given the value, passed, a rollback, the completion.
            case step(String)
            /// A look at the stage being baked (1-based `stage` of `stages`): how many of the `reached` hosts
            /// have reported the value applied and healthy, and how long the stage has baked so far of `bake`
            /// seconds (0 until every one of them has).
            case baking(stage: Int, stages: Int, ready: Int, reached: Int, baked: Double, bake: Double)
        }

        /// A rollout's record and whether a driver runs it now.
        public struct Status: Sendable {
            /// The record.
            public var record: RolloutRecord
            /// Whether a driver holds the key's lock now (a running rollout without one is stopped).
            public var driverRunning: Bool
        }

        /// The rollouts etcd holds of a domain (or one key of it), in progress or ended, newest first: each key's
        /// last rollout and the ended ones before it that etcd's history still holds (up to five per key).
        public static func status(
            domain: String, key: String? = nil, etcd: EtcdConnection, layout: FleetLayout = FleetLayout()
        ) async throws(FleetError) -> [Status] {
            try await EtcdClient.using(etcd) { client throws(FleetError) in
                let recordKey = Data(
                    ((key.map { Self.recordKey(layout, domain, $0) }) ?? Self.recordsPrefix(layout, domain)).utf8)
                let records = try await client.range(
                    key: recordKey, rangeEnd: key == nil ? FleetLayout.rangeEnd(ofPrefix: recordKey) : nil)
                let lockPrefix = Data((layout.prefix + ".locks/" + domain + "/").utf8)
                let locks = try await client.range(
                    key: lockPrefix, rangeEnd: FleetLayout.rangeEnd(ofPrefix: lockPrefix))
                let locked = Set(
                    (locks.kvs ?? []).compactMap {
                        $0.key.flatMap { String(bytes: $0.dropFirst(lockPrefix.count), encoding: .utf8) }
                    })
                var found: [Status] = []
                for kv in records.kvs ?? [] {
                    guard let value = kv.value, let record = RolloutRecord.decode(value) else { continue }
                    found.append(Status(record: record, driverRunning: locked.contains(record.key)))
                    for earlier in await earlierRollouts(of: kv, current: record.id, client: client) {
                        found.append(Status(record: earlier, driverRunning: false))
                    }
                }
                // Newest first; a key's rollouts started within one second (the records keep whole seconds)
                // stay in the order found, its last one first.
                return found.enumerated().sorted { a, b in
                    a.element.record.started != b.element.record.started
                        ? a.element.record.started > b.element.record.started : a.offset < b.offset
                }.map(\.element)
            }
        }

        /// How many ended rollouts of a key before its last one ``status(domain:key:etcd:layout:)`` shows.
        static let earlierPerKey = 5

        /// The key's rollouts before `current`, newest first (at most ``earlierPerKey``), each as its record
        /// last was: from etcd's history of the record key, which holds every version since the key's first
        /// rollout unless compacted (then there are none to show).
        static func earlierRollouts(of kv: EtcdKeyValue, current: String, client: EtcdClient) async -> [RolloutRecord] {
            guard let key = kv.key, let created = kv.create_revision?.value, let modified = kv.mod_revision?.value,
                created < modified
            else { return [] }
            let events: [EtcdEvent]
            do {
                events = try await FleetHistory.replay(
                    FleetHistory.KeyRange(key: key, end: nil), from: created, through: modified, traced: true,
                    client: client)
            } catch {
                return []
            }
            var last: [String: RolloutRecord] = [:]
            var order: [String] = []
            for event in events where event.type != "DELETE" {
                guard let bytes = event.kv?.value, let record = RolloutRecord.decode(bytes), record.id != current else {
                    continue
                }
                if last[record.id] == nil { order.append(record.id) }
                last[record.id] = record
            }
            return order.reversed().prefix(earlierPerKey).compactMap { last[$0] }
        }

        static func recordsPrefix(_ layout: FleetLayout, _ domain: String) -> String {
            layout.prefix + ".rollouts/" + domain + "/"
        }

        static func recordKey(_ layout: FleetLayout, _ domain: String, _ key: String) -> String {
            recordsPrefix(layout, domain) + key
        }
    }
#endif
