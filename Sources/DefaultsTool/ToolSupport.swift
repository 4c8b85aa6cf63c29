import ArgumentParser
import DefaultsToolSupport
import Foundation
import LiveDefaults
import Logging

/// `-currentHost` / `-host <name>` (given before the verb on the command line; see ``ArgumentRewriter``).
struct HostOptions: ParsableArguments {
    @Flag(name: .customLong("current-host"), help: "Use the per-host (ByHost) preferences of this host.")
    var currentHost = false

    @Option(name: .customLong("host"), help: "Use the per-host (ByHost) preferences of the named host.")
    var host: String?
}

/// Writes a line to standard output at once (unbuffered), so that output works in a pipe.
func emit(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// Runs a verb, turning every error into a one-line message and a non-zero exit.
func perform(_ body: () throws -> Void) {
    do { try body() } catch { fail(error) }
}

/// Runs a verb that changes a domain: as ``perform(_:)``, with what it writes logged with `--reason`.
func perform(_ reason: ReasonOptions, _ body: () throws -> Void) {
    perform { try reason.attributing(body) }
}

/// The domain a verb works on: its name, the files it lives in, and the layer (user or per-host).
struct DomainTarget {
    /// The domain as the user wrote it, for messages.
    let display: String
    /// The domain name inside `locations`.
    let name: String
    let locations: DefaultsLocations
    let layer: PreferenceLayer
    /// The file that holds the domain.
    var path: String { locations.path(forDomain: name, layer: layer) }

    /// Resolves `com.example.app`, `NSGlobalDomain` or a path to a plist file (with or without `.plist`).
    init(_ domain: String, host: HostOptions) throws {
        var locations = DefaultsLocations.current
        var layer = PreferenceLayer.currentUser
        if host.currentHost || host.host != nil {
            layer = .currentUserCurrentHost
            if let name = host.host { locations.hostIdentifier = name }
        }
        if domain.contains("/") {
            let absolute = domain.hasPrefix("/") ? domain : FileManager.default.currentDirectoryPath + "/" + domain
            let directory = (absolute as NSString).deletingLastPathComponent
            var file = (absolute as NSString).lastPathComponent
            if file.hasSuffix(".plist") { file.removeLast(6) }
            locations = DefaultsLocations(userDirectory: directory, hostIdentifier: locations.hostIdentifier)
            layer = .currentUser
            name = file
        } else {
            name = domain == "-g" || domain == "-globalDomain" ? Defaults.globalDomain : domain
        }
        do { try DomainName.validate(name) } catch { throw ToolError("\(error)") }
        display = domain
        self.locations = locations
        self.layer = layer
    }

    /// A store whose application domain is this domain; errors it meets are collected for ``check(_:)``.
    ///
    /// It watches its files only for a verb that waits for changes (`watch`, and `doctor`, which reports how
    /// the files are watched): a process that added inotify watches waits for the kernel when it exits (an
    /// RCU grace period), longer than the rest of a `defaults read` (Docs/Benchmarks.md).
    func store(watching: Defaults.Configuration.Watching = .off) throws -> ToolStore {
        let log = ErrorLog()
        var configuration = Defaults.Configuration(
            locations: locations, applicationDomain: name, arguments: [], languages: [])
        configuration.watching = watching
        configuration.errorHandler = { error in log.append(error) }
        configuration.logger = ToolLog.logger
        let store: Defaults
        do { store = try Defaults(configuration: configuration) } catch { throw ToolError("\(error)") }
        return ToolStore(defaults: store, target: self, log: log)
    }
}

/// The command's logger for the library: the command reports every error itself, in one `defaults:` line
/// (through the store's error handler), so the library's `.info` reports of the same errors stay out of the
/// way; warnings (a directory watched by polling) still show.
enum ToolLog {
    static let logger: Logger = {
        // Standard error: standard output carries what `read` and `export` print.
        var logger = Logger(label: "defaults") { label in StreamLogHandler.standardError(label: label) }
        logger.logLevel = .warning
        return logger
    }()
}

/// The errors a store reported while a verb ran.
///
/// Behind an `NSLock` (a pthread mutex) rather than `Synchronization.Mutex`, which ThreadSanitizer on Linux
/// does not see: the command runs inside the suite's `--sanitize=thread` run.
final class ErrorLog: @unchecked Sendable {
    // @unchecked: `errors` is only touched under `lock`.
    private let lock = NSLock()
    private var errors: [DefaultsError] = []
    private var handler: (@Sendable (DefaultsError) -> Void)?

    /// Called (outside the lock) with every error appended from now on.
    var onAppend: (@Sendable (DefaultsError) -> Void)? {
        get { lock.withLock { handler } }
        set { lock.withLock { handler = newValue } }
    }

    func append(_ error: DefaultsError) {
        let handler = lock.withLock {
            errors.append(error)
            return self.handler
        }
        handler?(error)
    }

    var first: DefaultsError? {
        lock.withLock { errors.first }
    }

    var all: [DefaultsError] {
        lock.withLock { errors }
    }
}

/// A store opened by a verb, with the errors it reported.
struct ToolStore {
    let defaults: Defaults
    let target: DomainTarget
    let log: ErrorLog

    /// The domain's own contents in its layer, or nil when it has no file; fails when the file cannot be read.
    func contents() throws -> [String: PropertyList]? {
        if let problem = defaults.problem(inDomain: target.name, layer: target.layer) { throw ToolError("\(problem)") }
        return defaults.persistentDomainValues(forName: target.name, layer: target.layer)
    }

    /// The contents, failing with macOS's message when the domain does not exist.
    func existingContents() throws -> [String: PropertyList] {
        guard let contents = try contents() else { throw ToolError("Domain \(target.display) does not exist") }
        return contents
    }

    /// Sets or removes a key, refusing a file that cannot be read (it is never replaced behind the user's back).
    func set(_ value: PropertyList?, forKey key: String) throws {
        _ = try contents()
        do {
            try defaults.trySet(value, forKey: key, inDomain: target.name, layer: target.layer)
        } catch {
            throw ToolError("\(error)")
        }
    }

    /// Replaces the whole domain (an empty dictionary deletes its file).
    func replace(with contents: [String: PropertyList]) throws {
        _ = try self.contents()
        do {
            try defaults.trySetPersistentDomain(contents, forName: target.name, layer: target.layer)
        } catch {
            throw ToolError("\(error)")
        }
    }

    /// Sets and removes keys as one version (a transaction, written before it returns): a program reading the
    /// domain sees all of the edits or none, where two `set`s may reach the disk as two versions.
    /// A file that cannot be read is never replaced behind the user's back. A transaction whose write fails
    /// writes nothing and keeps nothing pending: it is run again (up to ``writeAttempts`` in all); the exit status
    /// says whether the change is on disk.
    ///
    /// With `duration`, the change is temporary: undone after that long (``Defaults/transaction(for:inDomain:layer:reason:_:)``),
    /// and the verb says on standard output when it ends.
    func change(_ edits: [String: PropertyList?], lasting duration: Duration? = nil) throws {
        _ = try contents()
        let body = { (transaction: DefaultsTransaction) in
            for (key, value) in edits { transaction.set(value, forKey: key) }
        }
        var attempt = 1
        while true {
            do {
                if let duration {
                    try defaults.transaction(for: duration, inDomain: target.name, layer: target.layer, body)
                } else {
                    try defaults.transaction(inDomain: target.name, layer: target.layer, body)
                }
                break
            } catch let error as DefaultsError where error.code == .writeFailed && attempt < Self.writeAttempts {
                attempt += 1
            } catch {
                throw ToolError("\(error)")
            }
        }
        warnOfReportedErrors()
        if let duration { TemporaryOptions.announce(duration, keys: edits.keys) }
    }

    /// The edits that make the domain hold exactly `contents`: its keys set, every other key it has removed.
    /// A whole-domain change as keys, for a temporary change (which undoes keys, and keeps the file to hold them).
    func replacementEdits(_ contents: [String: PropertyList]) throws -> [String: PropertyList?] {
        var edits: [String: PropertyList?] = contents.mapValues { .some($0) }
        for key in (try self.contents() ?? [:]).keys where contents[key] == nil { edits[key] = .some(nil) }
        return edits
    }

    /// How many times a verb tries to write its change before it gives up.
    static let writeAttempts = 3

    /// Waits until the change is on disk, and fails exactly when it is not: the exit status says whether the
    /// change was made. A write that fails is tried again (up to ``writeAttempts`` in all); one that lands on a
    /// later attempt is a success, and what the store reported on the way (that failure, a corrupt file kept
    /// aside) is printed as a warning. One that never lands ends the process at once, without the library's
    /// exit handler writing the change after the message said it was not made.
    func commit() throws {
        var written = false
        for _ in 0..<Self.writeAttempts where !written { written = defaults.synchronize() }
        guard written else {
            guard let error = defaults.lastError ?? log.first else {
                failAbandoningPendingWrites(ToolError("cannot write \(target.path); nothing was changed"))
            }
            // The library's message says the change is retried; this process ends here, so it is not.
            guard error.code == .writeFailed else { failAbandoningPendingWrites(ToolError("\(error)")) }
            failAbandoningPendingWrites(
                ToolError(
                    "cannot write \(error.path ?? target.path): \(error.detail ?? "failed") (errno \(error.errno ?? 0)); "
                        + "nothing was changed"))
        }
        warnOfReportedErrors()
    }

    /// Prints what the store reported while a change that landed was made (a failed first attempt, a file
    /// that could not be read for a moment) as warnings: the change is on disk, so they do not fail the verb.
    func warnOfReportedErrors() {
        for error in log.all {
            let retried = error.code == .writeFailed ? "; it was retried and the change is on disk" : ""
            FileHandle.standardError.write(Data("defaults: warning: \(error)\(retried)\n".utf8))
        }
    }
}
