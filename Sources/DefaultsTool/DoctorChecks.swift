import ArgumentParser
import DefaultsToolSupport
import Foundation
import LiveDefaults

/// How changes are watched in this environment, and the kernel's inotify limits.
struct WatcherReport {
    var method = "inotify"
    var reason = "LIVEDEFAULTS_WATCHER is not set"
    var limits: [String: Int] = [:]
    var instancesInUse = 0
    var watchesInUse = 0

    static func current() -> WatcherReport {
        var report = WatcherReport()
        if !Defaults.inotifyIsCompiledIn {
            // Whatever LIVEDEFAULTS_WATCHER says (`none` included, which is only an unknown setting).
            report.method = "polling"
            report.reason = "this build has no inotify (LIVEDEFAULTS_POLLING_ONLY): every directory is polled"
        } else {
            switch ProcessInfo.processInfo.environment["LIVEDEFAULTS_WATCHER"] {
            case "poll":
                report.method = "polling"
                report.reason = "LIVEDEFAULTS_WATCHER=poll"
            case "inotify":
                report.reason = "LIVEDEFAULTS_WATCHER=inotify: inotify even on network file systems"
            case let other?:
                report.reason = "LIVEDEFAULTS_WATCHER=\(other) is not a known setting (inotify or poll); inotify"
            case nil:
                report.reason = "the default; directories on network or FUSE file systems are polled"
            }
        }
        for name in ["max_user_instances", "max_user_watches", "max_queued_events"] {
            if let text = try? String(contentsOfFile: "/proc/sys/fs/inotify/\(name)", encoding: .utf8),
                let value = Int(text.trimmingCharacters(in: .whitespacesAndNewlines))
            {
                report.limits[name] = value
            }
        }
        (report.instancesInUse, report.watchesInUse) = inotifyUse(ofUser: getuid())
        return report
    }

    /// The inotify instances and watches this user's other processes hold (those whose `/proc` entries this
    /// process may read; not the doctor itself, which holds one briefly): the descriptors that link to
    /// `anon_inode:inotify`, and the `inotify wd:` lines of their `fdinfo`.
    static func inotifyUse(ofUser user: uid_t) -> (instances: Int, watches: Int) {
        var instances = 0
        var watches = 0
        let processes = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        let own = String(getpid())
        for pid in processes where pid.allSatisfy(\.isNumber) && pid != own {
            var info = stat()
            guard stat("/proc/\(pid)", &info) == 0, info.st_uid == user else { continue }
            let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
            for descriptor in descriptors {
                guard SymlinkChainText.destination(of: "/proc/\(pid)/fd/\(descriptor)") == "anon_inode:inotify" else {
                    continue
                }
                instances += 1
                let details = procText("/proc/\(pid)/fdinfo/\(descriptor)")
                watches += details.split(separator: "\n").filter { $0.hasPrefix("inotify wd:") }.count
            }
        }
        return (instances, watches)
    }

    var problems: [String] {
        var problems: [String] = []
        if let limit = limits["max_user_watches"], watchesInUse >= limit {
            problems.append(
                "this user holds \(watchesInUse) inotify watches, the limit (fs.inotify.max_user_watches = \(limit)): new directories are polled; raise it with sysctl"
            )
        }
        if let limit = limits["max_user_instances"], instancesInUse >= limit {
            problems.append(
                "this user holds \(instancesInUse) inotify instances, the limit (fs.inotify.max_user_instances = \(limit)): new programs poll; raise it with sysctl"
            )
        }
        return problems
    }

    var lines: [String] {
        let limit = { (name: String) in self.limits[name].map(String.init) ?? "?" }
        return [
            "watcher: \(method) (\(reason))",
            "inotify: this user's other processes hold \(instancesInUse) of \(limit("max_user_instances")) instances and \(watchesInUse) of \(limit("max_user_watches")) watches (fs.inotify.max_user_instances, max_user_watches; max_queued_events \(limit("max_queued_events")))",
        ]
    }

    var jsonObject: [String: Any] {
        [
            "method": method, "reason": reason, "limits": limits, "instancesInUse": instancesInUse,
            "watchesInUse": watchesInUse,
        ]
    }
}

/// One layer's file of a domain.
struct FileReport {
    var domain: String
    var layer: PreferenceLayer
    var path: String
    var chain: SymlinkChain
    var exists: Bool
    var contents: [String: PropertyList]?
    var failure: DefaultsError?
    var watch: FileWatchStatus
    /// Whether the file is a mount point of its own (a bind mount, as Kubernetes makes for a `subPath`).
    var isMountPoint: Bool

    init(
        domain: String, layer: PreferenceLayer, store: Defaults, target: DomainTarget, mountPoints: Set<String>
    ) {
        self.domain = domain
        self.layer = layer
        path = target.locations.path(forDomain: domain, layer: layer)
        chain = SymlinkChain.resolve(path)
        exists = FileManager.default.fileExists(atPath: path)
        failure = store.problem(inDomain: domain, layer: layer)
        contents = failure == nil ? store.persistentDomainValues(forName: domain, layer: layer) : nil
        watch = Defaults.watchStatus(ofPath: path)
        isMountPoint = mountPoints.contains(path) || mountPoints.contains(chain.target)
    }

    /// Every mount point of this process's mount namespace (`/proc/self/mountinfo`, field 5, with the
    /// kernel's octal escapes of space, tab, newline and backslash undone).
    static func mountPoints() -> Set<String> {
        let text = procText("/proc/self/mountinfo")
        var points: Set<String> = []
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count > 4 else { continue }
            var point = String(fields[4])
            for (escaped, plain) in [("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")] {
                point = point.replacingOccurrences(of: escaped, with: plain)
            }
            points.insert(point)
        }
        return points
    }

    var isLinkToNothing: Bool { !chain.isPlain && !exists }

    var problems: [String] {
        var problems: [String] = []
        if let failure {
            problems.append(
                "\(failure) (programs that read it before it broke keep serving that last known good version)"
            )
        }
        if let problem = chain.problem { problems.append("\(path): \(problem)") }
        if isMountPoint {
            problems.append(
                "\(path) is a mount point of its own (a bind mount, as a Kubernetes subPath mount is): it was fixed when it was mounted, and updates of its source (a ConfigMap) never reach it; mount the whole volume as a directory instead"
            )
        }
        if isLinkToNothing && chain.problem == nil {
            problems.append(
                "\(path) is a symbolic link to \(chain.target), which does not exist: the layer reads as empty")
        }
        return problems
    }

    var state: String {
        if failure != nil { return "does not parse or cannot be read" }
        if isLinkToNothing { return "link points nowhere" }
        guard exists else { return "does not exist" }
        let count = contents?.count ?? 0
        return "exists, parses, \(count) key\(count == 1 ? "" : "s")"
    }

    var watching: String {
        let method = watch.isPolled ? "polled (\(watch.pollReason ?? "inotify unavailable"))" : "watched by inotify"
        return chain.isPlain
            ? method : "\(method), following \(chain.links.count) link\(chain.links.count == 1 ? "" : "s")"
    }

    var lines: [String] {
        var lines = ["  \(domain) \(layer.rawValue): \(path)"]
        for link in chain.links {
            lines.append("      link \(link) -> \(SymlinkChainText.destination(of: link))")
        }
        if !chain.isPlain { lines.append("      resolves to \(chain.target)") }
        lines.append("      \(state); \(watching)")
        if isMountPoint { lines.append("      a mount point of its own (subPath?): never updated by its volume") }
        if let failure { lines.append("      \(failure)") }
        return lines
    }

    var jsonObject: [String: Any] {
        var object: [String: Any] = [
            "domain": domain, "layer": layer.rawValue, "path": path, "exists": exists,
            "links": chain.links.map { ["link": $0, "to": SymlinkChainText.destination(of: $0)] },
            "resolvesTo": chain.target, "polled": watch.isPolled, "parses": failure == nil,
            "isMountPoint": isMountPoint,
        ]
        if let contents { object["keyCount"] = contents.count }
        if let failure { object["error"] = "\(failure)" }
        if let reason = watch.pollReason { object["pollReason"] = reason }
        if let problem = chain.problem { object["linkProblem"] = problem }
        return object
    }
}

/// A file of `/proc` read to its end (they report a size of 0, so a read by size sees nothing); empty when
/// it cannot be read.
func procText(_ path: String) -> String {
    guard let handle = FileHandle(forReadingAtPath: path) else { return "" }
    defer { try? handle.close() }
    return String(decoding: (try? handle.readToEnd()) ?? Data(), as: UTF8.self)
}

enum SymlinkChainText {
    /// What a link says, as written in it ("?" when it cannot be read). readlink(2) itself: Foundation's
    /// `destinationOfSymbolicLink` fails on `/proc`'s descriptor links such as `anon_inode:inotify`.
    static func destination(of link: String) -> String {
        var buffer = [UInt8](repeating: 0, count: 4097)
        let count = buffer.withUnsafeMutableBufferPointer { raw in
            raw.withMemoryRebound(to: CChar.self) { readlink(link, $0.baseAddress!, 4096) }
        }
        return count < 0 ? "?" : String(decoding: buffer[0..<count], as: UTF8.self)
    }
}

/// Where one key's value comes from.
struct KeyReport {
    var key: String
    /// Every layer holding the key, highest precedence first.
    var holders: [(file: FileReport, value: PropertyList)]
    /// Unreadable layers above the effective one: programs that read them before they broke may still take
    /// the key from their last known good version.
    var unreadableAbove: [FileReport]

    /// The running programs whose environment sets the key (their announcements pin it), one sentence each:
    /// whatever the files say, those programs read their environment's value.
    var pinnedBy: [String]
    /// The same, for JSON.
    private var pins: [[String: Any]]

    /// The precedence of the search list: forced (managed) layers first, then the rest, each domain in order;
    /// `readers`, the programs that read the domain, for the keys their environment pins.
    init(key: String, files: [FileReport], readers: [ReadingProcess] = []) {
        self.key = key
        let pinning = readers.filter { $0.pinnedKeys[key] != nil }
        pinnedBy = pinning.map { reader in
            "process \(reader.processID) (\(reader.executable)) reads it from \(reader.pinnedKeys[key] ?? "?"), not from a file"
        }
        pins = pinning.map { reader in
            ["pid": Int(reader.processID), "executable": reader.executable, "source": reader.pinnedKeys[key] ?? ""]
        }
        let ordered = files.filter { $0.layer.isManaged } + files.filter { !$0.layer.isManaged }
        holders = ordered.compactMap { file in file.contents?[key].map { (file, $0) } }
        let effective = holders.first.flatMap { holder in ordered.firstIndex { $0.path == holder.file.path } }
        unreadableAbove = ordered[..<(effective ?? ordered.endIndex)].filter { $0.failure != nil }
    }

    private var unreadableLines: [String] {
        unreadableAbove.map {
            "  but \($0.domain) \($0.layer.rawValue) (\($0.path)) cannot be read: programs that read it before it broke may still take \(key) from their last known good version of it"
        }
    }

    private var pinnedLines: [String] { pinnedBy.map { "  but \($0)" } }

    var lines: [String] {
        guard let effective = holders.first else {
            return ["key \(key): in no file (a program reads its registered default)"] + unreadableLines + pinnedLines
        }
        var lines = [
            "key \(key) = \(Output.line(effective.value))",
            "  from \(effective.file.domain) \(effective.file.layer.rawValue) (\(effective.file.path))"
                + (effective.file.layer.isManaged ? ", forced: writes to the user's layer cannot change it" : ""),
        ]
        for hidden in holders.dropFirst() {
            lines.append(
                "  hides \(Output.line(hidden.value)) in \(hidden.file.domain) \(hidden.file.layer.rawValue) (\(hidden.file.path))"
            )
        }
        return lines + unreadableLines + pinnedLines
    }

    var jsonObject: [String: Any] {
        var object: [String: Any] = ["key": key, "unreadableAbove": unreadableAbove.map(\.path), "pinnedBy": pins]
        if let effective = holders.first {
            object["value"] = Output.jsonObject(effective.value)
            object["domain"] = effective.file.domain
            object["layer"] = effective.file.layer.rawValue
            object["path"] = effective.file.path
            object["hides"] = holders.dropFirst().map {
                [
                    "value": Output.jsonObject($0.value), "domain": $0.file.domain, "layer": $0.file.layer.rawValue,
                    "path": $0.file.path,
                ] as [String: Any]
            }
        }
        return object
    }
}

/// The programs reading a domain that do not run its version on disk: one refused it (and runs the version before
/// it, or its change log's last known good, or its defaults), or has not applied it yet.
struct ReadersReport {
    var domain: String
    var readers: [ReadingProcess]
    var onDisk: DomainVersion?

    /// Those that do not run the version on disk.
    var elsewhere: [ReadingProcess] {
        readers.filter { $0.version != onDisk || $0.fallback != nil }
    }

    var lines: [String] {
        let elsewhere = elsewhere
        guard !elsewhere.isEmpty else { return [] }
        return [
            "programs reading \(domain) that do not run the version on disk (\(onDisk.map(\.description) ?? "unreadable")):"
        ]
            + elsewhere.map { "  " + Self.line($0, onDisk: onDisk) }
    }

    /// "pid executable: running version X from the change log: the file's version Y is refused because …".
    static func line(_ reader: ReadingProcess, onDisk: DomainVersion?) -> String {
        let name = "\(reader.processID) \(reader.executable)"
        let running =
            switch reader.fallback {
            case .changeLog?: "running version \(reader.version) from the change log"
            case .defaults?: "running the defaults (no version of the file it accepts)"
            case nil: "running version \(reader.version)"
            }
        if let refusal = reader.refusal, refusal.version == onDisk {
            return "\(name): \(running): the file's version \(refusal.version) is refused because \(refusal.reason)"
        }
        if reader.fallback != nil {
            return "\(name): \(running): the file's version \(onDisk.map(\.description) ?? "on disk") cannot be read"
        }
        return "\(name): \(running), not yet the version on disk"
    }

    /// A version on disk that a reader refuses is a problem: the file says one thing and the programs run
    /// another, and whoever wrote it may believe it runs.
    var problems: [String] {
        readers.compactMap { reader in
            guard let refusal = reader.refusal, refusal.version == onDisk else { return nil }
            return
                "\(reader.processID) \(reader.executable) refuses the version of \(domain) on disk: \(refusal.reason)"
        }
    }
}

extension Output {
    /// The readers of a doctor's report that do not run the version on disk, as JSON.
    static func jsonArray(readers report: ReadersReport) -> [[String: Any]] {
        report.elsewhere.map { reader in
            var object: [String: Any] = [
                "pid": Int(reader.processID), "executable": reader.executable, "version": reader.version.description,
                "line": ReadersReport.line(reader, onDisk: report.onDisk),
            ]
            if let refusal = reader.refusal {
                object["refused"] = ["version": refusal.version.description, "reason": refusal.reason]
            }
            object["fallback"] = reader.fallback.map(Readers.jsonName)
            return object
        }
    }
}
