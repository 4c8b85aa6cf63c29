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
    /// it ends and the value it returns to (`<secret>` for a key the schema keeps secret, unless `show` says).
    /// Standard output stays the value alone, for scripts.
    func notePendingReverts(of keys: Set<String>?, masking secrets: SecretOptions, schema: DomainSchema?) {
        let pending: [PendingRevert]
        do { pending = try defaults.pendingReverts(inDomain: target.name, layer: target.layer) } catch {
            FileHandle.standardError.write(Data("defaults: warning: \(error)\n".utf8))
            return
        }
        let now = Date()
        for revert in pending {
            let left = Duration.seconds(max(0, revert.expiry.timeIntervalSince(now)).rounded(.up))
            for (key, change) in revert.keys.sorted(by: { $0.key < $1.key }) where keys?.contains(key) ?? true {
                let back = change.before.map { Output.text(secrets.masked($0, key: key, schema: schema)) }
                let reason = revert.reason.map { " (\($0))" } ?? ""
                FileHandle.standardError.write(
                    Data(
                        ("defaults: note: \(key) is temporary\(reason): at \(revert.expiry.formatted(.iso8601)), in "
                            + "\(DurationText.describe(left)), it returns to \(back ?? "absent") unless changed again\n")
                            .utf8))
            }
        }
    }
}
