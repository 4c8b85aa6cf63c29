public import Foundation
import Logging
import Synchronization

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
    /// on a background queue, once for a burst of changes (posting costs more than a `set`); while changes keep
    /// coming, posts are a few milliseconds apart. For each change
    /// with its old and new value, use ``changes()`` or ``updates(forKey:emitCurrentValue:)``.
    public static let didChangeNotification = Notification.Name("NSUserDefaultsDidChangeNotification")
    /// `NSGlobalDomain`.
    public static let globalDomain = DomainName.global
    /// `NSArgumentDomain`.
    public static let argumentDomain = DomainName.argument
    /// `NSRegistrationDomain`.
    public static let registrationDomain = DomainName.registration
    /// The volatile domain of the store's directories of key files, when its configuration names some
    /// (``Configuration/keyFileDirectories``): `LiveDefaultsKeyFileDomain`, below the application domain.
    public static let keyFileDomain = DomainName.keyFiles
    /// The volatile domain of the store's environment variables, when its configuration names a prefix
    /// (``Configuration/environmentPrefix``): `LiveDefaultsEnvironmentDomain`, below the argument domain.
    public static let environmentDomain = DomainName.environment

    /// The store's settings: directories, application domain, arguments, languages.
    public let configuration: Configuration

    /// The volatile domains by name.
    ///
    /// Kept as `.dictionary` values of a `[String: PropertyList]`, the dictionary type every file read already
    /// uses, rather than as a `[String: [String: PropertyList]]`: a second dictionary type, which the runtime
    /// instantiates on a fresh process's first open (a few microseconds, every process).
    struct VolatileDomains {
        private var storage: [String: PropertyList] = [:]

        /// A domain's contents; setting nil removes it. Changed in place (`_modify`), not copied.
        subscript(name: String) -> [String: PropertyList]? {
            get {
                guard case .dictionary(let contents)? = storage[name] else { return nil }
                return contents
            }
            set { storage[name] = newValue.map { .dictionary($0) } }
        }

        /// A domain's contents, or `fallback` when there is none (which a change then creates).
        subscript(name: String, default fallback: [String: PropertyList]) -> [String: PropertyList] {
            get { self[name] ?? fallback }
            _modify {
                var contents = self[name] ?? fallback
                // Released from the storage first, so that the change below edits it in place.
                storage[name] = nil
                defer { storage[name] = .dictionary(contents) }
                yield &contents
            }
        }

        var names: Dictionary<String, PropertyList>.Keys { storage.keys }

        mutating func removeValue(forKey name: String) {
            storage.removeValue(forKey: name)
        }
    }

    /// One place a value can come from, in search order.
    enum Source {
        /// A dictionary of values: a volatile domain's contents (a copy that shares storage with
        /// ``State/volatileDomains``), or, while the merged view is rebuilt, a file's.
        case volatile([String: PropertyList])
        /// Unretained: ``SearchList/persistent`` holds the file for as long as the flattened list names it, and a
        /// lookup then costs no reference counting (which, for an object that is also referenced weakly,
        /// takes the runtime's slow side-table path).
        case file(Unmanaged<DomainFile>)
    }

    enum SearchEntry: Hashable {
        case volatile(String)
        case persistent(String)
    }

    struct PersistentDomain {
        /// One layer's file, and the token of the store's observer of it.
        ///
        /// A struct, not a labelled tuple: an array of tuples made the runtime build the tuple's metadata
        /// (labels and all) on a fresh process's first open.
        struct LayerFile {
            var layer: PreferenceLayer
            var file: DomainFile
            var token: UInt64
        }

        /// A domain's layer files in ``PreferenceLayer/searchOrder``, built once by
        /// ``Defaults/attach(_:directories:)``: an ``IntrusiveList`` (not an array: see there), whose copies
        /// share the nodes, so a list is not appended to once copied (``inserting(_:)`` makes a new one).
        struct LayerFiles: Sequence {
            final class Node: IntrusiveListNode {
                let item: LayerFile
                var next: Node?
                init(_ item: LayerFile) { self.item = item }
            }

            struct Iterator: IteratorProtocol {
                var nodes: IntrusiveList<Node>.Iterator
                mutating func next() -> LayerFile? { nodes.next()?.item }
            }

            private var nodes = IntrusiveList<Node>()

            init() {}

            mutating func append(_ item: LayerFile) { nodes.append(Node(item)) }

            func makeIterator() -> Iterator { Iterator(nodes: nodes.makeIterator()) }

            /// This list with `item` among its files, in search order (a new list: copies share nodes).
            func inserting(_ item: LayerFile) -> LayerFiles {
                var list = LayerFiles()
                var pending: LayerFile? = item
                for current in self {
                    if let waiting = pending, waiting.layer.searchRank < current.layer.searchRank {
                        list.append(waiting)
                        pending = nil
                    }
                    list.append(current)
                }
                if let pending { list.append(pending) }
                return list
            }
        }

        /// The domain's name.
        let name: String
        /// The files of the layers whose directory existed (or could not be looked at) when the domain was
        /// attached, and of those attached since (``Defaults/attachAwaitedLayer(_:of:deferred:)``).
        var files: LayerFiles
        /// The layers not attached because their directory was missing (``PreferenceLayer/awaitedBit``): no
        /// file is made for them, only a watch of their path, until the directory appears, a write goes
        /// there, or `synchronize()` finds it.
        var awaited: UInt8 = 0
        /// The awaited layers whose path is watched. All but the per-user managed layer while the managed
        /// directory is missing: its path names the user (a read of the user database without `USER`), and
        /// the managed layer's watch stands for it until that directory appears.
        var watchedAwaited: UInt8 = 0
        /// Whether the domain is in the search list (else it is attached only for domain streams).
        var inSearchList = false
        /// How many ``Defaults/changes(inDomain:)`` iterators follow this domain.
        var streams = 0

        func file(_ layer: PreferenceLayer) -> DomainFile? {
            files.first { $0.layer == layer }?.file
        }

        /// Whether the layer is awaited: not attached, its directory missing when last looked at.
        func awaits(_ layer: PreferenceLayer) -> Bool {
            awaited & layer.awaitedBit != 0
        }

        /// Whether the layer is awaited without a watch of its path (``watchedAwaited``).
        func awaitsUnwatched(_ layer: PreferenceLayer) -> Bool {
            awaited & ~watchedAwaited & layer.awaitedBit != 0
        }

        /// Whether a managed (forced) layer of the domain has the key.
        func forces(_ key: String) -> Bool {
            files.contains { $0.layer.isManaged && $0.file.value(forKey: key) != nil }
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

    /// The search list and what it flattens to, for lookups that hash no domain name. Part of ``State``:
    /// ``sources`` holds copies of the volatile domains' contents, so the two change in one critical section.
    struct SearchList {
        /// Suites added with ``addSuite(named:)``, in order.
        var suites: [String] = []
        /// Counts changes to ``suites``: a search-list rebuild that read an older count publishes nothing
        /// and starts over, so two concurrent `addSuite` calls cannot drop each other's suite.
        var suitesVersion = 0
        /// The attached persistent domains: those of the list, and those followed by domain streams.
        var persistent: [String: PersistentDomain] = [:]
        /// The domains in search order.
        var entries: [SearchEntry] = []
        /// The list flattened for ``resolve(_:_:)``: forced files first, then each non-empty volatile domain
        /// or file in order, so a lookup walks two arrays without hashing a domain name.
        /// The forced files are `.file` sources: the type `sources` has (an array of unretained files would be
        /// one more type for the runtime to instantiate on a fresh process's first open).
        var forcedFiles: [Source] = []
        var sources: [Source] = []
        /// The application domain's current-user file and its managed (forced) files: what every `set`
        /// needs, at hand without a lookup.
        /// Unretained, like the flattened list: the application domain is always in the search list, so
        /// ``persistent`` holds these files for the store's whole life.
        var applicationFile: Unmanaged<DomainFile>?
        /// `.file` sources, as ``forcedFiles``.
        var applicationForcedFiles: [Source] = []
    }

    /// What the store's reads come from, under one lock (``state``). Invariant: ``SearchList/sources`` is
    /// the flattening of ``SearchList/entries`` over the attached files and ``volatileDomains``, and the
    /// view's values are the merge of those sources; whoever changes one of the three brings the others in
    /// line in the same critical section (``flattenSearchList(_:)``, ``EffectiveView/apply(_:)``), or hands
    /// a newer whole view to ``rebuildMerged(changedDomain:)``, which the view's generation keeps ordered.
    struct State {
        /// Where errors found without a caller to throw to reach the log and the error handler
        /// (``record(_:deferred:)``): off the threads that found them, the watcher's among them. Made with
        /// the first such report: most stores never have one, and a queue made with every store cost its open
        /// a generic `DispatchSpecificKey` on first use and its memory a queue.
        var reports: DispatchQueue?
        /// Owned by the search-list functions (``rebuildSearchList()``, ``attach(_:)``, the suites).
        var search = SearchList()
        /// Owned by the volatile-domain functions (``Defaults/setVolatileDomain(_:forName:)`` and friends):
        /// the argument and registration domains, the languages' domains, and any the program adds.
        var volatileDomains = VolatileDomains()
        /// The effective values, the read slots, the missing-key filter, the value cache and the streams:
        /// values change only through ``EffectiveView/apply(_:)``; a read fills a slot or the cache, and a
        /// stream subscribes, through the view's other methods (Docs/Architecture.md lists the callers, and
        /// Scripts/check-architecture keeps that list true).
        var view: EffectiveView
        /// The store's judges (``Defaults/addValidator(_:)``, ``addJudge(_:)``): nil until the first is added.
        var validation: StoreValidation?
        /// The environment layer's origins, reported problems and watched files; nil until it is materialised.
        var environment: EnvironmentState?

        init(view: EffectiveView) {
            self.view = view
        }
    }

    /// What the store keeps for typed keys (Keys/), under its own lock (``typedKeys``), independent of
    /// ``State``: a suite's store is made at most once (``store(forSuite:)`` publishes the first made), and
    /// a refused value is reported once per key (``firstReports(of:)``).
    struct TypedKeyState {
        /// Stores for the suites of typed keys, made on first use.
        var suiteStores: [String: Defaults] = [:]
        /// The last stored value reported as refused or unreadable for each key.
        var reportedRefusals: [String: PropertyList] = [:]
        /// The keys of each domain whose schema this store published (``publishSchema(for:)``): a key of the
        /// domain's files outside them is reported, once.
        var declaredKeys: [String: DeclaredKeys] = [:]

        /// Records that `value` of `key` is being reported; false when it was the last one reported for the key.
        mutating func isFirstReport(of value: PropertyList, forKey key: String) -> Bool {
            guard reportedRefusals[key] != value else { return false }
            reportedRefusals[key] = value
            return true
        }
    }

    /// A domain's declared keys, the reports made of keys outside them, and how to find the declared key a
    /// key outside them most likely meant (the schema's, given by Keys/).
    struct DeclaredKeys {
        var names: Set<String>
        var nearest: @Sendable (String) -> String?
        var reported: Set<String> = []
    }

    let state: Lock<State>
    /// Typed keys' suite stores and reported refusals (see ``TypedKeyState``).
    let typedKeys = Lock(TypedKeyState())
    /// Whether a ``didChangeNotification`` post is scheduled: set by the change that schedules one, cleared
    /// by that post just before it posts, so a change made before the clearing rides along with it (the
    /// view changed first) and a change after schedules its own. An atomic: every `set` asks, and a loop of
    /// sets finds it set (a load, where a lock cost a fifth of a `set`'s time beyond the edit itself).
    let notificationPending = Atomic<Bool>(false)
    /// When, on the store's clock, the last ``didChangeNotification`` post was made (nil before the first):
    /// while changes keep coming, posts are spaced apart (``notificationPacing``). Asked only by the change that
    /// schedules a post.
    let lastNotificationPosted = Lock<Date?>(nil)
    /// Whether this store published a schema: until it does, a file's change asks nothing more (an atomic, so
    /// that the check costs a store that never publishes one a load, not a lock).
    let publishedSchema = Atomic<Bool>(false)
    /// The most recent error with no caller to throw to (``lastError``); its own lock.
    let latestError = Lock<DefaultsError?>(nil)
    /// Files of domains outside the search list that this store reached last (``file(forDomain:layer:)``),
    /// kept open so that what the store wrote there reads back exactly as written: a file opened again
    /// would be parsed from disk, where an XML date has whole seconds. At most ``recentFileLimit``; its own
    /// lock, and a released file's last release happens outside it.
    let recentFiles = Lock<[DomainFile]>([])
    /// Typed keys' effective scalar values, read without the lock (see ``ScalarReadSlots``); written only by
    /// the ``EffectiveView``.
    @usableFromInline let readSlots = ScalarReadSlots()
    /// The names in the merged view, for reads of missing keys without the lock (see ``MissingKeyFilter``);
    /// written only by the ``EffectiveView``.
    let missingKeys = MissingKeyFilter()
    /// The effective values of the keys read so far, for untyped reads without the lock (see
    /// ``ValueReadCache``); written only by the ``EffectiveView``.
    let valueCache = ValueReadCache()
    /// Around every change of the view, so that the three above are read as whole versions (see ``ViewGate``).
    @usableFromInline let viewGate = ViewGate()
    /// The environment variables that set keys (``Configuration/environmentPrefix``); nil when the configuration
    /// names no prefix or no variable has it.
    let environment: EnvironmentLayer?
    /// The directories of key files (``Configuration/keyFileDirectories``); nil when the configuration names none.
    let keyFiles: KeyFileLayer?
    /// The owner of the watches of the files `_FILE` variables name (see ``awaitedLayerWatches``).
    let environmentFileWatches = AwaitedLayerWatches()
    /// The owner given to files created for another user (see ``init(user:)``).
    let fileOwner: (UserID, GroupID)?
    /// The watcher the configuration's ``Configuration/watching`` chose; nil when the store does not watch.
    let fileWatcher: FileWatcher?
    /// The owner of the watches of awaited layers' paths (``PersistentDomain/awaited``): the watcher holds
    /// owners weakly, and the store itself, referenced weakly, would take the runtime's slow reference
    /// counting on every retain.
    let awaitedLayerWatches = AwaitedLayerWatches()

    /// See ``awaitedLayerWatches``.
    final class AwaitedLayerWatches: Sendable {}

    /// A store with a given configuration.
    ///
    /// - Throws: ``DefaultsError/Code/invalidDomainName`` when the application domain cannot be a file name.
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
        keyFiles =
            configuration.keyFileDirectories.isEmpty
            ? nil
            : KeyFileLayer(
                directories: configuration.keyFileDirectories.map {
                    PathComponents.absolute($0, in: CurrentProcess.workingDirectory)
                })
        environment = configuration.environmentPrefix.flatMap { prefix in
            if let variables = configuration.environmentVariables {
                EnvironmentLayer(prefix: prefix, environment: variables)
            } else {
                EnvironmentLayer(prefix: prefix, settings: Environment.variables(withPrefix: prefix))
            }
        }
        fileWatcher =
            configuration.fileSystem === configuration.context.fileSystem
            ? configuration.watching.watcher(automatic: configuration.watcher, context: configuration.context) : nil
        var initial = State(
            view: EffectiveView(
                readSlots: readSlots, missingKeys: missingKeys, valueCache: valueCache, gate: viewGate))
        initial.volatileDomains[DomainName.argument] = Defaults.parseArguments(configuration.arguments)
        initial.volatileDomains[DomainName.registration] = [:]
        state = Lock(initial)
        // The watches are set up once the files are read, not beside the reading (see the watcher's
        // `holdingReconciliation`); so are the metrics of the files read (see `DefaultsMetrics`).
        if let fileWatcher {
            DefaultsMetrics.deferringReports { fileWatcher.holdingReconciliation { rebuildSearchList() } }
            fileWatcher.perform { DefaultsMetrics.waiting.makeAll() }
        } else {
            rebuildSearchList()
        }
        // Before anyone can read: the versions read above are judged before the store is returned.
        for install in configuration.validatorInstallers { install(self) }
    }

    /// A store for a suite, with the process's arguments and the current user's files: the suite takes the
    /// place of the application domain, so writes go to it. `nil` means the standard search list.
    ///
    /// Returns nil for `NSGlobalDomain` (as Foundation does) and for names that are not valid domain names.
    public convenience init?(suiteName: String?) {
        self.init(suiteName: suiteName, locations: .current)
    }

    /// A store for a suite whose files live in `locations` (a program chooses with ``init(configuration:)``).
    convenience init?(suiteName: String?, locations: DefaultsLocations) {
        if suiteName == DomainName.global { return nil }
        // The suite takes the application domain's place: the process's own is not looked up.
        let configuration = Configuration(
            locations: locations, applicationDomain: suiteName ?? Configuration.processApplicationDomain)
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
        let (domains, resumptions, validation) = state.withLock {
            ($0.search.persistent, $0.view.finishAll(), $0.validation)
        }
        // Its judges go with it (they would accept everything, but a judged file reads and writes the slow way).
        for file in validation?.judgedFiles ?? [] { file.removeJudge(id: fileJudgeID) }
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
    /// A key read before is answered by the value cache, a key no domain has by the missing-key filter, both
    /// without the store's lock (the cache first: a present key then costs one probe, an absent one a probe
    /// of a mostly empty table more); the first read of a key looks it up under the lock and caches it.
    public func value(forKey key: String) -> PropertyList? {
        let hash = FastHash.hash(key)
        let fast: PropertyList?? = viewGate.read {
            if case .known(let value) = valueCache.lookup(key, hash: hash) { return .some(value) }
            return missingKeys.mayContain(hash: hash) ? nil : .some(nil)
        }.flatMap { $0 }
        if let fast { return fast }
        return lockedValue(forKey: key, hash: hash)
    }

    /// A key's value from the view, under the lock, for a read the value cache did not answer; the view
    /// caches it for the next read.
    func lockedValue(forKey key: String, hash: UInt64) -> PropertyList? {
        state.withLock { $0.view.cacheValue(forKey: key, hash: hash) }
    }

    /// The most recent error that had no caller to throw to (corrupt file, failed background write).
    public var lastError: DefaultsError? {
        latestError.withLock { $0 }
    }

    // MARK: Writing

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
    /// - Returns: false when a write failed (the error is in ``lastError`` and was logged).
    @discardableResult
    public func synchronize() -> Bool {
        let failures = writeAllAndReload()
        deliverReports()
        return failures.isEmpty
    }

    /// Like ``synchronize()``, without blocking the caller's thread.
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

    /// What ``synchronize()`` and ``flush()`` do: writes every pending change of the process, re-reads this
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
