import ArgumentParser
import DefaultsToolSupport
import Foundation
import LiveDefaults

/// `defaults doctor [domain [key]]`: why a change did not arrive — how changes are watched, which files make
/// up a domain, and where a key's value comes from.
struct Doctor: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doctor",
        abstract: "Explain what the watcher sees and where each value comes from (exit 1 when something is wrong).",
        discussion: """
            Without a domain: the watcher (inotify or polling, and why) and the inotify limits with this \
            user's use of them. With a domain: every layer's file (path, symbolic links and what they resolve \
            to, whether it exists, can be read and parses, its key count, how it is watched), for the domain \
            and the global domain. With a key: the effective value, the layer it comes from and what that layer \
            hides. The temporary changes still to undo (write --for), each key with when it returns and to \
            what. With a published schema: the keys of the domain's files it does not declare, each with the \
            declared key it most likely meant. Exit status 1 when a file does not parse or cannot be read, a \
            link points nowhere or loops, the inotify watch limit is reached, a key is not declared, or a temporary \
            change is a minute past its end and not undone.
            """)

    @OptionGroup var host: HostOptions
    @Flag(help: "Print one JSON object.") var json = false
    @Argument var domain: String?
    @Argument(help: "Explain this key's value.") var key: String?

    func run() throws {
        var report = DoctorReport()
        if let domain {
            let target: DomainTarget
            let store: ToolStore
            do {
                target = try DomainTarget(domain, host: host)
                store = try target.store(watching: .automatic)
            } catch {
                fail(error)
            }
            var domains = [target.name]
            if target.name != Defaults.globalDomain { domains.append(Defaults.globalDomain) }
            let mountPoints = FileReport.mountPoints()
            for name in domains {
                for layer in PreferenceLayer.searchOrder {
                    report.files.append(
                        FileReport(
                            domain: name, layer: layer, store: store.defaults, target: target, mountPoints: mountPoints)
                    )
                }
            }
            if let key {
                report.key = KeyReport(
                    key: key, files: report.files,
                    readers: store.defaults.readers(inDomain: target.name, layer: target.layer))
            }
            report.readers = ReadersReport(
                domain: target.display,
                readers: store.defaults.readers(inDomain: target.name, layer: target.layer).filter {
                    $0.processID != ProcessInfo.processInfo.processIdentifier
                },
                onDisk: store.defaults.versionOnDisk(inDomain: target.name, layer: target.layer))
            report.recentChanges = RecentChanges(
                domain: target.name,
                changes: store.defaults.loggedChanges(
                    inDomain: target.name, layer: target.layer, key: key, limit: RecentChanges.limit),
                schema: try? target.schema())
            report.temporary = TemporaryReport(store: store, masking: try? target.schema())
            do {
                if let schema = try target.schema() {
                    report.undeclared = UndeclaredKeyReport.find(
                        schema: schema, files: report.files.filter { $0.domain == target.name })
                }
            } catch {
                report.schemaProblem = "\(error)"
            }
        }
        // After the files were looked at (other programs' inotify use; this process's own is left out).
        report.watcher = WatcherReport.current()
        emit(json ? Output.json(report.jsonObject) : report.text)
        if !report.problems.isEmpty { throw ExitCode(1) }
    }
}

/// Everything `doctor` found.
struct DoctorReport {
    var watcher = WatcherReport()
    var files: [FileReport] = []
    var key: KeyReport?
    /// Keys of the domain's files its published schema does not declare (none without a schema).
    var undeclared: [UndeclaredKeyReport] = []
    /// Why the published schema could not be read, if it could not.
    var schemaProblem: String?
    /// The newest changes the domain's change log records (of the key, when one is asked about).
    var recentChanges: RecentChanges?
    /// The programs reading the domain that do not run the version on disk.
    var readers: ReadersReport?
    /// The domain's temporary changes still to undo.
    var temporary: TemporaryReport?

    var problems: [String] {
        watcher.problems + files.flatMap(\.problems) + undeclared.map(\.problem) + (schemaProblem.map { [$0] } ?? [])
            + (readers?.problems ?? []) + (temporary?.problems ?? [])
    }

    var text: String {
        var lines = watcher.lines
        if let first = files.first {
            lines.append("")
            lines.append(
                "files of \(first.domain)\(files.contains { $0.domain != first.domain } ? " and the global domain" : ""), highest precedence first:"
            )
            for file in files { lines += file.lines }
        }
        if let key { lines.append(""); lines += key.lines }
        if let readers, !readers.lines.isEmpty { lines.append(""); lines += readers.lines }
        if let temporary, !temporary.lines.isEmpty { lines.append(""); lines += temporary.lines }
        if let recentChanges { lines.append(""); lines += recentChanges.lines }
        if let first = undeclared.first {
            lines.append("")
            lines.append(
                "keys the published schema of \(first.domain) does not declare (nothing that reads its keys reads them):"
            )
            lines += undeclared.map(\.line)
        }
        lines.append("")
        lines.append(
            problems.isEmpty ? "no problem found" : "problems:\n" + problems.map { "  - " + $0 }.joined(separator: "\n")
        )
        return lines.joined(separator: "\n")
    }

    var jsonObject: [String: Any] {
        var object: [String: Any] = ["watcher": watcher.jsonObject, "problems": problems]
        if !files.isEmpty { object["files"] = files.map(\.jsonObject) }
        if let key { object["key"] = key.jsonObject }
        if let readers { object["readers"] = Output.jsonArray(readers: readers) }
        if !files.isEmpty { object["undeclaredKeys"] = undeclared.map(\.jsonObject) }
        if let recentChanges { object["recentChanges"] = recentChanges.jsonObject }
        if let temporary { object["temporaryChanges"] = temporary.jsonObject }
        return object
    }
}

/// The newest changes of the domain's file, from its change log (`defaults log` has them all); secrets masked.
struct RecentChanges {
    static let limit = 5
    var domain: String
    var changes: [LoggedChange]
    var schema: DomainSchema?

    var lines: [String] {
        guard !changes.isEmpty else { return ["no change of \(domain)'s file is logged"] }
        return ["last changes of \(domain)'s file, newest first (defaults log \(domain) lists them all):"]
            + ChangeLogText.lines(changes, hiding: hidden).map { "  " + $0 }
    }

    var jsonObject: Any {
        ChangeLogText.json(changes, domain: domain, hiding: hidden)["changes"] ?? []
    }

    /// Secret keys print as `<secret>` (doctor has no --show-secrets: `defaults log` does).
    private func hidden(_ key: String) -> Bool { schema?.keys[key]?.isSecret == true }
}

/// A key in the domain's files that its published schema does not declare: a typo, most often.
struct UndeclaredKeyReport {
    var domain: String
    var key: String
    /// The declared key it most likely meant, if one is near.
    var suggestion: String?
    /// The files that hold it.
    var paths: [String]

    /// The undeclared keys of `files` (the domain's own, highest precedence first), in name order.
    static func find(schema: DomainSchema, files: [FileReport]) -> [UndeclaredKeyReport] {
        var paths: [String: [String]] = [:]
        for file in files {
            for key in schema.undeclaredKeys(in: (file.contents ?? [:]).keys) {
                paths[key, default: []].append(file.path)
            }
        }
        return paths.keys.sorted().map { key in
            UndeclaredKeyReport(
                domain: schema.domain, key: key, suggestion: schema.nearestKey(to: key), paths: paths[key] ?? [])
        }
    }

    var problem: String { "\(DefaultsError.undeclaredKey(key, domain: domain, suggestion: suggestion))" }

    var line: String {
        "  \(key)" + (suggestion.map { " (did you mean \($0)?)" } ?? "") + ": in " + paths.joined(separator: ", ")
    }

    var jsonObject: [String: Any] {
        var object: [String: Any] = ["key": key, "files": paths]
        if let suggestion { object["suggestion"] = suggestion }
        return object
    }
}
