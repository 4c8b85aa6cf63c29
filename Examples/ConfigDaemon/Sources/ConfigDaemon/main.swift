// A daemon that reconfigures itself while it runs. Start it, then from another shell:
//
//   defaults write com.example.daemon Interval -float 0.2
//   defaults write com.example.daemon Message "still here"
//   defaults write com.example.daemon Paused -bool YES
//   kill -HUP <pid>          # re-read the settings from disk now
//
// It runs as a swift-service-lifecycle ServiceGroup: the daemon's loops are one service, DefaultsService
// another. SIGINT (Ctrl-C) or SIGTERM shuts the group down gracefully: the loops end, pending writes are
// flushed, exit status 0. SIGHUP makes the daemon re-read its settings, as daemons are expected to.
import DaemonCore
import Foundation
import LiveDefaults
import LiveDefaultsService
import Logging
import ServiceLifecycle

let configuration = Defaults.Configuration(
    applicationDomain: Daemon.domain, arguments: Array(CommandLine.arguments.dropFirst()))
let defaults = try Defaults(configuration: configuration)
let daemon = Daemon(defaults: defaults) { line in
    print(line)
    fflush(nil)
}
// DefaultsService first: services shut down in reverse order, so it flushes after the daemon has stopped.
let group = ServiceGroup(
    services: [DefaultsService(defaults), daemon], gracefulShutdownSignals: [.sigterm, .sigint],
    logger: Logger(label: "config-daemon"))
try await group.run()
