import ArgumentParser
import DefaultsToolSupport
import Foundation
import LiveDefaults

#if Fleet
    import LiveDefaultsFleet
#endif

/// `defaults history DOMAIN [KEY] --etcd URLS`: the changes etcd still holds, newest first.
struct HistoryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "history",
        abstract: "List the changes etcd still holds of a synced domain (or one key), newest first.",
        discussion: """
            Each line is one etcd revision: the key and the value it set, or (deleted), and after " — " why, \
            when the change was made with a reason (defaults write --reason, the end of a --for change) and \
            pushed by an agent (defaults sync). etcd keeps every \
            revision until it compacts its history (--auto-compaction-retention, etcdctl compact): what came \
            before is gone, and the listing says from which revision it starts. \
            `defaults rollback DOMAIN KEY --to-revision REV` writes a listed value back. See Docs/Fleet.md.
            """)

    @OptionGroup var connection: EtcdOptions
    @Option(help: "Print only the newest N changes.") var limit: Int?
    @Flag(help: "Print JSON.") var json = false
    @Argument(help: "The domain.") var domain: String
    @Argument(help: "One key of the domain (all keys when left out).") var key: String?

    func validate() throws {
        if connection.etcd == nil { throw ValidationError("Missing expected argument '--etcd <etcd>'") }
        if let limit, limit < 1 { throw ValidationError("--limit takes a number of changes, 1 or more") }
    }

    func run() async {
        #if Fleet
            do {
                try DomainName.validate(domain)
                let history = try await FleetHistory.read(
                    domain: domain, key: key, etcd: try connection.connection(),
                    layout: FleetLayout(prefix: connection.prefix))
                let changes = limit.map { Array(history.changes.prefix($0)) } ?? history.changes
                print(json ? jsonText(history, changes) : text(history, changes), terminator: "")
            } catch {
                fail(error)
            }
        #else
            fail(builtWithoutFleet)
        #endif
    }
}

#if Fleet
    extension HistoryCommand {
        func text(_ history: FleetHistory, _ changes: [FleetHistory.Change]) -> String {
            var lines: [String] = []
            if changes.isEmpty {
                lines.append(
                    "no change of \(key.map { "\(domain) \($0)" } ?? domain) since revision \(history.compactRevision ?? 1)"
                )
            } else {
                // Columns: revisions right-aligned, keys left-aligned (padded to the longest, up to 40).
                let width = changes.map { String($0.revision).count }.max() ?? 0
                let keyWidth = min(changes.map(\.key.count).max() ?? 0, 40)
                for change in changes {
                    let revision = String(change.revision)
                    let padding = String(repeating: " ", count: max(0, keyWidth - change.key.count))
                    lines.append(
                        String(repeating: " ", count: width - revision.count) + revision + "  " + change.key + padding
                            + "  " + Self.describe(change))
                }
            }
            if changes.count < history.changes.count {
                lines.append("(\(history.changes.count - changes.count) older changes not shown: --limit)")
            }
            if let compacted = history.compactRevision {
                lines.append("(etcd compacted its history at revision \(compacted): older changes are gone)")
            }
            return lines.joined(separator: "\n") + "\n"
        }

        /// The change's value, its rollout step and its reason (after ` — `, as `defaults log` shows one).
        static func describe(_ change: FleetHistory.Change) -> String {
            describeValue(change) + (change.reason.map { "  — \($0)" } ?? "")
        }

        private static func describeValue(_ change: FleetHistory.Change) -> String {
            let value: String
            if change.isDeletion {
                value = "(deleted)"
            } else if let written = change.value {
                value = Output.line(written)
            } else {
                value = "(not a property list: \(change.unreadableBytes ?? 0) bytes)"
            }
            guard let step = change.rollout else { return value }
            let hosts = step.hosts.joined(separator: ", ")
            switch step.kind {
            case .stage: return "\(value)  rollout \(step.id): \(step.detail), to \(hosts)"
            case .rolledBack: return "\(value)  rollout \(step.id) rolled back (\(step.detail)): back on \(hosts)"
            case .aborted: return "\(value)  rollout \(step.id) aborted: back on \(hosts)"
            case .completed: return "\(value)  rollout \(step.id) completed: every host"
            }
        }

        func jsonText(_ history: FleetHistory, _ changes: [FleetHistory.Change]) -> String {
            var object: [String: Any] = [
                "domain": domain, "revision": history.revision,
                "changes": changes.map { change -> [String: Any] in
                    var entry: [String: Any] = [
                        "revision": change.revision, "key": change.key, "deleted": change.isDeletion,
                    ]
                    if let value = change.value { entry["value"] = Output.jsonObject(value) }
                    if let bytes = change.unreadableBytes { entry["unreadableBytes"] = bytes }
                    if let reason = change.reason { entry["reason"] = reason }
                    if let step = change.rollout {
                        entry["rollout"] = [
                            "id": step.id, "step": step.kind.rawValue, "hosts": step.hosts, "detail": step.detail,
                        ]
                    }
                    return entry
                },
            ]
            if let key { object["key"] = key }
            if let compacted = history.compactRevision { object["compactRevision"] = compacted }
            object["omitted"] = history.changes.count - changes.count
            return Output.json(object) + "\n"
        }
    }
#endif
