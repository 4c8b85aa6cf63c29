import ArgumentParser
import DefaultsToolSupport
import Foundation

/// `defaults sync DOMAIN... --etcd URLS` and `defaults sync --status DOMAIN...` (contracts): run the program
/// `defaults-sync` with the verb and the arguments that follow it, as `git` runs `git-foo`. The fleet's HTTP stack
/// (AsyncHTTPClient, SwiftNIO, swift-nio-ssl) lives in that program only, so every other verb starts without it.
///
/// ``Entry`` hands the fleet's verbs over before the parser sees them, so `defaults sync --help` prints
/// `defaults-sync`'s own help; these commands are here for `defaults --help`'s list of verbs.
struct Sync: FleetVerb {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Keep domains in step with an etcd cluster, both ways, until interrupted; --status: are they?",
        discussion: """
            Runs the program \(SyncProgram.name), installed beside defaults (or on PATH): `defaults sync --help` \
            lists its options. See Docs/Fleet.md.
            """)

    @Argument(parsing: .captureForPassthrough, help: "DOMAIN... --etcd URLS [options] | --status DOMAIN...")
    var arguments: [String] = []

}

/// `defaults history DOMAIN [KEY] --etcd URLS` (a contract): the changes etcd holds of a synced domain, run by
/// `defaults-sync` as `sync` is.
struct History: FleetVerb {
    static let configuration = CommandConfiguration(
        commandName: "history",
        abstract: "List the changes etcd still holds of a synced domain (or one key), newest first.",
        discussion: "Runs the program \(SyncProgram.name): `defaults history --help` lists its options.")

    @Argument(parsing: .captureForPassthrough, help: "DOMAIN [KEY] --etcd URLS [options]")
    var arguments: [String] = []

}

/// `defaults rollback DOMAIN KEY --to-revision REV --etcd URLS` (a contract): a key's earlier value written back
/// through etcd, run by `defaults-sync` as `sync` is.
struct Rollback: FleetVerb {
    static let configuration = CommandConfiguration(
        commandName: "rollback",
        abstract: "Write back the value a synced key had at an earlier etcd revision, as a new change.",
        discussion: "Runs the program \(SyncProgram.name): `defaults rollback --help` lists its options.")

    @Argument(parsing: .captureForPassthrough, help: "DOMAIN KEY --to-revision REV --etcd URLS [options]")
    var arguments: [String] = []

}

/// `defaults hosts --etcd URLS`: the fleet's live hosts and their health, run by `defaults-sync` as `sync` is.
struct Hosts: FleetVerb {
    static let configuration = CommandConfiguration(
        commandName: "hosts",
        abstract: "List the fleet's live hosts (registered by their agents) and their health.",
        discussion: "Runs the program \(SyncProgram.name): `defaults hosts --help` lists its options.")

    @Argument(parsing: .captureForPassthrough, help: "--etcd URLS [--json] [options]")
    var arguments: [String] = []
}

/// `defaults rollout DOMAIN KEY VALUE --etcd URLS` (a contract), with `--status`, `--resume`, `--abort`: a value
/// given to the fleet in stages gated by health, run by `defaults-sync` as `sync` is.
struct Rollout: FleetVerb {
    static let configuration = CommandConfiguration(
        commandName: "rollout",
        abstract: "Give a key's new value to a canary, then to stages of the live hosts, rolling back on failure.",
        discussion: "Runs the program \(SyncProgram.name): `defaults rollout --help` lists its options.")

    @Argument(parsing: .captureForPassthrough, help: "DOMAIN KEY [TYPE-FLAG] VALUE --etcd URLS [options]")
    var arguments: [String] = []
}

/// A verb `defaults-sync` carries out: its arguments are passed on untouched.
protocol FleetVerb: ParsableCommand {
    var arguments: [String] { get }
}

extension FleetVerb {
    func run() {
        SyncProgram.run([Self.configuration.commandName ?? ""] + arguments)
    }
}

/// Finds and runs `defaults-sync`.
enum SyncProgram {
    static let name = "defaults-sync"
    /// The verbs `defaults-sync` carries out; it is run with the verb as its first argument.
    static let verbs: Set<String> = ["sync", "history", "rollback", "hosts", "rollout"]

    /// Replaces this process with `defaults-sync` given `arguments` (the verb first), keeping the process id, so a
    /// supervisor's SIGTERM reaches the agent itself; returns only by exiting with status 1 and a message when the
    /// program is missing or cannot run.
    static func run(_ arguments: [String]) -> Never {
        guard let path = locate() else {
            let beside = ownExecutable().map { " beside \($0) nor" } ?? ""
            fail(
                ToolError(
                    "`defaults \(arguments.first ?? "sync")` runs the program \(name), which is neither\(beside) on PATH; build it with "
                        + "`swift build -c release --traits Fleet --product \(name)` and install it beside defaults"))
        }
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        execv(path, argv)
        let reason = String(cString: strerror(errno))
        fail(ToolError("cannot run \(path): \(reason)"))
    }

    /// `defaults-sync` beside this executable (symbolic links followed), else the first on PATH.
    static func locate() -> String? {
        let files = FileManager.default
        if let own = ownExecutable() {
            let candidate = (own as NSString).deletingLastPathComponent + "/" + name
            if files.isExecutableFile(atPath: candidate) { return candidate }
        }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        for directory in path.split(separator: ":") where !directory.isEmpty {
            let candidate = "\(directory)/\(name)"
            if files.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    /// The running executable's resolved path: /proc/self/exe on Linux, else the invocation's own path when it
    /// names one.
    static func ownExecutable() -> String? {
        if let resolved = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            return resolved
        }
        let invoked = CommandLine.arguments.first ?? ""
        guard invoked.contains("/") else { return nil }
        return URL(fileURLWithPath: invoked).resolvingSymlinksInPath().path
    }
}
