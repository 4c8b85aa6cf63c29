import Dispatch
import Foundation
import Logging

// Writing: the untyped setters, `synchronize()` and `flush()`, and the errors that have no caller to throw to.
extension Defaults {
    /// Sets (or, with nil, removes) a key in the application domain, refusing forced keys.
    ///
    /// The value is visible to this process at once and reaches the disk within milliseconds.
    /// - Throws: ``DefaultsError/Code/forcedKey``.
    public func trySet(_ value: PropertyList?, forKey key: String) throws(DefaultsError) {
        try trySet(value, forKey: key, inDomain: configuration.applicationDomain, layer: .currentUser)
    }

    /// Sets (or removes) a key in one layer of any persistent domain: the current-host (`ByHost`) layer for
    /// per-host preferences, the any-user layers for machine-wide ones.
    ///
    /// - Throws: ``DefaultsError/Code/invalidDomainName``, ``DefaultsError/Code/forcedKey`` when
    ///   the key is forced in that domain and `layer` is not itself a managed layer.
    public func trySet(
        _ value: PropertyList?, forKey key: String, inDomain domain: String, layer: PreferenceLayer
    ) throws(DefaultsError) {
        // The application domain was validated when the store was made; its files are at hand (the path
        // of every plain `set`: one lock, no lookup by name).
        if domain == configuration.applicationDomain, layer == .currentUser {
            let (file, forced) = state.withLock { state in
                (
                    state.search.applicationFile,
                    state.search.applicationForcedFiles.contains { source in
                        guard case .file(let file) = source else { return false }
                        return file._withUnsafeGuaranteedRef { $0.value(forKey: key) } != nil
                    }
                )
            }
            if forced { throw .forcedKey(key: key, domain: domain) }
            if let file {
                // The refusal as a value: `_withUnsafeGuaranteedRef` rethrows untyped.
                let refusal = file._withUnsafeGuaranteedRef { file -> DefaultsError? in
                    do throws(DefaultsError) { try file.set(value, forKey: key) } catch { return error }
                    return nil
                }
                if let refusal { throw refusal }
                return
            }
        }
        if domain != configuration.applicationDomain { try DomainName.validate(domain) }
        if !layer.isManaged, objectIsForced(forKey: key, inDomain: domain) {
            throw .forcedKey(key: key, domain: domain)
        }
        try file(forDomain: domain, layer: layer).set(value, forKey: key)
    }

    /// Like Foundation's `set(_:forKey:)` for any value: property-list values (and URLs) are stored; anything
    /// else is refused with an error.
    ///
    /// - Throws: ``DefaultsError/Code/notAPropertyList`` or ``DefaultsError/Code/forcedKey``.
    public func trySet(_ value: Any?, forKey key: String) throws(DefaultsError) {
        guard let value else { return try trySet(nil, forKey: key) }
        let stored: PropertyList
        do throws(PropertyListError) { stored = try Self.storedValue(forFoundationValue: value) } catch {
            throw .notAPropertyList(key: key, error)
        }
        try trySet(stored, forKey: key)
    }

    /// How a Foundation-typed value is stored: a `URL` or `NSURL` as ``set(_:forKey:)-(URL?,_)`` stores it (a
    /// file URL as its path, any other as a keyed archive), anything else as its property list.
    static func storedValue(forFoundationValue value: Any) throws(PropertyListError) -> PropertyList {
        // The common exact types first, told by their type alone: for them the casts below (to `URL`, `NSURL`,
        // then `PropertyList(foundationValue:)`'s) are dynamic casts that all fail but one, worked out by the
        // runtime for every value of a transaction. A bridged `NSNumber` is none of these types: it takes the
        // casts, which tell a Boolean from a number.
        let type = type(of: value)
        if type == Int.self, let integer = value as? Int { return .integer(integer) }
        if type == String.self, let string = value as? String { return .string(string) }
        if type == Bool.self, let bool = value as? Bool { return .bool(bool) }
        if type == Double.self, let real = value as? Double { return .real(real) }
        if let url = value as? URL ?? (value as? NSURL)?.absoluteURL {
            guard let stored = Coercion.storedValue(for: url) else {
                throw .notAPropertyListValue("the URL \(url) (it could not be archived)")
            }
            return stored
        }
        return try PropertyList(foundationValue: value)
    }

    /// Waits until every pending change of this process is on disk, then re-reads every domain of the
    /// search list that another process changed.
    ///
    /// Foundation's name and form, kept: it reports a failure and does not throw. ``trySynchronize()`` is the
    /// form that throws, as `trySet` is `set`'s.
    ///
    /// - Returns: false when a write failed (the error is in ``lastError`` and was logged).
    @discardableResult
    public func synchronize() -> Bool {
        let failures = writeAllAndReload()
        deliverReports()
        return failures.isEmpty
    }

    /// ``synchronize()``, throwing what failed instead of answering false.
    ///
    /// - Throws: the first ``DefaultsError/Code/writeFailed`` (or other write failure) of this store's files;
    ///   every failure also reached the error handler and ``lastError``, as ``synchronize()``'s do.
    public func trySynchronize() throws(DefaultsError) {
        let failures = writeAllAndReload()
        deliverReports()
        if let first = failures.first { throw first }
    }

    /// ``trySynchronize()`` without blocking the caller's thread: the work runs on a global queue while the task
    /// waits.
    ///
    /// - Throws: the first ``DefaultsError/Code/writeFailed`` if a write failed.
    public func flush() async throws(DefaultsError) {
        let failures: [DefaultsError] = await withCheckedContinuation { continuation in
            DispatchQueue.global(qos: .utility).async {
                let failures = self.writeAllAndReload()
                self.deliverReports()
                continuation.resume(returning: failures)
            }
        }
        if let first = failures.first { throw first }
    }

    /// What ``synchronize()``, ``trySynchronize()`` and ``flush()`` do: writes every pending change of the process, re-reads this
    /// store's files, and returns the failures that concern this store — its files, and any file in its
    /// directories (a persistent domain set outside the search list); another store's failing file is not
    /// this store's failure. Failures of files this store does not observe are recorded here (the observed
    /// ones reached ``handle(_:domain:layer:)`` already).
    private func writeAllAndReload() -> [DefaultsError] {
        let written = configuration.context.storage.writer.writeAll(on: configuration.fileSystem)
        // Layers whose directory appeared since (a store that does not watch finds them only here).
        attachAppearedLayers()
        let files = allFiles()
        for file in files {
            file.reload()
            // A change the watcher found just before is told to this store before synchronize() returns.
            file.settle()
        }
        guard !written.isEmpty else { return [] }
        let observed = Set(files.map(ObjectIdentifier.init))
        let locations = configuration.locations
        let directories = [locations.userDirectory, locations.anyUserDirectory].map {
            $0.hasSuffix("/") ? $0 : $0 + "/"
        }
        var own: [DefaultsError] = []
        for failure in written {
            if observed.contains(ObjectIdentifier(failure.file)) {
                own.append(failure.error)
            } else if directories.contains(where: { failure.file.path.hasPrefix($0) }) {
                own.append(failure.error)
                record(failure.error)
            }
        }
        return own
    }

    /// An error with no caller to throw to: kept in ``lastError``, then logged (at `.info`: the API reports it
    /// too) and passed to the error handler, with no lock held. A file that broke under a running store, which
    /// keeps serving its last known good version, is logged at `.notice`: the program goes on with settings
    /// that no longer match the disk, and an operator should hear of it.
    ///
    /// Found by a caller's own call (a refused `set`, a failed `synchronize`), it is reported on the caller's
    /// thread before the call returns. Found in the background (`deferred`: the watcher's thread, the
    /// background writer), it reaches the log and the handler on the store's report queue: the handler and
    /// the log are user code, and on the watcher's thread a handler that blocks would hold up change detection
    /// for every domain of the process. ``synchronize()`` and ``flush()`` return after the reports deferred
    /// before them were delivered.
    func record(_ error: DefaultsError, deferred: Bool = false) {
        latestError.withLock { $0 = error }
        if let violation = error.violation {
            // A value a typed key cannot read at all is refused for its type; one it reads but the key's range or
            // choices exclude, by the schema.
            let reason = violation.reason == .wrongType || violation.reason == .unreadable ? "type" : "schema"
            let domain = error.domain ?? configuration.applicationDomain
            DefaultsMetrics.report { DefaultsMetrics.refused(domain: domain, reason: reason) }
        }
        let logger = configuration.logger
        let handler = configuration.errorHandler
        let report: @Sendable () -> Void = {
            if error.keepsLastKnownGood || error.code == .invalidValue {
                logger.notice("\(error)")
            } else {
                logger.info("\(error)")
            }
            handler?(error)
        }
        guard deferred else { return report() }
        let queue = state.withLock { state in
            if let queue = state.reports { return queue }
            let queue = DispatchQueue(label: "LiveDefaults.reports")
            state.reports = queue
            return queue
        }
        queue.async {
            Self.insideReport.value += 1
            report()
            Self.insideReport.value -= 1
        }
    }

    /// Waits until the reports recorded so far reached the log and the error handler; at once when called
    /// from a report (a handler that calls ``synchronize()`` must not wait for itself, nor for another
    /// store's report that may be waiting for it).
    func deliverReports() {
        guard Self.insideReport.value == 0, let queue = state.withLock({ $0.reports }) else { return }
        queue.sync {}
    }

    /// How deep the current thread is in reports of any store (non-zero: ``deliverReports()`` runs inside one).
    static let insideReport = ThreadLocalWord()
}
