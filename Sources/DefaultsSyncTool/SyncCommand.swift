import ArgumentParser
import DefaultsToolSupport
import Foundation
import LiveDefaults
import Logging

#if Fleet
    import LiveDefaultsFleet
    import ServiceLifecycle
    import UnixSignals
#endif

/// `defaults sync DOMAIN... --etcd URLS`: mirrors domains between this machine and etcd until SIGTERM or
/// SIGINT (status 0). `defaults sync --status DOMAIN...`: whether a running agent has them in step.
struct SyncCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Keep domains in step with an etcd cluster, both ways, until interrupted; or show their status.",
        discussion: """
            Each domain's keys live in etcd under <prefix><domain>/<key> (prefix /livedefaults/), one etcd key \
            per defaults key, the value an XML property list. Local changes (any program, any editor) reach etcd \
            within milliseconds; etcd's changes are written into the local file through LiveDefaults' locked \
            merge, so other local writers lose nothing. A restart reconciles: what changed only in etcd is \
            taken, what changed only here is pushed, and when both changed etcd wins (logged as a conflict). \
            etcd being unreachable is not fatal: the agent retries, local reads and writes go on. SIGTERM and \
            SIGINT end it with status 0.

            With --status (no etcd options needed), prints what the agent running on this machine says of each \
            domain — connection, revisions applied, keys waiting to be pushed, conflicts, last error — and the \
            programs on this machine that refuse the domain's version (a validator), and with --etcd those on \
            every live host; it exits 0 only when every domain is in step and no program refuses it. See \
            Docs/Fleet.md.
            """)

    @OptionGroup var connection: EtcdOptions
    @Option(help: "Where each domain's sync state is kept (default: $XDG_CONFIG_HOME/.livedefaults-sync).")
    var stateDirectory: String?
    @Option(help: "Seconds between checks that an idle etcd member still serves.") var heartbeat = 1.0
    @Option(
        name: .customLong("max-txn-ops"),
        help: "The most keys pushed in one etcd transaction: the cluster's own --max-txn-ops (128 by default).")
    var maxTransactionOperations = 128
    @Option(help: "This host's name in the fleet, which rollouts address (default: the machine's host name).")
    var hostID: String?
    @Option(help: "A shell command that tells whether this host is healthy (exit 0), run after changes and repeatedly.")
    var healthCommand: String?
    @Option(help: "A URL whose GET tells whether this host is healthy (a 2xx answer).") var healthURL: String?
    @Option(help: "Seconds between two health checks.") var healthInterval = 2.0
    @Option(help: "Seconds a health check may take before it counts as failed (a command is killed).")
    var healthTimeout = 5.0
    @Option(
        help: "Seconds the host stays registered after its agent is last heard of (how soon a dead host is noticed).")
    var leaseTime = 10.0
    @Flag(help: "Log every reconnection attempt and ignored key.") var verbose = false
    @Flag(help: "Print the status of the domains' agent instead of syncing; exit 0 only when all are in step.")
    var status = false
    @Flag(help: "With --status: print JSON.") var json = false
    @Argument(help: "The domains to keep in step.") var domains: [String]

    func validate() throws {
        if !status && connection.etcd == nil {
            throw ValidationError("Missing expected argument '--etcd <etcd>' (needed unless --status)")
        }
        if json && !status { throw ValidationError("--json goes with --status") }
        if healthCommand != nil && healthURL != nil {
            throw ValidationError("--health-command and --health-url: give one health check")
        }
    }

    func run() async {
        #if Fleet
            if status { await printStatus() } else { await sync() }
        #else
            fail(builtWithoutFleet)
        #endif
    }
}

#if Fleet
    extension SyncCommand {
        var resolvedStateDirectory: String {
            stateDirectory ?? FleetSync.defaultStateDirectory(for: .current)
        }

        func sync() async {
            var logger = Logger(label: "defaults-sync") { label in StreamLogHandler.standardError(label: label) }
            logger.logLevel = verbose ? .debug : .info
            let service: FleetSync
            let etcd = connection.etcd ?? ""
            do {
                let etcdConnection = try connection.connection()
                guard maxTransactionOperations >= 1 else { throw ToolError("--max-txn-ops takes a positive count") }
                let host = try hostIdentity()
                service = try FleetSync(
                    domains: domains, etcd: etcdConnection, defaults: try Self.store(domains.first ?? ""),
                    layout: FleetLayout(prefix: connection.prefix), stateDirectory: stateDirectory, logger: logger,
                    timing: FleetSync.Timing(
                        heartbeat: try seconds(heartbeat, option: "heartbeat", within: 0.01...3600),
                        keysPerTransaction: maxTransactionOperations),
                    host: host)
            } catch {
                fail(error)
            }
            let group = ServiceGroup(
                configuration: ServiceGroupConfiguration(
                    services: [.init(service: service)], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
            logger.info("syncing \(domains.joined(separator: ", ")) with \(etcd) (Ctrl-C to stop)")
            do {
                try await group.run()
            } catch {
                fail(error)
            }
        }

        /// The host's identity from the options.
        func hostIdentity() throws -> FleetHostIdentity {
            let check = healthCommand.map(HealthCheck.command) ?? healthURL.map(HealthCheck.url)
            return try FleetHostIdentity(
                id: hostID ?? FleetHostIdentity.machineName, healthCheck: check,
                leaseTime: try seconds(leaseTime, option: "lease-time", within: 0...3600),
                healthInterval: try seconds(healthInterval, option: "health-interval", within: 0...3600),
                healthTimeout: try seconds(healthTimeout, option: "health-timeout", within: 0...3600))
        }

        /// The store whose files are synced: the current user's, logging warnings only.
        static func store(_ applicationDomain: String) throws -> Defaults {
            var configuration = Defaults.Configuration(
                locations: .current, applicationDomain: applicationDomain, arguments: [], languages: [])
            configuration.logger = storeLogger
            do { return try Defaults(configuration: configuration) } catch { throw ToolError("\(error)") }
        }

        /// The store's logger: warnings only (a directory watched by polling), on standard error; the agent's own
        /// lines go through its own logger.
        static let storeLogger: Logger = {
            var logger = Logger(label: "defaults") { label in StreamLogHandler.standardError(label: label) }
            logger.logLevel = .warning
            return logger
        }()

        func printStatus() async {
            var reports = domains.map { SyncStatusReport(domain: $0, stateDirectory: resolvedStateDirectory) }
            // The programs that refuse a domain's version: this machine's from their announcements, and with
            // --etcd every live host's from its agent's health report.
            if let store = try? Self.store(domains.first ?? "") {
                for index in reports.indices {
                    reports[index].addRefusals(
                        store.refusals(inDomain: reports[index].domain), host: "this host")
                }
            }
            if connection.etcd != nil {
                do {
                    let hosts = try await FleetHosts.live(
                        etcd: try connection.connection(), layout: FleetLayout(prefix: connection.prefix))
                    for index in reports.indices {
                        for host in hosts {
                            reports[index].addRefusals(
                                host.health?.refusals(inDomain: reports[index].domain) ?? [], host: "host \(host.id)")
                        }
                    }
                } catch {
                    fail(error)
                }
            }
            if json {
                print(Output.json(reports.map(StatusText.jsonObject)))
            } else {
                print(reports.map(StatusText.text).joined(separator: "\n"), terminator: "")
            }
            if !reports.allSatisfy(\.inStep) { Foundation.exit(1) }
        }
    }

    extension EtcdOptions {
        /// The connection these options describe.
        func connection() throws -> EtcdConnection {
            guard let etcd else { throw ToolError("--etcd URLS is needed") }
            let credentials = try user.map { text throws(FleetError) in try EtcdConnection.user(fromOption: text) }
            return try EtcdConnection(
                endpoints: etcd, caCertificate: cacert, certificate: cert, privateKey: key, user: credentials)
        }
    }
#endif
