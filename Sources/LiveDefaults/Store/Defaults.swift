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
            // The versions the open read are recorded (when no log records them) from the watcher's thread: the
            // records queue's first work starts its threads, which the opening thread does not wait for.
            let recorder = configuration.context.storage.recorder
            fileWatcher.perform { recorder.scheduleFirstLooks() }
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
        // Built outside the lock: it reads files.
        sharedStore.published { Defaults() }
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
}
