import ArgumentParser
import DefaultsToolSupport
import Foundation
import LiveDefaults

/// `defaults log DOMAIN [KEY] [--limit N] [--json]`: who changed what in a domain's file, newest first.
struct Log: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "log",
        abstract: "List the changes of a domain's file, newest first: when, which key, from what, to what, and who.",
        discussion: """
            Every version a LiveDefaults writer makes is recorded with the writer: a program through the \
            library or this command (local: executable, pid, uid), or the fleet agent (fleet: its etcd \
            revision). A version nobody recorded — an editor, another tool — is recorded as external by the \
            first LiveDefaults process that reads it, with the keys that changed. The log lives beside the \
            domain's file and keeps its newest 128 to 512 KiB (Docs/OnDisk.md). A version a reading program's \
            validator refused is followed by who refused it and why. Keys the published schema marks \
            secret print as <secret> unless --show-secrets is given.
            """)

    @OptionGroup var host: HostOptions
    @OptionGroup var secrets: SecretOptions
    @Option(help: "Print only the newest N changes.") var limit: Int?
    @Flag(help: "Print JSON.") var json = false
    @Argument(help: "A domain name, -g for the global domain, or a path to a plist file.") var domain: String
    @Argument(help: "One key of the domain (all keys when left out).") var key: String?

    func validate() throws {
        if let limit, limit < 1 { throw ValidationError("--limit takes a number of changes, 1 or more") }
    }

    func run() {
        perform {
            let target = try DomainTarget(domain, host: host)
            // Opening the domain records a version no LiveDefaults writer made, if nobody noticed it yet: the
            // log then shows it.
            let store = try target.store()
            _ = try? store.contents()
            // One more than shown, to say that older ones exist.
            let shown = limit ?? .max
            var changes = store.defaults.loggedChanges(
                inDomain: target.name, layer: target.layer, key: key, limit: shown == .max ? .max : shown + 1)
            let more = changes.count > shown
            if more { changes.removeLast() }
            let schema = try? target.schema()
            if json {
                emit(
                    Output.json(ChangeLogText.json(changes, domain: target.name) { secrets.hides($0, schema: schema) }))
                return
            }
            guard !changes.isEmpty else {
                return emit("no change of \(key.map { "\(target.display) \($0)" } ?? target.display) is logged")
            }
            for line in ChangeLogText.lines(changes, hiding: { secrets.hides($0, schema: schema) }) { emit(line) }
            if more { emit("(older changes not shown: --limit)") }
        }
    }
}

/// A domain's logged changes as text and JSON, for `defaults log` and `defaults doctor`; the values of the keys
/// `hidden` says are secret print as `<secret>`.
enum ChangeLogText {
    /// One line a change: time, key (padded to the longest, up to 40), old → new, origin and writer; after the
    /// last change shown of a version, a line for each process that refused it.
    static func lines(_ changes: [LoggedChange], hiding hidden: (String) -> Bool) -> [String] {
        let keyWidth = min(changes.map(\.key.count).max() ?? 0, 40)
        var lines: [String] = []
        for (index, change) in changes.enumerated() {
            let padding = String(repeating: " ", count: max(0, keyWidth - change.key.count))
            let values =
                describe(change.oldValue, hidden: hidden(change.key)) + " → "
                + describe(change.newValue, hidden: hidden(change.key))
            lines.append("\(time(change.time))  \(change.key)\(padding)  \(values)  \(who(change))")
            // Changes are newest first, a version's together: its refusals follow the last of them.
            let versionEnds = index + 1 == changes.count || changes[index + 1].version != change.version
            guard versionEnds else { continue }
            for refusal in change.refusals {
                lines.append(
                    "  refused by \(refusal.executable) (pid \(refusal.processID), uid \(refusal.userID.map(String.init) ?? "unknown")) at \(time(refusal.time)): \(refusal.reason)"
                )
            }
        }
        return lines
    }

    /// `local: api-server (pid 4242, uid 1000)`, `fleet: defaults (pid 31, uid 0, revision 812)`, `external`.
    static func who(_ change: LoggedChange) -> String {
        guard let executable = change.executable else { return change.origin.rawValue }
        var details: [String] = []
        if let pid = change.processID { details.append("pid \(pid)") }
        if let uid = change.userID { details.append("uid \(uid)") }
        if let revision = change.revision { details.append("revision \(revision)") }
        let reason = change.reason.map { " — \($0)" } ?? ""
        return "\(change.origin.rawValue): \(executable) (\(details.joined(separator: ", ")))\(reason)"
    }

    static func describe(_ value: LoggedChange.Value, hidden: Bool) -> String {
        switch value {
        case .absent: "(absent)"
        case .unknown: "(unknown)"
        case _ where hidden: "<secret>"
        case .value(let value): Output.line(value)
        case .summary(let type, let size): "(\(type), \(size) bytes)"
        }
    }

    static func json(_ changes: [LoggedChange], domain: String, hiding hidden: (String) -> Bool) -> [String: Any] {
        func value(_ value: LoggedChange.Value, key: String) -> Any {
            switch value {
            case .absent: NSNull()
            case .unknown: ["unknown": true]
            case _ where hidden(key): "<secret>"
            case .value(let value): Output.jsonObject(value)
            case .summary(let type, let size): ["type": type, "size": size] as [String: Any]
            }
        }
        return [
            "domain": domain,
            "changes": changes.map { change -> [String: Any] in
                var object: [String: Any] = [
                    "time": time(change.time), "origin": change.origin.rawValue, "key": change.key,
                    "old": value(change.oldValue, key: change.key), "new": value(change.newValue, key: change.key),
                ]
                if let executable = change.executable { object["executable"] = executable }
                if let pid = change.processID { object["pid"] = Int(pid) }
                if let uid = change.userID { object["uid"] = Int(uid) }
                if let revision = change.revision { object["revision"] = revision }
                if let reason = change.reason { object["reason"] = reason }
                object["version"] = change.version.description
                if !change.refusals.isEmpty {
                    object["refusals"] = change.refusals.map { refusal -> [String: Any] in
                        var fields: [String: Any] = [
                            "time": time(refusal.time), "executable": refusal.executable,
                            "pid": Int(refusal.processID), "reason": refusal.reason,
                        ]
                        // The change log records every refusing reader's user.
                        if let user = refusal.userID { fields["uid"] = Int(user) }
                        return fields
                    }
                }
                return object
            },
        ]
    }

    /// ISO 8601 in UTC with milliseconds: changes a few milliseconds apart stay apart.
    static func time(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }
}
