public import Foundation
public import LiveDefaults

/// What a live host's agent registers in etcd (`<prefix>.hosts/<id>`, JSON, attached to its lease).
public struct FleetHostRecord: Sendable, Hashable, Codable {
    /// The host's ID (``FleetHostIdentity/id``).
    public var id: String
    /// The domains its agent keeps in step.
    public var domains: [String]
    /// The agent's process ID on its machine.
    public var pid: Int32
    /// The agent's user ID on its machine.
    public var uid: UInt32
    /// When the agent registered.
    public var registered: Date
    /// The health check it runs (``HealthCheck/description``), or nil.
    public var healthCheck: String?
    /// Its lease's time to live in seconds: how long after the agent dies the record is still there.
    public var leaseSeconds: Int64
    /// Its latest health report, when it has made one (filled by ``FleetHosts/live(etcd:layout:)``; not
    /// part of the registration itself).
    public var health: HealthReport?

    /// A record (the library makes them).
    package init(
        id: String, domains: [String], pid: Int32, uid: UInt32, registered: Date, healthCheck: String?,
        leaseSeconds: Int64, health: HealthReport? = nil
    ) {
        self.id = id
        self.domains = domains
        self.pid = pid
        self.uid = uid
        self.registered = registered
        self.healthCheck = healthCheck
        self.leaseSeconds = leaseSeconds
        self.health = health
    }

    /// Whether the host counts as healthy: it reported healthy last, or has no health check (a live host
    /// without one is healthy while its agent runs).
    public var isHealthy: Bool {
        health?.isHealthy ?? (healthCheck == nil)
    }

    /// The record etcd's bytes hold, or nil when they are none (written by another tool, or damaged).
    public static func decode(_ bytes: Data) -> FleetHostRecord? {
        try? JSONDecoder.fleetRecords.decode(FleetHostRecord.self, from: bytes)
    }
}

/// A host's health (`<prefix>.health/<id>`, JSON, attached to the host's lease), written when it changes
/// between healthy and unhealthy, after the host applied an own value of a key (checked at once), and with
/// each new lease: the detail and check time are those of the check that wrote it.
public struct HealthReport: Sendable, Hashable, Codable {
    /// Whether the check passed.
    public var isHealthy: Bool
    /// What the check said: the command's first line of output or exit status, the HTTP status, a timeout.
    public var detail: String
    /// When the check that gave this result ran.
    public var checked: Date
    /// Since when the host has been healthy or unhealthy (the first check that said so).
    public var since: Date
    /// Per domain, the newest etcd revision of this host's own values
    /// (``FleetLayout/targetsPrefix(domain:host:)``) its file held when the check ran: a rollout counts a
    /// host's health only from a check after its value.
    public var appliedRevisions: [String: Int64]
    /// Per domain, the programs on the host that refuse the version its file holds (``VersionRefusal``), when
    /// any does: a rollout fails on such a host at once, whatever its health check says. Absent from the
    /// reports of agents older than refusals, and when no program refuses.
    public var refusals: [String: [VersionRefusal]]?

    /// A report (the library makes them).
    package init(
        isHealthy: Bool, detail: String, checked: Date, since: Date, appliedRevisions: [String: Int64] = [:],
        refusals: [String: [VersionRefusal]] = [:]
    ) {
        self.isHealthy = isHealthy
        self.detail = detail
        self.checked = checked
        self.since = since
        self.appliedRevisions = appliedRevisions
        self.refusals = refusals.isEmpty ? nil : refusals
    }

    /// The programs on the host that refuse the version of `domain` its file holds.
    public func refusals(inDomain domain: String) -> [VersionRefusal] {
        refusals?[domain] ?? []
    }

    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    @available(*, deprecated, renamed: "refusals(inDomain:)")
    public func refusals(ofDomain domain: String) -> [VersionRefusal] { refusals(inDomain: domain) }

    /// The report etcd's bytes hold, or nil when they are none (written by another tool, or damaged).
    public static func decode(_ bytes: Data) -> HealthReport? {
        try? JSONDecoder.fleetRecords.decode(HealthReport.self, from: bytes)
    }

    /// Whether two reports agree on what an operator acts on (the times aside): a report is written again only
    /// when not, so a healthy host costs etcd one write per change of state, not one per check. An unhealthy
    /// host's reason counts: a check that failed first on a closed connection and then on HTTP 503 shows the
    /// 503 (a healthy host's detail, say a load figure its command prints, does not).
    package func saysTheSame(as other: HealthReport?) -> Bool {
        guard let other, other.isHealthy == isHealthy, other.appliedRevisions == appliedRevisions,
            other.refusals == refusals
        else { return false }
        return isHealthy || other.detail == detail
    }
}

/// A program that refuses the version of a domain's file its host holds now: the library's one refusal type.
@available(*, deprecated, renamed: "VersionRefusal")
public typealias ProgramRefusal = VersionRefusal

extension JSONEncoder {
    /// The encoder of the fleet's JSON records: ISO 8601 dates, sorted keys.
    package static var fleetRecords: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }
}

extension JSONDecoder {
    /// The decoder of the fleet's JSON records.
    package static var fleetRecords: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }
}
