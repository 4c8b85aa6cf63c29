#if Fleet
    public import Foundation
    public import LiveDefaults

    /// What a running `defaults sync` agent says of one domain, kept current in a small JSON file beside the
    /// domain's sync state (`<state directory>/<domain>.status.json`): the connection, the etcd revisions it
    /// applied and last saw, what waits to be pushed, conflicts and the last error. `defaults sync --status`
    /// reads it (``SyncStatusReport``); other programs may read the same JSON.
    ///
    /// The agent rewrites the file at least every ``statusInterval`` seconds (``updated``), so a reader can tell a
    /// live agent from a stopped or frozen one; whether an agent runs at all is told by the lock it holds on
    /// `<domain>.lock`, not by the file.
    public struct SyncStatus: Sendable, Codable, Equatable {
        /// The format of this file; a reader refuses another.
        public var format = 1
        /// The mirrored domain.
        public var domain: String
        /// The agent's process ID.
        public var processID: Int32
        /// When the agent started mirroring the domain.
        public var started: Date
        /// When the agent last wrote this status.
        public var updated: Date
        /// The most seconds between two writes of this status by a running agent.
        public var statusInterval: Double
        /// etcd's client URLs the agent was given.
        public var endpoints: [String]
        /// The endpoint the agent's watch runs on; nil while disconnected.
        public var connectedEndpoint: String?
        /// Since when it is connected (to any endpoint).
        public var connectedSince: Date?
        /// Since when it is disconnected; nil while connected.
        public var disconnectedSince: Date?
        /// Why it is disconnected (the last failure), while it is.
        public var disconnectReason: String?
        /// Every etcd event of the domain up to this revision is applied to the local file.
        public var appliedRevision: Int64
        /// The cluster's revision at the agent's last check of etcd (a linearizable read each heartbeat).
        public var etcdRevision: Int64?
        /// At that check: the revision of the newest write among the domain's keys in etcd.
        public var domainRevision: Int64?
        /// At that check: whether etcd held nothing of the domain that the agent had not applied (the domain's
        /// newest write at or below ``appliedRevision``, and the same keys present).
        public var caughtUp: Bool
        /// Keys whose local value is not (yet) in etcd: changed here and waiting to be pushed, or refused (by etcd
        /// or by the local schema), sorted.
        public var pendingKeys: [String]
        /// Conflicts since the agent started: a key changed here and in etcd before the two agreed (etcd won).
        public var conflicts: Int
        /// The last error or failure the agent logged for the domain.
        public var lastError: String?
        /// When it was logged.
        public var lastErrorTime: Date?

        /// A status for an agent that is starting.
        public init(domain: String, processID: Int32, started: Date, statusInterval: Double, endpoints: [String]) {
            self.domain = domain
            self.processID = processID
            self.started = started
            self.updated = started
            self.statusInterval = statusInterval
            self.endpoints = endpoints
            appliedRevision = 0
            caughtUp = false
            pendingKeys = []
            conflicts = 0
        }

        /// The status file of a domain: `<state directory>/<domain>.status.json`.
        public static func path(stateDirectory: String, domain: String) -> String {
            stateDirectory + "/" + domain + ".status.json"
        }

        /// The JSON the file holds: keys sorted, dates in ISO 8601.
        public func encoded() throws -> Data {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
            encoder.dateEncodingStrategy = .iso8601
            return try encoder.encode(self)
        }

        /// The status a file's bytes hold.
        ///
        /// - Throws: `DecodingError` when they are not a status of this format.
        public static func decode(_ data: Data) throws -> SyncStatus {
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            let status = try decoder.decode(SyncStatus.self, from: data)
            guard status.format == 1 else {
                throw DecodingError.dataCorrupted(
                    .init(codingPath: [], debugDescription: "status format \(status.format) is not known"))
            }
            return status
        }
    }

    /// Whether a domain is in step with etcd on this machine, as `defaults sync --status` decides it from the
    /// agent's status file and its lock.
    ///
    /// In step means: an agent runs for the domain and wrote its status recently, it is connected to etcd,
    /// nothing waits to be pushed, and its last check found every change etcd holds for the domain applied.
    public struct SyncStatusReport: Sendable {
        /// Whether an agent mirrors the domain now.
        public enum Agent: Sendable, Equatable {
            /// An agent holds the domain's lock and rewrote its status within the expected time.
            case running
            /// An agent holds the lock but its status is this many seconds old (stopped with SIGSTOP, or stuck).
            case notResponding(seconds: Double)
            /// No agent holds the lock; the file is what the last one left.
            case stopped
            /// No agent has run for the domain with this state directory (no status file).
            case neverRan
        }

        /// The domain.
        public var domain: String
        /// The agent's liveness.
        public var agent: Agent
        /// The last status the agent wrote, when there is one.
        public var status: SyncStatus?
        /// Why the domain is not in step, one sentence each; empty when it is.
        public var problems: [String]
        /// The programs that refuse the domain's version, by host (``addRefusals(_:host:)``): this machine's, and
        /// with `--etcd` every live host's as its agent reported them.
        public var refusals: [String: [VersionRefusal]] = [:]

        /// Adds the programs on `host` that refuse the domain's version: each is a problem (the host does not run
        /// the version the domain has).
        public mutating func addRefusals(_ refusing: [VersionRefusal], host: String) {
            guard !refusing.isEmpty else { return }
            refusals[host, default: []].append(contentsOf: refusing)
            for refusal in refusing { problems.append("on \(host), \(refusal)") }
        }

        /// Whether the domain is in step with etcd.
        public var inStep: Bool { problems.isEmpty }

        /// Reads the status of `domain` kept in `stateDirectory` and decides.
        ///
        /// - Parameter now: The time to compare the status's age with.
        public init(domain: String, stateDirectory: String, now: Date = Date()) {
            self.domain = domain
            let path = SyncStatus.path(stateDirectory: stateDirectory, domain: domain)
            let locked = StateLock.isHeld(path: StateLock.path(stateDirectory: stateDirectory, domain: domain))
            var problems: [String] = []
            guard let data = FileManager.default.contents(atPath: path) else {
                self.status = nil
                agent = locked ? .notResponding(seconds: .infinity) : .neverRan
                problems.append(
                    locked
                        ? "an agent holds the domain's lock but has written no status (\(path)): it is starting, or older than this command"
                        : "no agent has synced it here (no status file \(path))")
                self.problems = problems
                return
            }
            let status: SyncStatus
            do { status = try SyncStatus.decode(data) } catch {
                self.status = nil
                agent = locked ? .running : .stopped
                self.problems = ["its status file \(path) cannot be read: \(error)"]
                return
            }
            self.status = status
            let age = now.timeIntervalSince(status.updated)
            if !locked {
                agent = .stopped
                problems.append(
                    "no agent is running for it (the last one, process \(status.processID), wrote its status at \(Self.time(status.updated)))"
                )
            } else if age > Self.staleAfter(status) {
                agent = .notResponding(seconds: age)
                problems.append(
                    "its agent (process \(status.processID)) has not updated its status for \(Int(age.rounded())) s")
            } else {
                agent = .running
                if status.connectedEndpoint == nil {
                    let since = status.disconnectedSince.map { " since \(Self.time($0))" } ?? ""
                    let reason = status.disconnectReason.map { ": \($0)" } ?? ""
                    problems.append("disconnected from etcd\(since)\(reason)")
                }
                if !status.pendingKeys.isEmpty {
                    let shown = status.pendingKeys.prefix(10).joined(separator: ", ")
                    let more = status.pendingKeys.count > 10 ? ", …" : ""
                    problems.append("\(status.pendingKeys.count) key(s) not yet in etcd: \(shown)\(more)")
                }
                if !status.caughtUp, status.connectedEndpoint != nil {
                    if let newest = status.domainRevision, newest > status.appliedRevision {
                        problems.append(
                            "behind etcd: the domain's newest change is revision \(newest), applied up to \(status.appliedRevision)"
                        )
                    } else if status.domainRevision == nil {
                        problems.append("etcd has not been checked since the agent connected")
                    } else {
                        problems.append("the keys in etcd and the applied ones differ at the last check")
                    }
                }
            }
            self.problems = problems
        }

        /// How old a running agent's status may be: five of its intervals, and never under 5 s (a busy machine,
        /// a slow request to etcd).
        static func staleAfter(_ status: SyncStatus) -> Double {
            max(5, 5 * (status.statusInterval.isFinite ? status.statusInterval : 1))
        }

        static func time(_ date: Date) -> String {
            date.formatted(.iso8601)
        }
    }
#endif
