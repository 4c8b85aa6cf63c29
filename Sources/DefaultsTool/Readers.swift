import ArgumentParser
import DefaultsToolSupport
import Foundation
import LiveDefaults

/// `defaults readers domain [--json]`: the processes reading a domain, the version each runs, and its last
/// refusal.
struct Readers: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "readers",
        abstract: "List the processes reading a domain: the version each runs, and the last it refused.",
        discussion: """
            Every program that follows a domain through LiveDefaults (a server, defaults watch, the fleet agent) \
            announces the version of the domain's file it applied and the last version it refused, with the \
            reason (Defaults.addValidator). A version is named by its digest, as defaults log names it; "on disk" \
            marks the version the file holds now. A process that accepted no version of the file since it started \
            (the one on disk refused or unreadable) runs the newest version of the file's change log it accepts, \
            marked "from the change log", or the defaults below the file. A process that has ended is never listed. \
            Then the temporary changes still to undo (write --for), each key with the time left and the value it \
            returns to.
            """)

    @OptionGroup var host: HostOptions
    @Argument(help: "A domain name, -g, or a path to a plist file.") var domain: String
    @Flag(
        help:
            "One JSON array: pid, executable, version, onDisk, since, refused (version, reason, time), fallback (changeLog or defaults, when it runs no version of the file)."
    )
    var json = false

    func run() {
        perform {
            let target = try DomainTarget(domain, host: host)
            let store = try target.store()
            let readers = store.defaults.readers(inDomain: target.name, layer: target.layer)
            let onDisk = store.defaults.versionOnDisk(inDomain: target.name, layer: target.layer)
            if json {
                emit(Self.json(readers, onDisk: onDisk))
                return
            }
            if readers.isEmpty {
                emit("no process reads \(target.display)")
            } else {
                for reader in readers { emit(Self.line(reader, onDisk: onDisk)) }
            }
            // What the version they run holds for a while, with the time left.
            for line in TemporaryReport(store: store, masking: try? target.schema()).lines { emit(line) }
        }
    }

    static func time(_ date: Date) -> String {
        ISO8601DateFormatter().string(from: date)
    }

    /// One reader as a line: `pid executable: runs VERSION (on disk) since TIME; refused VERSION at TIME: reason`.
    static func line(_ reader: ReadingProcess, onDisk: DomainVersion?) -> String {
        let current =
            switch reader.fallback {
            case .changeLog?: " from the change log (the file's version is not accepted)"
            case .defaults?: " (no version of the file accepted: the defaults below it)"
            case nil: reader.version == onDisk ? " (on disk)" : " (not the version on disk)"
            }
        var line =
            "\(reader.processID) \(reader.executable): runs \(reader.version)\(current) since \(time(reader.since))"
        if let refused = reader.refusal {
            line += "; refused \(refused.version) at \(time(refused.time)): \(refused.reason)"
        }
        for (key, source) in reader.pinnedKeys.sorted(by: { $0.key < $1.key }) {
            line += "; \(key) pinned by \(source)"
        }
        return line
    }

    /// A fallback as `readers --json` and `doctor --json` name it.
    static func jsonName(_ fallback: ReadingProcess.Fallback) -> String {
        switch fallback {
        case .changeLog: "changeLog"
        case .defaults: "defaults"
        }
    }

    static func json(_ readers: [ReadingProcess], onDisk: DomainVersion?) -> String {
        let objects: [[String: Any]] = readers.map { reader in
            var object: [String: Any] = [
                "pid": Int(reader.processID), "executable": reader.executable, "version": reader.version.description,
                "onDisk": reader.version == onDisk, "since": time(reader.since),
            ]
            object["fallback"] = reader.fallback.map(jsonName)
            object["pinned"] = reader.pinnedKeys
            object["refused"] =
                reader.refusal.map { refused -> Any in
                    ["version": refused.version.description, "reason": refused.reason, "time": time(refused.time)]
                } ?? NSNull()
            return object
        }
        let data = (try? JSONSerialization.data(withJSONObject: objects, options: [.sortedKeys])) ?? Data("[]".utf8)
        return String(decoding: data, as: UTF8.self)
    }
}

/// `--wait [SECONDS]` and `--keep-refused` of the verbs that write (`write`, `merge`, `delete`, `import`).
struct WaitOptions: ParsableArguments {
    /// How long `--wait` waits when no number follows it.
    static let defaultSeconds = 5.0

    @Option(
        name: .customLong("wait"),
        help: ArgumentHelp(
            "After writing, wait up to SECONDS (default 5) for every process reading the domain to apply or refuse the version; a refused version is rolled back to the one before.",
            valueName: "seconds"))
    var seconds: Double?

    @Flag(
        name: .customLong("keep-refused"),
        help: "With --wait: keep a version a reader refused on disk rather than roll back to the one before it.")
    var keepRefused = false

    func validate() throws {
        if let seconds, !(seconds.isFinite && seconds >= 0 && seconds <= 86_400) {
            throw ValidationError("--wait takes a number of seconds from 0 to 86400")
        }
    }

    /// The domain's layer as it is before the verb writes, when `--wait` may have to put it back; nil otherwise.
    func versionBefore(in store: ToolStore) throws -> [String: PropertyList]? {
        guard seconds != nil, !keepRefused else { return nil }
        return try store.contents() ?? [:]
    }

    /// After `store` wrote its change: waits for the readers when asked to, prints one line per reader, and fails
    /// when one refused the version or did not answer in time. A refused version is rolled back to `before` (the
    /// layer as it was before the write) unless `--keep-refused`: a refusal must not wait on disk for the next
    /// start of a program, which would then run on the version before anyway (its change log's last known
    /// good), while every other program ran the refused one.
    func waitForReaders(of store: ToolStore, before: [String: PropertyList]?) throws {
        if let failure = try awaitReaders(of: store, before: before) { throw ToolError(failure.message) }
    }

    /// What `--wait` found when not every reader applied the version.
    struct Failure {
        /// The whole story, for the verb's error.
        var message: String
        /// Each refusal: the reader and its reason.
        var refusals: [String]
        /// Whether the version before was put back.
        var rolledBack: Bool
    }

    /// ``waitForReaders(of:before:)``, returning what went wrong rather than throwing it: `defaults edit` offers
    /// a refused edit back in the editor.
    func awaitReaders(of store: ToolStore, before: [String: PropertyList]?) throws -> Failure? {
        guard let seconds else { return nil }
        let version = store.defaults.heldVersion(inDomain: store.target.name, layer: store.target.layer)
        let deadline = Date().addingTimeInterval(seconds)
        var readers: [ReadingProcess] = []
        while true {
            readers = store.defaults.readers(inDomain: store.target.name, layer: store.target.layer).filter {
                $0.processID != ProcessInfo.processInfo.processIdentifier
            }
            let waiting = readers.contains { $0.version != version && $0.refusal?.version != version }
            if !waiting || Date() >= deadline { break }
            usleep(2_000)
        }
        var failed: [String] = []
        var refusals: [String] = []
        for reader in readers {
            let name = "\(reader.processID) \(reader.executable)"
            if reader.version == version {
                emit("\(name): applied")
            } else if let refused = reader.refusal, refused.version == version {
                emit("\(name): refused: \(refused.reason)")
                failed.append("\(name) refused it (\(refused.reason))")
                refusals.append("\(name) refused \(version): \(refused.reason)")
            } else {
                emit("\(name): no answer")
                failed.append("\(name) did not answer within \(seconds) s")
            }
        }
        if readers.isEmpty { emit("no process reads \(store.target.display)") }
        guard !failed.isEmpty else { return nil }
        let problem = "version \(version) of \(store.target.display) was written, but " + failed.joined(separator: "; ")
        guard !refusals.isEmpty, let before else {
            let kept = refusals.isEmpty ? "" : " (--keep-refused)"
            return Failure(
                message: problem + "; the file keeps the new version\(kept)", refusals: refusals, rolledBack: false)
        }
        let putBack = try Self.putBack(
            before, over: version, in: store, reason: "rolled back: " + refusals.joined(separator: "; "))
        emit("rolled back to the version before \(version): \(putBack)")
        return Failure(
            message: problem + "; rolled back to the version before it (--keep-refused keeps a refused version)",
            refusals: refusals, rolledBack: true)
    }

    /// Writes `before` back over `version`, as one change logged with `reason`, only while the domain still holds
    /// what this command wrote: a change another writer made since is never overwritten. Returns the version
    /// rolled back to.
    static func putBack(
        _ before: [String: PropertyList], over version: DomainVersion, in store: ToolStore, reason: String
    ) throws -> DomainVersion {
        let (defaults, target) = (store.defaults, store.target)
        do {
            try Defaults.attributingWrites(reason: reason) {
                try defaults.transaction(inDomain: target.name, layer: target.layer) { transaction in
                    // The transaction read the file as it is now: still the version this command wrote, or a
                    // newer one, which is never written over.
                    guard defaults.heldVersion(inDomain: target.name, layer: target.layer) == version,
                        let written = defaults.persistentDomainValues(forName: target.name, layer: target.layer)
                    else {
                        throw ToolError(
                            "\(target.display) changed while it was being rolled back (after version \(version) was written): nothing was written"
                        )
                    }
                    for key in Set(written.keys).union(before.keys) where written[key] != before[key] {
                        // Read first: the transaction writes only if the key still holds it when it commits.
                        _ = transaction.value(forKey: key)
                        transaction.set(before[key], forKey: key)
                    }
                }
            }
        } catch let error as ToolError {
            throw error
        } catch {
            throw ToolError("rolling back to the version before \(version) failed: \(error)")
        }
        return defaults.heldVersion(inDomain: target.name, layer: target.layer)
    }
}

extension ToolStore {
    /// Warns, for each of `keys` just written, of every running program whose environment sets it (its
    /// announcement pins the key): the file has the new value, that program goes on reading its environment's.
    func warnOfPinnedKeys(_ keys: some Sequence<String>) {
        let own = ProcessInfo.processInfo.processIdentifier
        let readers = defaults.readers(inDomain: target.name, layer: target.layer).filter { $0.processID != own }
        guard readers.contains(where: { !$0.pinnedKeys.isEmpty }) else { return }
        for key in keys {
            for reader in readers {
                guard let source = reader.pinnedKeys[key] else { continue }
                FileHandle.standardError.write(
                    Data(
                        "defaults: warning: process \(reader.processID) (\(reader.executable)) will not see \(key): \(source) sets it there\n"
                            .utf8))
            }
        }
    }
}
