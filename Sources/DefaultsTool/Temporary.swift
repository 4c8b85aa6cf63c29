import ArgumentParser
import DefaultsToolSupport
import Foundation
import LiveDefaults

/// `--for DURATION` on `write`, `merge` and `delete`: the change is made at once and undone at its end — each key
/// it changed returns to its value before, unless someone changed the key again meanwhile.
struct TemporaryOptions: ParsableArguments {
    @Option(
        name: .customLong("for"),
        help: ArgumentHelp(
            "Make the change temporary: after this long (90s, 30m, 2h, 1d, 1h30m) the keys it changed return to their "
                + "values before.",
            valueName: "duration"))
    var text: String?

    func validate() throws {
        if let text { _ = try Self.duration(text) }
    }

    /// How long the change lasts; nil for a permanent one.
    func lasting() throws -> Duration? {
        try text.map(Self.duration)
    }

    /// The duration `text` spells, or the command's usage error.
    static func duration(_ text: String) throws(ValidationError) -> Duration {
        do throws(ToolError) { return try DurationText.parse(text) } catch { throw ValidationError(error.description) }
    }

    /// Tells when the change made for `duration` ends (on standard output).
    static func announce(_ duration: Duration, keys: some Collection<String>) {
        let end = Date().addingTimeInterval(Double(duration.components.seconds))
        let names = keys.sorted().joined(separator: ", ")
        print(
            "temporary for \(DurationText.describe(duration)), until \(end.formatted(.iso8601)): then \(names) "
                + "return\(keys.count == 1 ? "s" : "") to the value\(keys.count == 1 ? "" : "s") before")
    }
}

extension ToolStore {
    /// Notes on standard error, for a read, each of `keys` (every key when nil) that a temporary change holds: when
    /// it ends and the value it returns to (`<secret>` for a key the schema keeps secret, unless `--show-secrets`).
    /// Standard output stays the value alone, for scripts.
    func notePendingReverts(of keys: Set<String>?, masking secrets: SecretOptions, schema: DomainSchema?) {
        let report = TemporaryReport(store: self) { value, key in
            Output.text(secrets.masked(value, key: key, schema: schema))
        }
        if let unreadable = report.unreadable {
            FileHandle.standardError.write(Data("defaults: warning: \(unreadable)\n".utf8))
        }
        for line in report.keyLines(of: keys) {
            FileHandle.standardError.write(Data("defaults: note: \(line)\n".utf8))
        }
    }
}

/// The temporary changes of a domain still to undo, as `read` notes them and `doctor` reports them.
struct TemporaryReport {
    var pending: [PendingRevert] = []
    /// Why the pending reverts cannot be read, if they cannot.
    var unreadable: String?
    var now = Date()
    /// A value as shown: masked when the schema keeps its key secret.
    var shown: (PropertyList, String) -> String

    /// - Parameter shown: A value as shown (masked when the schema keeps its key secret); `doctor` masks always.
    init(store: ToolStore, shown: @escaping (PropertyList, String) -> String) {
        do {
            pending = try store.defaults.pendingReverts(inDomain: store.target.name, layer: store.target.layer)
        } catch {
            unreadable = "\(error)"
        }
        self.shown = shown
    }

    /// The report of `store`'s domain with the values of keys `schema` keeps secret shown as `<secret>` (`doctor`,
    /// `readers`: no `--show-secrets` there).
    init(store: ToolStore, masking schema: DomainSchema?) {
        self.init(store: store) { value, key in
            schema?.keys[key]?.isSecret == true ? "<secret>" : Output.text(value)
        }
    }

    /// One line per key a temporary change holds, among `keys` (every key when nil), by expiry then name: "KEY is
    /// temporary (reason): at T, in 29m58s, it returns to V unless changed again".
    func keyLines(of keys: Set<String>? = nil) -> [String] {
        pending.sorted { $0.expiry < $1.expiry }.flatMap { revert in
            revert.keys.sorted { $0.key < $1.key }.filter { keys?.contains($0.key) ?? true }.map { key, change in
                let left = Duration.seconds(max(0, revert.expiry.timeIntervalSince(now)).rounded(.up))
                let reason = revert.reason.map { " (\($0))" } ?? ""
                let back = change.before.map { shown($0, key) } ?? "absent"
                return "\(key) is temporary\(reason): at \(revert.expiry.formatted(.iso8601)), in "
                    + "\(DurationText.describe(left)), it returns to \(back) unless changed again"
            }
        }
    }

    /// How long after its expiry a change still pending is a problem: every process that may write the domain and
    /// has it open undoes it within a second or so.
    static let overdue: TimeInterval = 60

    /// What `doctor` lists.
    var lines: [String] {
        let keyLines = keyLines()
        return keyLines.isEmpty ? [] : ["temporary changes still to undo:"] + keyLines.map { "  " + $0 }
    }

    /// An unreadable file, and a change overdue: nobody who may write the domain opened it since its expiry (this
    /// command opened it and could not write it).
    var problems: [String] {
        var problems = unreadable.map { ["the pending reverts cannot be read: \($0)"] } ?? []
        for revert in pending where now.timeIntervalSince(revert.expiry) > Self.overdue {
            problems.append(
                "the temporary change of \(revert.keys.keys.sorted().joined(separator: ", ")) expired at "
                    + "\(revert.expiry.formatted(.iso8601)) and is not undone: this process may not write the domain")
        }
        return problems
    }

    /// As JSON: each change with its version, times, reason and keys (values as `read --json` shows them).
    var jsonObject: [[String: Any]] {
        pending.map { revert in
            var object: [String: Any] = [
                "version": revert.version.description, "made": revert.made.formatted(.iso8601),
                "expires": revert.expiry.formatted(.iso8601),
                "keys": Dictionary(
                    uniqueKeysWithValues: revert.keys.map { key, change in
                        var values: [String: Any] = [:]
                        values["before"] = change.before.map { shown($0, key) }
                        values["set"] = change.set.map { shown($0, key) }
                        return (key, values)
                    }),
            ]
            object["reason"] = revert.reason
            return object
        }
    }
}
