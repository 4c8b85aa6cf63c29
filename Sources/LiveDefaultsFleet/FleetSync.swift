#if Fleet
    import DefaultsToolSupport
    import Foundation
    public import LiveDefaults
    // The records and FleetError are this module's API too: a program that imports LiveDefaultsFleet has them.
    @_exported public import LiveDefaultsFleetRecords
    public import Logging
    public import ServiceLifecycle

    /// Keeps domains in step across machines through etcd: each named domain's file on this machine and its keys
    /// under `/livedefaults/<domain>/` in etcd are mirrored both ways until the service stops. It is what
    /// `defaults sync DOMAIN... --etcd URLS` runs; a server that wants no separate agent runs it in its own
    /// service group.
    ///
    /// ```swift
    /// let sync = try FleetSync(
    ///     domains: ["com.example.api"],
    ///     etcd: try EtcdConnection(endpoints: "http://10.0.0.1:2379,http://10.0.0.2:2379"),
    ///     logger: logger)
    /// let group = ServiceGroup(services: [DefaultsService(defaults), sync, server],
    ///                          gracefulShutdownSignals: [.sigterm], logger: logger)
    /// try await group.run()
    /// ```
    ///
    /// Local programs keep using the files: they see fleet changes through their own watchers, and their writes
    /// reach etcd within milliseconds. The semantics (revisions, reconciliation after a restart, conflicts,
    /// deletions, failover) are in Docs/Fleet.md.
    public struct FleetSync: Service, CustomStringConvertible {
        /// How often and how patiently the mirrors talk to etcd.
        public struct Timing: Sendable, Hashable {
            /// How often an idle watch checks that its member still serves (a linearizable read).
            public var heartbeat: Duration
            /// The wait after the first failed attempt to reach etcd; it doubles with each further failure …
            public var minimumRetryDelay: Duration
            /// … up to this.
            public var maximumRetryDelay: Duration
            /// The most keys pushed in one etcd transaction: etcd refuses a transaction of more operations than its
            /// `--max-txn-ops` (128 unless the cluster was started with more). A local change of more keys is
            /// pushed in several transactions, and other hosts may then see it in parts (Docs/Fleet.md).
            public var keysPerTransaction: Int

            /// The defaults: a heartbeat each second, retries from 100 ms to 2 s, 128 keys per transaction.
            public init(
                heartbeat: Duration = .seconds(1), minimumRetryDelay: Duration = .milliseconds(100),
                maximumRetryDelay: Duration = .seconds(2), keysPerTransaction: Int = 128
            ) {
                self.heartbeat = heartbeat
                self.minimumRetryDelay = minimumRetryDelay
                self.maximumRetryDelay = max(maximumRetryDelay, minimumRetryDelay)
                self.keysPerTransaction = max(keysPerTransaction, 1)
            }

            func retryDelay(afterFailures failures: Int) -> Duration {
                var delay = minimumRetryDelay
                for _ in 1..<min(max(failures, 1), 32) where delay < maximumRetryDelay { delay *= 2 }
                return min(delay, maximumRetryDelay)
            }
        }

        /// The mirrored domains.
        public let domains: [String]
        /// The etcd cluster.
        public let etcd: EtcdConnection
        /// The store whose files are mirrored; its locations decide which user's files these are.
        public let defaults: Defaults
        /// Where the domains live in etcd.
        public let layout: FleetLayout
        /// Where each domain's sync state (its last agreement with etcd) is kept.
        public let stateDirectory: String
        /// Where conflicts, lost connections and failures are logged.
        public let logger: Logger
        /// Heartbeat, retry delays, transaction size.
        public let timing: Timing
        /// How this machine appears to the fleet's rollouts: its registration and health check; nil registers
        /// nothing (a program that syncs in its own service group and is no rollout's target).
        public let host: FleetHostIdentity?

        /// The directory of sync states for a user's files: `.livedefaults-sync` inside the user's defaults
        /// directory (`$XDG_CONFIG_HOME/.livedefaults-sync`), a name no domain can take.
        public static func defaultStateDirectory(for locations: DefaultsLocations) -> String {
            KeysUnderRollout.stateDirectory(for: locations)
        }

        /// A service that mirrors `domains` of `defaults`' user between this machine and etcd.
        ///
        /// - Parameters:
        ///   - domains: The domains to mirror (not `NSGlobalDomain`, which is per machine).
        ///   - etcd: The cluster's endpoints, TLS files and credentials.
        ///   - defaults: The store whose files are mirrored (the current user's by default); writes from etcd are
        ///     made through it, so its observers see them at once.
        ///   - layout: The etcd key prefix (`/livedefaults/` by default).
        ///   - stateDirectory: Where sync states live; ``defaultStateDirectory(for:)`` when nil.
        ///   - logger: Conflicts and connection changes are logged at warning, reconnections at info.
        ///   - timing: Heartbeat, retry delays, transaction size.
        ///   - host: The host's registration and health check (``FleetHostIdentity``), or nil for none.
        /// - Throws: ``FleetError/Code-swift.enum/invalidOption`` when a domain name is not valid, repeated, or
        ///   the global domain.
        public init(
            domains: [String], etcd: EtcdConnection, defaults: Defaults = Defaults(),
            layout: FleetLayout = FleetLayout(),
            stateDirectory: String? = nil, logger: Logger = Logger(label: "LiveDefaultsFleet"),
            timing: Timing = Timing(), host: FleetHostIdentity? = nil
        ) throws(FleetError) {
            guard !domains.isEmpty else { throw FleetError(.invalidOption, "no domain to sync was given") }
            for domain in domains {
                if domain == Defaults.globalDomain {
                    throw FleetError(
                        .invalidOption, "NSGlobalDomain holds this machine's own settings; it cannot be synced")
                }
                do throws(DefaultsError) { try DomainName.validate(domain) } catch {
                    throw FleetError(.invalidOption, "\(error)")
                }
            }
            guard Set(domains).count == domains.count else {
                throw FleetError(.invalidOption, "a domain is named twice")
            }
            self.domains = domains
            self.etcd = etcd
            self.defaults = defaults
            self.layout = layout
            self.stateDirectory = stateDirectory ?? Self.defaultStateDirectory(for: defaults.configuration.locations)
            self.logger = logger
            self.timing = timing
            self.host = host
        }

        /// What a domain's mirror calls when this host's own values of the domain changed in its file.
        private static func reporter(_ presence: HostPresence?, domain: String) -> (@Sendable (Int64) -> Void)? {
            guard let presence else { return nil }
            return { revision in presence.ownValuesApplied(domain: domain, revision: revision) }
        }

        // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
        public var description: String { "FleetSync(\(domains.joined(separator: ", ")))" }

        /// Mirrors every domain until the service group shuts down gracefully or the task is cancelled; then the
        /// last local writes are flushed and each domain's state saved.
        ///
        /// etcd being unreachable is not an error: the mirrors retry (logging the first failure at warning) while
        /// local reads and writes go on; the changes made meanwhile are reconciled when etcd answers.
        ///
        /// - Throws: ``FleetError`` when a TLS file cannot be read or another agent mirrors one of the domains
        ///   for the same user already.
        public func run() async throws {
            let client = try EtcdClient(connection: etcd)
            var failure: (any Error)?
            do {
                try await cancelWhenGracefulShutdown {
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        let presence = host.map { host in
                            HostPresence(
                                identity: host, domains: domains, store: defaults, client: client, layout: layout,
                                logger: logger, timing: timing)
                        }
                        if let presence { group.addTask { await presence.run() } }
                        for domain in domains {
                            group.addTask { [defaults, layout, stateDirectory, logger, timing, host] in
                                let mirror = try DomainMirror(
                                    domain: domain, store: defaults, client: client, layout: layout,
                                    stateDirectory: stateDirectory, logger: logger, timing: timing, hostID: host?.id,
                                    ownValuesApplied: Self.reporter(presence, domain: domain))
                                try await mirror.run()
                            }
                        }
                        // The first failure ends the others (waitForAll would wait for every task, and the host's
                        // registration never ends by itself).
                        for try await _ in group {}
                    }
                }
            } catch is CancellationError {
                // Cancelled or shut down gracefully: the mirrors flushed and saved their states.
            } catch {
                failure = error
            }
            await client.shutdown()
            if let failure { throw failure }
        }
    }
#else
    /// Built without the package trait Fleet: this module has no etcd client. Depend on LiveDefaults with
    /// `.package(url: …, from: …, traits: ["Fleet"])`, or build this package with `--traits Fleet`.
    @available(
        *, unavailable,
        message: "LiveDefaultsFleet needs the package trait Fleet: .package(url: …, from: …, traits: [\"Fleet\"])"
    )
    public enum FleetSync {}
#endif
