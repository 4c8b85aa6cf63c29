import ArgumentParser
import DefaultsToolSupport
import Foundation
import LiveDefaults

#if Fleet
    import LiveDefaultsFleet
#endif

/// `defaults rollout DOMAIN KEY [TYPE-FLAG] VALUE --etcd URLS [--stages …] [--bake S]`, and `--status`, `--resume`,
/// `--abort`: a key's new value given to the fleet in stages, each gated by its hosts' health.
struct RolloutCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rollout",
        abstract: "Give a key's new value to a canary, then to stages of the live hosts, rolling back on failure.",
        discussion: """
            defaults rollout DOMAIN KEY [-int|-string|… ] VALUE --etcd URLS [--stages 1,10%,50%,100%] [--bake S]
            defaults rollout --status DOMAIN [KEY] --etcd URLS [--json]
            defaults rollout --resume DOMAIN KEY --etcd URLS
            defaults rollout --abort DOMAIN KEY --etcd URLS

            The value is written as `defaults write` takes it and checked against the schema published on this \
            machine (--no-validate skips that). Each stage's hosts (counts, or percentages of the live hosts \
            that sync the domain; see `defaults hosts`) get the value in their domain file while the others keep \
            the old one; a stage passes when every host in it has reported healthy, after taking the value, for \
            the whole bake time. Then the value becomes the domain's for every host (status 0). A host that \
            reports unhealthy or dies, or a stage that does not pass within --stage-timeout plus the bake, rolls \
            every reached host back to the old value (status 1, naming the host and why). The state lives in \
            etcd: a driver that stops leaves hosts where they were; --resume continues, --abort rolls back. \
            See Docs/Fleet.md.
            """)

    @OptionGroup var connection: EtcdOptions
    @Option(help: "The stages: host counts or percentages of the live hosts, comma-separated.")
    var stages = "1,10%,50%,100%"
    @Option(help: "Seconds every host of a stage must stay healthy, once it has the value.") var bake = 60.0
    @Option(help: "Seconds a stage may take for its hosts to report the value applied (the bake comes on top).")
    var stageTimeout = 60.0
    @Flag(help: "Roll the value out even if this machine's published schema refuses it.") var noValidate = false
    @Flag(help: "Show the rollouts of the domain (or key): in progress and ended.") var status = false
    @Flag(help: "Continue the rollout of the key whose driver stopped.") var resume = false
    @Flag(help: "Roll the key's rollout back: every reached host goes back to the old value.") var abort = false
    @Flag(help: "With --status: print JSON.") var json = false
    @Argument(parsing: .allUnrecognized, help: "DOMAIN KEY [TYPE-FLAG] VALUE (DOMAIN [KEY] with --status)")
    var words: [String] = []

    func validate() throws {
        if connection.etcd == nil { throw ValidationError("Missing expected argument '--etcd <etcd>'") }
        if [status, resume, abort].filter({ $0 }).count > 1 {
            throw ValidationError("--status, --resume and --abort: give one")
        }
        if json && !status { throw ValidationError("--json goes with --status") }
        if status && !(1...2).contains(words.count) { throw ValidationError("--status takes DOMAIN [KEY]") }
        if (resume || abort) && words.count != 2 { throw ValidationError("--resume and --abort take DOMAIN KEY") }
        if !status && !resume && !abort && words.count < 3 {
            throw ValidationError("a rollout takes DOMAIN KEY and a value, as `defaults write` does")
        }
    }

    func run() async {
        #if Fleet
            do {
                let etcd = try connection.connection()
                let layout = FleetLayout(prefix: connection.prefix)
                let domain = words[0]
                try DomainName.validate(domain)
                let say = Self.reporter(onTerminal: isatty(STDOUT_FILENO) == 1)
                let record: RolloutRecord
                if status {
                    let found = try await FleetRollout.status(
                        domain: domain, key: words.count > 1 ? words[1] : nil, etcd: etcd, layout: layout)
                    print(json ? Output.json(found.map(Self.jsonObject)) : Self.text(found, domain: domain))
                    return
                } else if resume {
                    record = try await FleetRollout.resume(
                        domain: domain, key: words[1], etcd: etcd, layout: layout, progress: say)
                } else if abort {
                    record = try await FleetRollout.abort(
                        domain: domain, key: words[1], etcd: etcd, layout: layout, progress: say)
                    return
                } else {
                    record = try await start(domain: domain, etcd: etcd, layout: layout, say: say)
                }
                if record.phase == .rolledBack {
                    let host = record.failedHost.map { " (host \($0))" } ?? ""
                    fail(
                        ToolError(
                            "rollout \(record.id) of \(domain) \(record.key) rolled back\(host): \(record.reason ?? "")"
                        ))
                }
            } catch {
                fail(error)
            }
        #else
            fail(builtWithoutFleet)
        #endif
    }
}

#if Fleet
    extension RolloutCommand {
        func start(
            domain: String, etcd: EtcdConnection, layout: FleetLayout,
            say: @escaping @Sendable (FleetRollout.RolloutProgress) -> Void
        ) async throws -> RolloutRecord {
            let key = words[1]
            guard case .set(let value) = try ValueParser.parse(Array(words.dropFirst(2))) else {
                throw ToolError("a rollout sets a value: -array-add and -dict-add are not rolled out")
            }
            if !noValidate, let schema = try SyncCommand.store(domain).publishedSchema(inDomain: domain),
                let violation = schema.violation(forKey: key, value: value)
            {
                throw ToolError(
                    "the schema published for \(domain) refuses the value (--no-validate rolls it out anyway): \(violation)"
                )
            }
            let options = FleetRollout.Options(
                stages: try RolloutStage.list(stages), bake: try seconds(bake, option: "bake", within: 0...86_400),
                stageTimeout: try seconds(stageTimeout, option: "stage-timeout", within: 0...86_400))
            return try await FleetRollout.start(
                domain: domain, key: key, value: value, etcd: etcd, layout: layout, options: options, progress: say)
        }

        /// Prints a line per step; on a terminal, a bar for the stage that bakes, redrawn in place.
        static func reporter(onTerminal: Bool) -> @Sendable (FleetRollout.RolloutProgress) -> Void {
            { progress in
                switch progress {
                case .step(let line):
                    print(onTerminal ? "\r\u{1B}[K" + line : line)
                case .baking(let stage, let stages, let ready, let reached, let baked, let bake):
                    guard onTerminal else { return }
                    let width = 30
                    let ratio = bake > 0 ? min(max(baked / bake, 0), 1) : 1
                    let done = ready < reached ? 0 : Int(exactly: (ratio * Double(width)).rounded(.down)) ?? width
                    let bar = String(repeating: "#", count: done) + String(repeating: "-", count: width - done)
                    let seconds = String(format: "%.0f of %.0f s", baked, bake)
                    print(
                        "\r\u{1B}[K  stage \(stage)/\(stages) [\(bar)] \(ready)/\(reached) hosts ready, baked \(seconds)",
                        terminator: "")
                }
                fflush(nil)  // every stream: standard output is not a Sendable global
            }
        }

        static func text(_ found: [FleetRollout.Status], domain: String) -> String {
            guard !found.isEmpty else { return "no rollout of \(domain)" }
            var lines: [String] = []
            for status in found {
                let record = status.record
                var state = record.phase.rawValue
                if record.phase == .running {
                    state += status.driverRunning ? " (driver running)" : " (stopped: no driver; --resume or --abort)"
                }
                let old = record.oldPropertyList.map(Output.line) ?? "(absent)"
                let new = record.newPropertyList.map(Output.line) ?? "?"
                lines.append("\(record.id)  \(record.domain) \(record.key): \(old) -> \(new)  \(state)")
                lines.append(
                    "    stage \(min(record.stage + 1, record.stages.count)) of \(record.stages.count) (\(record.stages.joined(separator: ","))), bake \(record.bakeSeconds) s; \(record.reached.count) host\(record.reached.count == 1 ? "" : "s") reached"
                )
                for host in record.reached.keys.sorted() {
                    lines.append("    \(host): \(record.health[host] ?? "not reported yet")")
                }
                if let reason = record.reason {
                    lines.append("    stopped: \(reason)" + (record.failedHost.map { " (host \($0))" } ?? ""))
                }
            }
            return lines.joined(separator: "\n")
        }

        static func jsonObject(_ status: FleetRollout.Status) -> [String: Any] {
            let record = status.record
            var object: [String: Any] = [
                "id": record.id, "domain": record.domain, "key": record.key, "phase": record.phase.rawValue,
                "driverRunning": status.driverRunning, "stage": record.stage, "stages": record.stages,
                "bakeSeconds": record.bakeSeconds, "reached": record.reached.keys.sorted(), "health": record.health,
                "started": record.started.formatted(.iso8601), "updated": record.updated.formatted(.iso8601),
                "log": record.log, "oldValue": Output.jsonObject(record.oldPropertyList),
                "newValue": Output.jsonObject(record.newPropertyList),
            ]
            if let reason = record.reason { object["reason"] = reason }
            if let host = record.failedHost { object["failedHost"] = host }
            return object
        }
    }
#endif
