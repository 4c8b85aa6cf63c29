#if Fleet
    import Foundation

    /// How an agent appears to the fleet: the name rollouts address it by, the health check it runs, and how
    /// quickly the fleet notices that it died (`defaults sync … --host-id NAME --health-command CMD`).
    ///
    /// The agent registers the host in etcd under a lease of ``leaseTime`` (``FleetLayout/hostsPrefix``), renews it
    /// a third of the way through, and revokes it when it stops: a host that stops is gone at once, one that dies
    /// (SIGKILL, a lost machine, a network partition) is gone when its lease ends. While registered, it runs its
    /// health check every ``healthInterval`` and reports the result (``FleetLayout/healthPrefix``) whenever it
    /// changes.
    public struct FleetHostIdentity: Sendable, Hashable {
        /// The host's name in the fleet: unique among live hosts (a second agent with a name already registered
        /// waits until the first one's lease ends).
        public var id: String
        /// The host's own health check, if it has one; a host without one is healthy while its agent runs.
        public var healthCheck: HealthCheck?
        /// How long the host stays registered after its agent last renewed the lease (whole seconds, at least
        /// 2): how long the fleet takes to notice a dead host.
        public var leaseTime: Duration
        /// The time between two runs of the health check.
        public var healthInterval: Duration
        /// The longest a health check may take: a command still running then is killed (with the processes it
        /// started, when they share its process group), a URL not answered, and the host reported unhealthy.
        public var healthTimeout: Duration

        /// The longest host name accepted, in bytes (a DNS name's limit).
        public static let maximumIDLength = 253

        /// This machine's host name, the default host ID: any character a host ID does not allow becomes `-`,
        /// it is cut to ``maximumIDLength`` bytes, and a machine without a name is `localhost`.
        public static var machineName: String {
            let bytes = ProcessInfo.processInfo.hostName.utf8.prefix(maximumIDLength).map {
                $0.isHostIDByte ? $0 : UInt8(ascii: "-")
            }
            let name = String(decoding: bytes, as: UTF8.self)
            return name.isEmpty || name == "." || name == ".." ? "localhost" : name
        }

        /// An identity; every value is checked.
        ///
        /// - Parameters:
        ///   - id: The host's name (by default ``machineName``): 1 to 253 bytes of letters, digits, `.`, `-`, `_`
        ///     and `:`.
        ///   - healthCheck: The host's health check, if any.
        ///   - leaseTime: 10 seconds by default; 2 seconds to 1 hour.
        ///   - healthInterval: 2 seconds by default; 10 milliseconds to 1 hour.
        ///   - healthTimeout: 5 seconds by default; 10 milliseconds to 1 hour.
        /// - Throws: ``FleetError/Code-swift.enum/invalidOption`` naming the value that is out of range.
        public init(
            id: String = FleetHostIdentity.machineName, healthCheck: HealthCheck? = nil,
            leaseTime: Duration = .seconds(10), healthInterval: Duration = .seconds(2),
            healthTimeout: Duration = .seconds(5)
        ) throws(FleetError) {
            try Self.validate(id: id)
            let range: ClosedRange<Duration> = .milliseconds(10) ... .seconds(3600)
            guard (Duration.seconds(2) ... .seconds(3600)).contains(leaseTime) else {
                throw FleetError(.invalidOption, "a host's lease lasts 2 seconds to 1 hour, not \(leaseTime)")
            }
            guard range.contains(healthInterval) else {
                throw FleetError(.invalidOption, "the health interval is 10 ms to 1 hour, not \(healthInterval)")
            }
            guard range.contains(healthTimeout) else {
                throw FleetError(.invalidOption, "the health timeout is 10 ms to 1 hour, not \(healthTimeout)")
            }
            if case .command(let command) = healthCheck, command.trimmingCharacters(in: .whitespaces).isEmpty {
                throw FleetError(.invalidOption, "the health command is empty")
            }
            if case .url(let url) = healthCheck {
                guard let parsed = URL(string: url), ["http", "https"].contains(parsed.scheme?.lowercased() ?? ""),
                    parsed.host != nil
                else {
                    throw FleetError(.invalidOption, "the health URL \(url) is not an http:// or https:// URL")
                }
            }
            self.id = id
            self.healthCheck = healthCheck
            self.leaseTime = leaseTime
            self.healthInterval = healthInterval
            self.healthTimeout = healthTimeout
        }

        /// Checks a host ID: 1 to ``maximumIDLength`` bytes of ASCII letters, digits, `.`, `-`, `_` and `:`
        /// (a host name, a pod name, an instance ID), so that it is one etcd key component and reads the same in
        /// every tool.
        ///
        /// - Throws: ``FleetError/Code-swift.enum/invalidOption`` saying what is wrong.
        public static func validate(id: String) throws(FleetError) {
            guard !id.isEmpty else { throw FleetError(.invalidOption, "a host ID cannot be empty") }
            guard id.utf8.count <= maximumIDLength else {
                throw FleetError(.invalidOption, "a host ID has at most \(maximumIDLength) bytes, not \(id.utf8.count)")
            }
            for byte in id.utf8 where !byte.isHostIDByte {
                throw FleetError(
                    .invalidOption,
                    "a host ID has only letters, digits, '.', '-', '_' and ':'; \(id.debugDescription) does not")
            }
            guard id != "." && id != ".." else { throw FleetError(.invalidOption, "\(id) is not a host ID") }
        }

        /// The lease's time to live in whole seconds, as etcd takes it.
        var leaseSeconds: Int64 {
            max(2, leaseTime.components.seconds)
        }
    }

    /// A host's own health check, run by its agent in the agent's environment.
    public enum HealthCheck: Sendable, Hashable, CustomStringConvertible {
        /// A shell command (`/bin/sh -c`): healthy when it exits 0. It gets the agent's environment and
        /// `LIVEDEFAULTS_HOST_ID`; the first line of its output is the report's detail.
        case command(String)
        /// An HTTP GET of the URL: healthy on a 2xx answer.
        case url(String)

        // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
        public var description: String {
            switch self {
            case .command(let command): "command: \(command)"
            case .url(let url): "url: \(url)"
            }
        }
    }

    extension UInt8 {
        /// Whether the byte may stand in a host ID: an ASCII letter or digit, `.`, `-`, `_` or `:`.
        fileprivate var isHostIDByte: Bool {
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(self)
                || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(self)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self)
                || self == UInt8(ascii: ".") || self == UInt8(ascii: "-") || self == UInt8(ascii: "_")
                || self == UInt8(ascii: ":")
        }
    }
#endif
