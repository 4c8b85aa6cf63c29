public import Foundation
import Logging

/// A user-defaults store: Foundation's `UserDefaults` model, on the same files, shared safely between
/// processes.
///
/// A store searches a list of domains, first hit wins:
/// 1. `NSArgumentDomain`, parsed from `-Key value` command-line pairs;
/// 2. the application domain (or the suite of ``init(suiteName:)``), then suites added with
///    ``addSuite(named:)``;
/// 3. `NSGlobalDomain`;
/// 4. one volatile domain per preferred language;
/// 5. `NSRegistrationDomain`, filled by ``register(defaults:)-([String:PropertyList])`` and never written to disk.
///
/// Each persistent domain merges its layers (``PreferenceLayer``); values an administrator forces win over
/// the whole list and refuse writes.
///
/// ```swift
/// let defaults = Defaults.standard
/// defaults.register(defaults: ["RateLimit": 100])
/// defaults.set(200, forKey: "RateLimit")        // visible at once, on disk within milliseconds
/// let limit = defaults.integer(forKey: "RateLimit")
/// ```
///
/// Reads come from memory: a typed key holding a scalar, or a key no domain has, without any lock; other
/// reads are one hash lookup under a short lock. Writes update memory at once and reach the disk through a
/// coalescing background writer; ``synchronize()`` and ``flush()`` wait for the disk.
public final class Defaults: Sendable {
    /// Posted (object: the store) when a value in one of the store's persistent domains changes, by this
    /// process or another.
    ///
    /// Unlike Foundation, which posts synchronously inside `set`, the post comes about a millisecond later
    /// on a background queue, once for a burst of changes (posting costs more than a `set`). For each change
    /// with its old and new value, use ``changes()`` or ``updates(forKey:emitCurrentValue:)``.
    public static let didChangeNotification = Notification.Name("NSUserDefaultsDidChangeNotification")
    /// `NSGlobalDomain`.
    public static let globalDomain = DomainName.global
    /// `NSArgumentDomain`.
    public static let argumentDomain = DomainName.argument
    /// `NSRegistrationDomain`.
    public static let registrationDomain = DomainName.registration

    /// The store's settings: directories, application domain, arguments, languages.
    public let configuration: Configuration

    /// One place a value can come from, in search order.
    enum Source {
        /// A volatile domain's contents (a copy that shares storage with ``State/volatileDomains``).
        case volatile([String: PropertyList])
        /// Unretained: ``State/persistent`` holds the file for as long as the flattened list names it, and a
        /// lookup then costs no reference counting (which, for an object that is also referenced weakly,
        /// takes the slow path: measured at a fifth of a `set`).
        case file(Unmanaged<DomainFile>)
    }

    enum SearchEntry: Hashable {
        case volatile(String)
        case persistent(String)
    }

    struct PersistentDomain {
        /// The layer files in ``PreferenceLayer/searchOrder``.
        var files: [(layer: PreferenceLayer, file: DomainFile, token: UInt64)]
        /// Whether the domain is in the search list (else it is attached only for domain streams).
        var inSearchList = false
        /// How many ``KeyChanges`` iterators follow this domain.
        var streams = 0

        func file(_ layer: PreferenceLayer) -> DomainFile? {
            files.first { $0.layer == layer }?.file
        }

        /// The domain's own value of a key: the first layer that has it, managed layers included. With
        /// `replacing`, one layer's value is taken as given (the value before a change).
        func value(forKey key: String, replacing: (layer: PreferenceLayer, value: PropertyList?)? = nil)
            -> PropertyList?
        {
            for item in files {
                let value = item.layer == replacing?.layer ? replacing?.value : item.file.value(forKey: key)
                if let value { return value }
            }
            return nil
        }
    }

    struct State {
        var suites: [String] = []
        /// Counts changes to ``suites``: a search-list rebuild that read an older count publishes nothing
        /// and starts over, so two concurrent `addSuite` calls cannot drop each other's suite.
        var suitesVersion = 0
        var volatileDomains: [String: [String: PropertyList]] = [:]
        var persistent: [String: PersistentDomain] = [:]
        var searchList: [SearchEntry] = []
        /// The effective values, the read slots, the missing-key filter and the streams: changed only through
        /// ``EffectiveView/apply(_:)``.
        var view: EffectiveView
        var lastError: DefaultsError?
        /// The search list flattened for ``resolve(_:_:)``: forced files first, then each non-empty volatile
        /// domain or file in order. Rebuilt with the search list and the volatile domains, so a lookup walks
        /// two arrays without hashing a domain name.
        var forcedFiles: [Unmanaged<DomainFile>] = []
        var sources: [Source] = []
        /// The application domain's current-user file and its managed (forced) files: what every `set`
        /// needs, at hand without a lookup.
        /// Unretained, like the flattened list: the application domain is always in the search list, so
        /// ``State/persistent`` holds these files for the store's whole life.
        var applicationFile: Unmanaged<DomainFile>?
        var applicationForcedFiles: [Unmanaged<DomainFile>] = []
        /// Whether a didChangeNotification post is already scheduled (posts are coalesced).
        var notificationPending = false
        /// Stores for the suites of typed keys (``DefaultsKey/suite``), created on first use.
        var suiteStores: [String: Defaults] = [:]
        /// The stored values already reported as unreadable for a typed key, so each is logged once.
        var reportedConversions: [String: PropertyList] = [:]
        /// Files of domains outside the search list that this store reached last (``file(forDomain:layer:)``),
        /// kept open so that what the store wrote there reads back exactly as written: a file opened again
        /// would be parsed from disk, where an XML date has whole seconds. At most ``recentFileLimit``.
        var recentFiles: [DomainFile] = []

        init(view: EffectiveView) {
            self.view = view
        }
    }

    let state: Lock<State>
    /// Typed keys' effective scalar values, read without the lock (see ``ScalarReadSlots``); written only by
    /// the ``EffectiveView``.
    @usableFromInline let readSlots = ScalarReadSlots()
    /// The names in the merged view, for reads of missing keys without the lock (see ``MissingKeyFilter``);
    /// written only by the ``EffectiveView``.
    let missingKeys = MissingKeyFilter()
    /// The effective values of the keys read so far, for untyped reads without the lock (see
    /// ``ValueReadCache``); written only by the ``EffectiveView``.
    let valueCache = ValueReadCache()
    /// The owner given to files created for another user (see ``init(user:)``).
    let fileOwner: (UserID, GroupID)?
    /// The watcher the configuration's ``Configuration/watching`` chose; nil when the store does not watch.
    let fileWatcher: FileWatcher?
    /// Where errors found without a caller to throw to reach the log and the error handler (see
    /// ``record(_:)``): off the threads that found them, the watcher's among them.
    let reports: DispatchQueue

    /// A store with a given configuration.
    ///
    /// - Throws: ``DefaultsError/invalidDomainName(_:reason:)`` when the application domain cannot be a file name.
    public convenience init(configuration: Configuration) throws(DefaultsError) {
        try self.init(configuration: configuration, fileOwner: nil)
    }

    convenience init(configuration: Configuration, fileOwner: (UserID, GroupID)?) throws(DefaultsError) {
        try DomainName.validate(configuration.applicationDomain)
        self.init(validated: configuration, fileOwner: fileOwner)
    }

    /// The designated initialiser; the application domain must already be valid.
    init(validated configuration: Configuration, fileOwner: (UserID, GroupID)?) {
        self.configuration = configuration
        self.fileOwner = fileOwner
        fileWatcher = configuration.watching.watcher(automatic: configuration.watcher)
        reports = DispatchQueue(label: "LiveDefaults.reports")
        reports.setSpecific(key: Self.reportQueueKey, value: true)
        var initial = State(view: EffectiveView(readSlots: readSlots, missingKeys: missingKeys, valueCache: valueCache))
        initial.volatileDomains[DomainName.argument] = Defaults.parseArguments(configuration.arguments)
        initial.volatileDomains[DomainName.registration] = [:]
        state = Lock(initial)
        rebuildSearchList()
    }

    /// A store for a suite, with the process's arguments and the current user's files: the suite takes the
    /// place of the application domain, so writes go to it. `nil` means the standard search list.
    ///
    /// Returns nil for `NSGlobalDomain` (as Foundation does) and for names that are not valid domain names.
    public convenience init?(suiteName: String?) {
        self.init(suiteName: suiteName, locations: .current)
    }

    /// A store for a suite whose files live elsewhere (tests root every store in a temporary directory).
    public convenience init?(suiteName: String?, locations: DefaultsLocations) {
        if suiteName == DomainName.global { return nil }
        var configuration = Configuration(locations: locations)
        if let suiteName { configuration.applicationDomain = suiteName }
        do { try self.init(configuration: configuration) } catch { return nil }
    }

    /// A store with the standard search list for the current user, like `UserDefaults()`.
    ///
    /// When the process name cannot be a domain name (empty, or starting with a dot), the application
    /// domain is `LiveDefaults`.
    public convenience init() {
        var configuration = Configuration()
        if (try? DomainName.validate(configuration.applicationDomain)) == nil {
            configuration.applicationDomain = "LiveDefaults"
        }
        self.init(validated: configuration, fileOwner: nil)
    }

    deinit {
        // Streams finish when their store goes away.
        let (domains, resumptions) = state.withLock { ($0.persistent, $0.view.finishAll()) }
        for domain in domains.values { detach(domain) }
        for resume in resumptions { resume() }
    }

    // MARK: The shared store

    private static let sharedStore = Lock<Defaults?>(nil)

    /// The shared store of the process: the standard search list, the current user's files.
    ///
    /// Changes to its search list (suites, registered defaults) last until ``resetStandardUserDefaults()``.
    public static var standard: Defaults {
        if let existing = sharedStore.withLock({ $0 }) { return existing }
        // Built outside the lock (it reads files): threads that race here each build one, the first to
        // publish wins and the others' stores are released.
        let created = Defaults()
        return sharedStore.withLock { store in
            if let store { return store }
            store = created
            return created
        }
    }

    /// Writes the shared store's pending changes and releases it; the next use of ``standard`` creates a
    /// new one with the standard search list.
    public static func resetStandardUserDefaults() {
        let previous = sharedStore.withLock { store in
            let previous = store
            store = nil
            return previous
        }
        previous?.synchronize()
    }

    // MARK: Reading

    /// The effective value of a key: the first domain in the search list that has it (forced values first).
    ///
    /// A key no domain has is answered by the missing-key filter, a key read before by the value cache, both
    /// without the store's lock; the first read of a key looks it up under the lock and caches it.
    public func value(forKey key: String) -> PropertyList? {
        let hash = FastHash.hash(key)
        guard missingKeys.mayContain(hash: hash) else { return nil }
        if case .known(let value) = valueCache.lookup(key, hash: hash) { return value }
        return state.withLock { $0.view.cacheValue(forKey: key, hash: hash) }
    }

    /// The most recent error that had no caller to throw to (corrupt file, failed background write).
    public var lastError: DefaultsError? {
        state.withLock { $0.lastError }
    }

    // MARK: Writing

    /// Sets (or, with nil, removes) a key in the application domain, refusing forced keys.
    ///
    /// The value is visible to this process at once and reaches the disk within milliseconds.
    /// - Throws: ``DefaultsError/forcedKey(key:domain:)``.
    public func setValue(_ value: PropertyList?, forKey key: String) throws(DefaultsError) {
        try setValue(value, forKey: key, inDomain: configuration.applicationDomain, layer: .currentUser)
    }

    /// Sets (or removes) a key in one layer of any persistent domain: the current-host (`ByHost`) layer for
    /// per-host preferences, the any-user layers for machine-wide ones.
    ///
    /// - Throws: ``DefaultsError/invalidDomainName(_:reason:)``, ``DefaultsError/forcedKey(key:domain:)`` when
    ///   the key is forced in that domain and `layer` is not itself a managed layer.
    public func setValue(
        _ value: PropertyList?, forKey key: String, inDomain domain: String, layer: PreferenceLayer
    ) throws(DefaultsError) {
        // The application domain was validated when the store was made; its files are at hand (the path
        // of every plain `set`: one lock, no lookup by name).
        if domain == configuration.applicationDomain, layer == .currentUser {
            let (file, forced) = state.withLock { state in
                (
                    state.applicationFile,
                    state.applicationForcedFiles.contains {
                        $0._withUnsafeGuaranteedRef { $0.value(forKey: key) } != nil
                    }
                )
            }
            if forced { throw .forcedKey(key: key, domain: domain) }
            if let file { return file._withUnsafeGuaranteedRef { $0.set(value, forKey: key) } }
        }
        if domain != configuration.applicationDomain { try DomainName.validate(domain) }
        if !layer.isManaged, objectIsForced(forKey: key, inDomain: domain) {
            throw .forcedKey(key: key, domain: domain)
        }
        file(forDomain: domain, layer: layer).set(value, forKey: key)
    }

    /// Like Foundation's `set(_:forKey:)` for any value: property-list values (and URLs) are stored; anything
    /// else is refused with an error.
    ///
    /// - Throws: ``DefaultsError/notAPropertyList(key:_:)`` or ``DefaultsError/forcedKey(key:domain:)``.
    public func trySet(_ value: Any?, forKey key: String) throws(DefaultsError) {
        guard let value else { return try setValue(nil, forKey: key) }
        let stored: PropertyList
        do throws(PropertyListError) { stored = try Self.storedValue(forFoundationValue: value) } catch {
            throw .notAPropertyList(key: key, error)
        }
        try setValue(stored, forKey: key)
    }

    /// How a Foundation-typed value is stored: a `URL` or `NSURL` as ``set(_:forKey:)-(URL?,_)`` stores it (a
    /// file URL as its path, any other as a keyed archive), anything else as its property list.
    static func storedValue(forFoundationValue value: Any) throws(PropertyListError) -> PropertyList {
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
    /// - Returns: false when a write failed (the error is in ``lastError`` and was logged).
    @discardableResult
    public func synchronize() -> Bool {
        let failures = writeAllAndReload()
        deliverReports()
        return failures.isEmpty
    }

    /// Like ``synchronize()``, without blocking the caller's thread.
    ///
    /// - Throws: the first ``DefaultsError/writeFailed(path:errno:message:)`` if a write failed.
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

    /// What ``synchronize()`` and ``flush()`` do: writes every pending change of the process, re-reads this
    /// store's files, and returns the failures that concern this store — its files, and any file in its
    /// directories (a persistent domain set outside the search list); another store's failing file is not
    /// this store's failure. Failures of files this store does not observe are recorded here (the observed
    /// ones reached ``handle(_:domain:layer:)`` already).
    private func writeAllAndReload() -> [DefaultsError] {
        let written = BackgroundWriter.shared.writeAll()
        let files = allFiles()
        for file in files {
            file.reload()
            // A change the watcher found just before is told to this store before synchronize() returns.
            file.settle()
        }
        guard !written.isEmpty else { return [] }
        let observed = Set(files.map(\.path))
        let locations = configuration.locations
        let directories = [locations.userDirectory, locations.anyUserDirectory].map {
            $0.hasSuffix("/") ? $0 : $0 + "/"
        }
        var own: [DefaultsError] = []
        for failure in written {
            if observed.contains(failure.path) {
                own.append(failure.error)
            } else if directories.contains(where: { failure.path.hasPrefix($0) }) {
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
    /// thread before the call returns. Found in the background (`deferred`: the watcher's queue, the
    /// background writer), it reaches the log and the handler on the store's report queue: the handler and
    /// the log are user code, and on the watcher's queue a handler that blocks would hold up change detection
    /// for every domain of the process. ``synchronize()`` and ``flush()`` return after the reports deferred
    /// before them were delivered.
    func record(_ error: DefaultsError, deferred: Bool = false) {
        state.withLock { $0.lastError = error }
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
        if deferred { reports.async(execute: report) } else { report() }
    }

    /// Waits until the reports recorded so far reached the log and the error handler; at once when called
    /// from a report (a handler that calls ``synchronize()`` must not wait for itself, nor for another
    /// store's report that may be waiting for it).
    func deliverReports() {
        guard DispatchQueue.getSpecific(key: Self.reportQueueKey) == nil else { return }
        reports.sync {}
    }

    /// Marks every store's report queue, so that ``deliverReports()`` knows it runs inside a report.
    static let reportQueueKey = DispatchSpecificKey<Bool>()

    // MARK: Internals

    func file(forDomain domain: String, layer: PreferenceLayer) -> DomainFile {
        if let known = state.withLock({ $0.persistent[domain]?.file(layer) }) { return known }
        let file = DomainFileRegistry.shared.file(
            atPath: configuration.locations.path(forDomain: domain, layer: layer),
            owner: fileOwner, clock: configuration.clock)
        let released: DomainFile? = state.withLock { state in
            state.recentFiles.removeAll { $0 === file }
            state.recentFiles.append(file)
            return state.recentFiles.count > Self.recentFileLimit ? state.recentFiles.removeFirst() : nil
        }
        // A file's last release (and its deinit) happens outside the store's lock.
        withExtendedLifetime(released) {}
        return file
    }

    /// How many files of domains outside the search list a store keeps open (``State/recentFiles``).
    static let recentFileLimit = 32

    func allFiles() -> [DomainFile] {
        state.withLock { $0.persistent.values.flatMap { $0.files.map(\.file) } }
    }

    /// Recomputes the search list from the application domain, suites and languages, attaches the files of
    /// every persistent domain in it, and rebuilds the merged view.
    func rebuildSearchList() {
        while !tryRebuildSearchList() {}
        rebuildMerged(changedDomain: DomainName.argument)
    }

    /// One attempt of ``rebuildSearchList()``; false, having published nothing, when the suites changed
    /// meanwhile.
    private func tryRebuildSearchList() -> Bool {
        var list: [SearchEntry] = [.volatile(DomainName.argument), .persistent(configuration.applicationDomain)]
        let (suites, version) = state.withLock { ($0.suites, $0.suitesVersion) }
        list += suites.map { .persistent($0) }
        list.append(.persistent(DomainName.global))
        list += configuration.languages.map { .volatile($0) }
        list.append(.volatile(DomainName.registration))

        var seen: Set<SearchEntry> = []
        list = list.filter { seen.insert($0).inserted }
        let needed = Set(
            list.compactMap { entry -> String? in
                if case .persistent(let name) = entry { return name }
                return nil
            })
        let attached = state.withLock { Set($0.persistent.keys) }
        var added: [String: PersistentDomain] = [:]
        for name in needed.subtracting(attached) { added[name] = attach(name) }
        let (published, detached): (Bool, [PersistentDomain]) = state.withLock { state in
            // Files attached here that another rebuild attached first are not needed twice.
            var detached: [PersistentDomain] = []
            for (name, domain) in added {
                if state.persistent[name] == nil { state.persistent[name] = domain } else { detached.append(domain) }
            }
            guard state.suitesVersion == version else { return (false, detached) }
            state.searchList = list
            flattenSearchList(&state)
            for name in Array(state.persistent.keys) {
                state.persistent[name]?.inSearchList = needed.contains(name)
                if let domain = state.persistent[name], !domain.inSearchList, domain.streams == 0 {
                    detached.append(domain)
                    state.persistent.removeValue(forKey: name)
                }
            }
            return (true, detached)
        }
        for domain in detached { detach(domain) }
        return published
    }

    /// Loads and watches the files of a persistent domain, and observes them for this store.
    func attach(_ name: String) -> PersistentDomain {
        var files: [(layer: PreferenceLayer, file: DomainFile, token: UInt64)] = []
        for layer in PreferenceLayer.searchOrder {
            let file = DomainFileRegistry.shared.file(
                atPath: configuration.locations.path(forDomain: name, layer: layer),
                owner: fileOwner, clock: configuration.clock)
            // Loaded before observing: the first load is not a change (the merged view is rebuilt next), and
            // a 10,000-key domain would otherwise be resolved key by key.
            file.loadIfNeeded()
            let token = file.addObserver { [weak self] event in self?.handle(event, domain: name, layer: layer) }
            // The store wires its files to the watcher; the watcher knows only the path.
            fileWatcher?.watch(file.path, owner: file, logger: configuration.logger) { [weak file] event in
                file?.reload(verifyContents: event.writtenInPlace)
            }
            // A file that cannot be read is reported to every store that uses it.
            // (Found by the caller's call, so reported on its thread.)
            if let failure = file.currentFailure { record(failure) }
            files.append((layer, file, token))
        }
        return PersistentDomain(files: files)
    }

    func detach(_ domain: PersistentDomain) {
        for entry in domain.files {
            entry.file.removeObserver(entry.token)
            fileWatcher?.unwatch(entry.file.path, owner: entry.file)
        }
    }

    /// Rebuilds the merged view from scratch (after a change of the search list or of a volatile domain)
    /// and reports the effective changes, attributed to `changedDomain`.
    func rebuildMerged(changedDomain: String) {
        while !tryRebuildMerged(changedDomain: changedDomain) {}
    }

    /// One attempt of ``rebuildMerged(changedDomain:)``; false, having published nothing, when `merged`
    /// changed while the new view was computed.
    private func tryRebuildMerged(changedDomain: String) -> Bool {
        let sources = state.withLock { state in
            (state.searchList, state.volatileDomains, state.persistent, state.view.generation)
        }
        let (list, volatiles, persistent, generation) = sources
        // Every source's contents in precedence order: forced values first, then the search list.
        var layers: [[String: PropertyList]] = []
        for entry in list {
            if case .persistent(let name) = entry {
                for item in persistent[name]?.files ?? [] where item.layer.isManaged {
                    layers.append(item.file.contents)
                }
            }
        }
        for entry in list {
            switch entry {
            case .volatile(let name):
                layers.append(volatiles[name] ?? [:])
            case .persistent(let name):
                for item in persistent[name]?.files ?? [] where !item.layer.isManaged {
                    layers.append(item.file.contents)
                }
            }
        }
        let merged = Self.merge(layers.filter { !$0.isEmpty })
        let outcome = state.withLock { state in
            state.view.apply(.all(merged, domain: changedDomain, basedOn: generation)).map { applied in
                (applied.resumptions, Self.firstReports(of: applied.refusals, &state))
            }
        }
        guard let (resumptions, refusals) = outcome else { return false }
        for resume in resumptions { resume() }
        for violation in refusals { record(.invalidValue(violation, domain: changedDomain)) }
        return true
    }

    /// The merged view of layers given in precedence order (first wins).
    ///
    /// Starts from the largest layer as it is (sharing its storage, no copy while nothing else changes it)
    /// and resolves only the keys of the other layers: opening a 10,000-key domain then costs no 10,000
    /// insertions, and the view takes no memory of its own until something overrides the large layer.
    static func merge(_ layers: [[String: PropertyList]]) -> [String: PropertyList] {
        guard let largest = layers.indices.max(by: { layers[$0].count < layers[$1].count }) else { return [:] }
        var merged = layers[largest]
        for (index, layer) in layers.enumerated() where index != largest {
            for key in layer.keys {
                guard let effective = layers.lazy.compactMap({ $0[key] }).first else { continue }
                if merged[key] != effective { merged[key] = effective }
            }
        }
        return merged
    }

    /// Recomputes ``State/forcedFiles`` and ``State/sources`` from the search list.
    func flattenSearchList(_ state: inout State) {
        var forced: [Unmanaged<DomainFile>] = []
        var sources: [Source] = []
        for entry in state.searchList {
            switch entry {
            case .volatile(let name):
                if let contents = state.volatileDomains[name], !contents.isEmpty { sources.append(.volatile(contents)) }
            case .persistent(let name):
                for item in state.persistent[name]?.files ?? [] {
                    let file = Unmanaged.passUnretained(item.file)
                    if item.layer.isManaged { forced.append(file) } else { sources.append(.file(file)) }
                }
            }
        }
        state.forcedFiles = forced
        state.sources = sources
        let application = state.persistent[configuration.applicationDomain]
        state.applicationFile = application?.file(.currentUser).map { Unmanaged.passUnretained($0) }
        state.applicationForcedFiles =
            application?.files.compactMap {
                $0.layer.isManaged ? Unmanaged.passUnretained($0.file) : nil
            } ?? []
    }

    /// The effective value of one key, walking the search list: forced values first, then the domains in order.
    func resolve(_ key: String, _ state: State) -> PropertyList? {
        for file in state.forcedFiles {
            if let value = file._withUnsafeGuaranteedRef({ $0.value(forKey: key) }) { return value }
        }
        for source in state.sources {
            switch source {
            case .volatile(let contents):
                if let value = contents[key] { return value }
            case .file(let file):
                if let value = file._withUnsafeGuaranteedRef({ $0.value(forKey: key) }) { return value }
            }
        }
        return nil
    }

    /// A file of one of the store's domains changed (by this process or another): update the merged view
    /// for the keys involved and tell observers about effective changes.
    func handle(_ event: DomainFile.Event, domain: String, layer: PreferenceLayer) {
        switch event {
        case .failed(let error):
            record(error, deferred: true)
        case .changed(let deltas, let origin):
            let (mustPost, resumptions, refusals): (Bool, [Resumption], [SchemaViolation]) = state.withLock {
                state in
                // The application domain is in the search list once attached (``State/applicationFile`` is set
                // then); asking the attachments would hash its name again on every `set`.
                let inSearchList =
                    domain == configuration.applicationDomain
                    ? state.applicationFile != nil : state.persistent[domain]?.inSearchList == true
                var applied = EffectiveView.Applied()
                if inSearchList {
                    let keys = deltas.map { EffectiveView.ResolvedKey(key: $0.key, value: resolve($0.key, state)) }
                    applied = state.view.apply(.keys(keys, domain: domain, origin: origin)) ?? applied
                }
                // The domain's own changes, for streams that follow it whatever the search list shows.
                if state.view.followsDomain(domain), let attachment = state.persistent[domain] {
                    for delta in deltas {
                        let new = attachment.value(forKey: delta.key)
                        let old = attachment.value(forKey: delta.key, replacing: (layer, delta.old))
                        guard old != new else { continue }
                        let change = KeyChange(
                            domain: domain, key: delta.key, oldValue: old, newValue: new, origin: origin)
                        applied.resumptions += state.view.deliverDomainChange(change)
                    }
                }
                // One post per burst: only the change that finds none scheduled schedules one.
                let mustPost = applied.changed && !state.notificationPending
                if mustPost { state.notificationPending = true }
                return (mustPost, applied.resumptions, Self.firstReports(of: applied.refusals, &state))
            }
            for resume in resumptions { resume() }
            for violation in refusals { record(.invalidValue(violation, domain: domain), deferred: true) }
            if mustPost { postDidChange() }
        }
    }

    /// Posts ``didChangeNotification`` shortly after a change, once for a burst of changes: a post costs
    /// more than the change itself, and observers of this notification re-read what they need anyway.
    ///
    /// The post waits ``notificationDelay`` rather than being queued at once: an immediate `async` wakes a
    /// thread for nearly every `set` (the queue drains faster than a loop of sets refills it), and that
    /// wake-up cost more than the rest of the `set` (measured: about 0.8 of 2.9 µs).
    ///
    /// A caller that set ``State/notificationPending`` passes `clearingPending: true`, and the post clears it;
    /// a whole-domain call that found a post already pending schedules one of its own (false).
    func postDidChange(clearingPending: Bool = true) {
        configuration.clock.schedule(after: Defaults.notificationDelay, on: Defaults.notificationQueue) {
            [weak self] in
            guard let self else { return }
            if clearingPending { self.state.withLock { $0.notificationPending = false } }
            NotificationCenter.default.post(name: Defaults.didChangeNotification, object: self)
        }
    }

    static let notificationQueue = DispatchQueue(label: "LiveDefaults.notifications")
    /// How long ``didChangeNotification`` waits for more changes to ride along.
    static let notificationDelay: Duration = .milliseconds(1)
}
