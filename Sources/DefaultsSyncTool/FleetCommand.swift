import ArgumentParser
import DefaultsToolSupport
import Foundation

/// The fleet's half of the `defaults` command, a program of its own so that its HTTP stack stays out of
/// `defaults`: `defaults sync`, `defaults history`, `defaults rollback`, `defaults hosts` and `defaults rollout` run it with their verb and arguments
/// (`defaults-sync sync …`); run alone, a first argument that is no verb is `sync`'s.
@main
struct FleetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "defaults",
        abstract: "Domains kept in step across machines through etcd: sync, status, history, rollback, hosts, rollout.",
        subcommands: [
            SyncCommand.self, HistoryCommand.self, RollbackCommand.self, HostsCommand.self, RolloutCommand.self,
        ],
        defaultSubcommand: SyncCommand.self)
}

/// How to reach etcd, as etcdctl spells it; every fleet verb shares it.
struct EtcdOptions: ParsableArguments {
    @Option(help: "etcd's client URLs, separated by commas (tried in turn).") var etcd: String?
    @Option(help: "The etcd key prefix of every domain.") var prefix = "/livedefaults/"
    @Option(help: "A PEM file of the certificate authorities of etcd's members.") var cacert: String?
    @Option(help: "A PEM file with this client's certificate.") var cert: String?
    @Option(help: "The PEM file of the client certificate's private key.") var key: String?
    @Option(help: "etcd credentials as NAME:PASSWORD.") var user: String?
}

/// Seconds given to an option as a duration (to the millisecond); not a number, or outside `range`, is an
/// error naming the option and the range.
func seconds(_ value: Double, option: String, within range: ClosedRange<Double>) throws -> Duration {
    guard value.isFinite, range.contains(value) else {
        // The bounds are the program's own: whole ones shown without a fraction.
        func shown(_ bound: Double) -> String { bound == bound.rounded() ? String(Int64(bound)) : String(bound) }
        throw ToolError("--\(option) takes seconds between \(shown(range.lowerBound)) and \(shown(range.upperBound))")
    }
    return .milliseconds(Int64((value * 1000).rounded()))
}

/// The message of a program built without the package trait Fleet, whose LiveDefaultsFleet holds no etcd client.
let builtWithoutFleet = ToolError(
    "this defaults-sync was built without fleet support; build it with "
        + "`swift build -c release --traits Fleet --product defaults-sync` (Docs/Fleet.md)")
