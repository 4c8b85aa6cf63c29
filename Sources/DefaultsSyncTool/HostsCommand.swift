import ArgumentParser
import DefaultsToolSupport
import Foundation
import LiveDefaults

#if Fleet
    import LiveDefaultsFleet
#endif

/// `defaults hosts --etcd URLS [--json]`: the live hosts registered by their agents, with their health.
struct HostsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hosts",
        abstract: "List the fleet's live hosts (registered by their agents) and their health.",
        discussion: """
            Each `defaults sync` agent registers its host (--host-id, the machine's host name by default) under an \
            etcd lease: a host whose agent stopped is gone at once, one whose agent died when its lease ends. \
            Health is what the host's --health-command or --health-url said last; a host without a check is \
            healthy while its agent runs. Exits 0 when every listed host is healthy (and with --domain, at least \
            one is listed), 1 otherwise. See Docs/Fleet.md.
            """)

    @OptionGroup var connection: EtcdOptions
    @Option(help: "Only hosts that keep this domain in step.") var domain: String?
    @Flag(help: "Print JSON.") var json = false

    func validate() throws {
        if connection.etcd == nil { throw ValidationError("Missing expected argument '--etcd <etcd>'") }
    }

    func run() async {
        #if Fleet
            do {
                var hosts = try await FleetHosts.live(
                    etcd: try connection.connection(), layout: FleetLayout(prefix: connection.prefix))
                if let domain { hosts = hosts.filter { $0.domains.contains(domain) } }
                print(json ? Output.json(hosts.map(Self.jsonObject)) : Self.text(hosts), terminator: json ? "\n" : "")
                if !hosts.allSatisfy(\.isHealthy) || (domain != nil && hosts.isEmpty) { Foundation.exit(1) }
            } catch {
                fail(error)
            }
        #else
            fail(builtWithoutFleet)
        #endif
    }
}

#if Fleet
    extension HostsCommand {
        static func text(_ hosts: [FleetHostRecord]) -> String {
            guard !hosts.isEmpty else { return "no live host\n" }
            let width = min(hosts.map(\.id.count).max() ?? 0, 40)
            var lines: [String] = []
            for host in hosts {
                let padding = String(repeating: " ", count: max(0, width - host.id.count))
                let health: String
                if let report = host.health {
                    health =
                        "\(report.isHealthy ? "healthy" : "UNHEALTHY") since \(report.since.formatted(.iso8601)): \(report.detail)"
                } else {
                    health = host.healthCheck == nil ? "healthy (no health check)" : "not checked yet"
                }
                lines.append("\(host.id)\(padding)  \(health)")
                for (domain, refusing) in (host.health?.refusals ?? [:]).sorted(by: { $0.key < $1.key }) {
                    for refusal in refusing {
                        lines.append("\(String(repeating: " ", count: width))  REFUSED \(domain): \(refusal)")
                    }
                }
                lines.append(
                    "\(String(repeating: " ", count: width))  syncs \(host.domains.joined(separator: ", ")); agent pid \(host.pid), registered \(host.registered.formatted(.iso8601))"
                )
            }
            return lines.joined(separator: "\n") + "\n"
        }

        static func jsonObject(_ host: FleetHostRecord) -> [String: Any] {
            var object: [String: Any] = [
                "id": host.id, "domains": host.domains, "pid": Int(host.pid), "uid": Int(host.uid),
                "registered": host.registered.formatted(.iso8601), "leaseSeconds": Int(host.leaseSeconds),
                "healthy": host.isHealthy,
            ]
            if let check = host.healthCheck { object["healthCheck"] = check }
            if let report = host.health {
                var health: [String: Any] = [
                    "healthy": report.isHealthy, "detail": report.detail,
                    "checked": report.checked.formatted(.iso8601), "since": report.since.formatted(.iso8601),
                ]
                if let refusals = report.refusals { health["refusals"] = refusals.mapValues { $0.map(\.jsonObject) } }
                object["health"] = health
            }
            return object
        }
    }
#endif
