import ArgumentParser
import DefaultsToolSupport
import Foundation
import LiveDefaults
import LiveDefaultsFleet
import Logging
import ServiceLifecycle
import UnixSignals

/// `defaults sync DOMAIN... --etcd URLS`: mirrors domains between this machine and etcd until SIGTERM or
/// SIGINT (status 0). The `defaults` command runs this program for its `sync` verb, with the arguments that
/// follow the verb.
@main
struct SyncCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "defaults sync",
        abstract: "Keep domains in step with an etcd cluster, both ways, until interrupted.",
        discussion: """
            Each domain's keys live in etcd under <prefix><domain>/<key> (prefix /livedefaults/), one etcd key \
            per defaults key, the value an XML property list. Local changes (any program, any editor) reach etcd \
            within milliseconds; etcd's changes are written into the local file through LiveDefaults' locked \
            merge, so other local writers lose nothing. A restart reconciles: what changed only in etcd is \
            taken, what changed only here is pushed, and when both changed etcd wins (logged as a conflict). \
            etcd being unreachable is not fatal: the agent retries, local reads and writes go on. SIGTERM and \
            SIGINT end it with status 0. See Docs/Fleet.md.
            """)

    @Option(help: "etcd's client URLs, separated by commas (tried in turn).") var etcd: String
    @Option(help: "The etcd key prefix of every domain.") var prefix = "/livedefaults/"
    @Option(help: "A PEM file of the certificate authorities of etcd's members.") var cacert: String?
    @Option(help: "A PEM file with this client's certificate.") var cert: String?
    @Option(help: "The PEM file of the client certificate's private key.") var key: String?
    @Option(help: "etcd credentials as NAME:PASSWORD.") var user: String?
    @Option(help: "Where each domain's sync state is kept (default: $XDG_CONFIG_HOME/.livedefaults-sync).")
    var stateDirectory: String?
    @Option(help: "Seconds between checks that an idle etcd member still serves.") var heartbeat = 1.0
    @Flag(help: "Log every reconnection attempt and ignored key.") var verbose = false
    @Argument(help: "The domains to keep in step.") var domains: [String]

    func run() async {
        #if Fleet
            await sync()
        #else
            // The package was built without its trait Fleet, so LiveDefaultsFleet holds no etcd client.
            fail(
                ToolError(
                    "this defaults-sync was built without fleet support; build it with "
                        + "`swift build -c release --traits Fleet --product defaults-sync` (Docs/Fleet.md)"))
        #endif
    }
}

/// Prints the error as the `defaults` command prints its own, and exits with status 1.
func fail(_ error: any Error) -> Never {
    FileHandle.standardError.write(Data("defaults: \(error)\n".utf8))
    exit(1)
}

#if Fleet
    extension SyncCommand {
        func sync() async {
            var logger = Logger(label: "defaults-sync") { label in StreamLogHandler.standardError(label: label) }
            logger.logLevel = verbose ? .debug : .info
            let service: FleetSync
            do {
                let credentials = try user.map { text throws(FleetError) in try EtcdConnection.user(fromOption: text) }
                let connection = try EtcdConnection(
                    endpoints: etcd, caCertificate: cacert, certificate: cert, privateKey: key, user: credentials)
                guard heartbeat.isFinite, heartbeat >= 0.01, heartbeat <= 3600 else {
                    throw ToolError("--heartbeat takes seconds between 0.01 and 3600")
                }
                var configuration = Defaults.Configuration(
                    locations: .current, applicationDomain: domains.first ?? "", arguments: [], languages: [])
                configuration.logger = Self.storeLogger
                let store: Defaults
                do { store = try Defaults(configuration: configuration) } catch { throw ToolError("\(error)") }
                service = try FleetSync(
                    domains: domains, etcd: connection, defaults: store, layout: FleetLayout(prefix: prefix),
                    stateDirectory: stateDirectory, logger: logger,
                    timing: FleetSync.Timing(heartbeat: .milliseconds(Int64((heartbeat * 1000).rounded()))))
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

        /// The store's logger: warnings only (a directory watched by polling), on standard error; the agent's own
        /// lines go through its own logger.
        static let storeLogger: Logger = {
            var logger = Logger(label: "defaults") { label in StreamLogHandler.standardError(label: label) }
            logger.logLevel = .warning
            return logger
        }()
    }
#endif
