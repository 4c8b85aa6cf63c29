/// The search list: attaching the files of its persistent domains, flattening it for lookups, merging the
/// effective view, and the files of domains outside it.
extension Defaults {
    /// The file of one layer of a persistent domain: the attached one when the domain is, else the process's
    /// file for the path, kept among the ``recentFiles``.
    func file(forDomain domain: String, layer: PreferenceLayer) -> DomainFile {
        let (known, awaited) = attachedLayer(layer, of: domain)
        if let known { return known }
        // A write to a layer whose directory was missing: attached first, so that the store sees it.
        if awaited, let attached = attachAwaitedLayer(layer, of: domain, deferred: false) { return attached }
        let file = DomainFileRegistry.shared.file(
            atPath: configuration.locations.path(forDomain: domain, layer: layer),
            owner: fileOwner, clock: configuration.clock,
            fileSystem: configuration.fileSystem)
        let released: DomainFile? = recentFiles.withLock { recent in
            recent.removeAll { $0 === file }
            recent.append(file)
            return recent.count > Self.recentFileLimit ? recent.removeFirst() : nil
        }
        // A file's last release (and its deinit) happens outside the lock.
        withExtendedLifetime(released) {}
        return file
    }

    /// One layer of a domain as the store holds it: its file when attached, and whether it is awaited
    /// (both nil and false when the domain is not attached).
    private func attachedLayer(_ layer: PreferenceLayer, of domain: String) -> (file: DomainFile?, awaited: Bool) {
        state.withLock { state in
            guard let attached = state.search.persistent[domain] else { return (nil, false) }
            return (attached.file(layer), attached.awaits(layer))
        }
    }

    /// How many files of domains outside the search list a store keeps open (``recentFiles``).
    static let recentFileLimit = 32

    func allFiles() -> [DomainFile] {
        state.withLock { $0.search.persistent.values.flatMap { $0.files.map(\.file) } }
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
        var list: [SearchEntry] = [.volatile(DomainName.argument)]
        if environment != nil { list.append(.volatile(DomainName.environment)) }
        list.append(.persistent(configuration.applicationDomain))
        if keyFiles != nil { list.append(.volatile(DomainName.keyFiles)) }
        let (suites, version) = state.withLock { ($0.search.suites, $0.search.suitesVersion) }
        list += suites.map { .persistent($0) }
        list.append(.persistent(DomainName.global))
        list += configuration.languages.map { .volatile($0) }
        list.append(.volatile(DomainName.registration))

        // A handful of entries: compared in the array. A `Set<SearchEntry>` here cost a fresh process about
        // 15% of opening its first store (the runtime instantiating the set's type and looking up its
        // conformances on first use; Docs/Benchmarks.md).
        var unique: [SearchEntry] = []
        unique.reserveCapacity(list.count)
        for entry in list where !unique.contains(entry) { unique.append(entry) }
        list = unique
        // The persistent domains in order, each once (`unique` already holds each entry once). Arrays rather
        // than sets, for the same reason: no `Set` on a store's open.
        let needed = list.compactMap { entry -> String? in
            if case .persistent(let name) = entry { return name }
            return nil
        }
        let missing = state.withLock { state in needed.filter { state.search.persistent[$0] == nil } }
        var added: [String: PersistentDomain] = [:]
        var directories = LayerDirectories(fileSystem: configuration.fileSystem)
        for name in missing { added[name] = attach(name, directories: &directories) }
        let (published, detached): (Bool, [PersistentDomain]) = state.withLock { state in
            // Files attached here that another rebuild attached first are not needed twice.
            var detached: [PersistentDomain] = []
            for (name, domain) in added {
                if state.search.persistent[name] == nil {
                    state.search.persistent[name] = domain
                } else {
                    detached.append(domain)
                }
            }
            guard state.search.suitesVersion == version else { return (false, detached) }
            state.search.entries = list
            flattenSearchList(&state)
            for name in Array(state.search.persistent.keys) {
                state.search.persistent[name]?.inSearchList = needed.contains(name)
                if let domain = state.search.persistent[name], !domain.inSearchList, domain.streams == 0 {
                    detached.append(domain)
                    state.search.persistent.removeValue(forKey: name)
                }
            }
            return (true, detached)
        }
        for domain in detached { detach(domain) }
        return published
    }

    /// Which directories of the layers outside the user's directory exist, looked at once for all the domains
    /// one search-list rebuild attaches (each directory and each root at most once): arrays, a handful of
    /// paths.
    struct LayerDirectories {
        var missing: [String] = []
        var present: [String] = []
        /// The store's file system.
        var fileSystem: any DefaultsFileSystem

        /// Whether `directory` may exist, from what was seen before or one `stat`: false only when nothing
        /// is there (`ENOENT`, `ENOTDIR`); a directory that cannot be looked at (`EACCES`) may exist, so that
        /// its files' own `stat` reports why they cannot be read.
        mutating func exists(_ directory: String) -> Bool {
            if missing.contains(directory) { return false }
            if present.contains(directory) { return true }
            let absent: Bool
            do throws(SystemError) {
                absent = try fileSystem.stamp(atPath: directory) == nil
            } catch {
                absent = false
            }
            if absent { missing.append(directory) } else { present.append(directory) }
            return !absent
        }
    }

    /// Whether a layer's file may exist: false when its directory, or the root of its layers (the managed or
    /// any-user directory), was found missing. The user's own directory is not looked at: its files are.
    private func layerMayExist(_ layer: PreferenceLayer, directories: inout LayerDirectories) -> Bool {
        let locations = configuration.locations
        let root: String
        switch layer {
        case .managed, .managedUser: root = locations.managedDirectory
        case .anyUser, .anyUserCurrentHost: root = locations.anyUserDirectory
        case .currentUser: return true
        case .currentUserCurrentHost: root = locations.userDirectory
        }
        if root != locations.userDirectory && !directories.exists(root) { return false }
        switch layer {
        case .managed, .anyUser, .currentUser: return true
        case .managedUser, .currentUserCurrentHost, .anyUserCurrentHost:
            return directories.exists(locations.directory(of: layer))
        }
    }

    /// Loads and watches the files of a persistent domain, and observes them for this store.
    func attach(_ name: String) -> PersistentDomain {
        var directories = LayerDirectories(fileSystem: configuration.fileSystem)
        return attach(name, directories: &directories)
    }

    /// ``attach(_:)``, with what is known of the layers' directories.
    ///
    /// A layer whose directory is missing (the managed, per-host and any-user directories rarely exist) gets
    /// no file: only its path is watched, and the layer is *awaited* (``PersistentDomain/awaited``) until
    /// the directory appears (the watcher's first look at it), a write goes there, or `synchronize()` finds
    /// it (``attachAwaitedLayer(_:of:deferred:)``). Making, loading, observing and registering a file that
    /// cannot exist cost a store's first open time for each of the eight of its twelve layer files that a
    /// usual machine lacks (Docs/Benchmarks.md).
    func attach(_ name: String, directories: inout LayerDirectories) -> PersistentDomain {
        var domain = PersistentDomain(name: name, files: PersistentDomain.LayerFiles())
        for layer in PreferenceLayer.searchOrder {
            if layerMayExist(layer, directories: &directories) {
                let path = configuration.locations.path(forDomain: name, layer: layer)
                domain.files.append(attachFile(layer, of: name, at: path))
                continue
            }
            domain.awaited |= layer.awaitedBit
            // The per-user managed layer's path names the user: while the managed directory is missing (known
            // from the look above), the managed layer's watch stands for it (``PersistentDomain/watchedAwaited``).
            if layer == .managedUser && !directories.exists(configuration.locations.managedDirectory) { continue }
            domain.watchedAwaited |= layer.awaitedBit
            watchAwaited(layer, of: name)
        }
        return domain
    }

    /// Wires a layer file to the watcher, which knows only its path: a change there reloads the file.
    private func watch(_ file: DomainFile) {
        // The registration makes its logger only if it has something to log, from this copy of the
        // configuration (not `self`: the process's watcher would keep the store alive).
        let configuration = self.configuration
        guard let fileWatcher else { return }
        fileWatcher.watch(file.path, owner: file, logger: configuration.logger) { [weak file] event in
            file?.reload(verifyContents: event.writtenInPlace, deferringRemoval: true)
        }
        // A store that follows the file is one of its readers: it says which version it runs.
        ReaderAnnouncer.shared.start(file)
    }

    /// Watches the path of an awaited layer for this store (``awaitedLayerWatches``).
    private func watchAwaited(_ layer: PreferenceLayer, of name: String) {
        guard let fileWatcher else { return }
        let configuration = self.configuration
        let path = configuration.locations.path(forDomain: name, layer: layer)
        fileWatcher.watch(path, owner: awaitedLayerWatches, logger: configuration.logger) { [weak self] event in
            self?.awaitedLayerMayHaveAppeared(layer, of: name, event: event)
        }
    }

    /// The file of one layer of a domain being attached: loaded, observed by this store and watched; a
    /// failure to read it recorded.
    private func attachFile(_ layer: PreferenceLayer, of name: String, at path: String) -> PersistentDomain.LayerFile {
        let file = DomainFileRegistry.shared.file(
            atPath: path, owner: fileOwner, clock: configuration.clock,
            fileSystem: configuration.fileSystem)
        // Loaded before observing: the first load is not a change (the merged view is rebuilt next), and a
        // 10,000-key domain would otherwise be resolved key by key.
        file.loadIfNeeded()
        let token = file.addObserver { [weak self] event in self?.handle(event, domain: name, layer: layer) }
        watch(file)
        // A file that cannot be read is reported to every store that uses it.
        // (Found by the caller's call, so reported on its thread.)
        if let failure = file.currentFailure { record(failure) }
        return PersistentDomain.LayerFile(layer: layer, file: file, token: token)
    }

    func detach(_ domain: PersistentDomain) {
        for entry in domain.files {
            entry.file.removeObserver(entry.token)
            if let fileWatcher {
                fileWatcher.unwatch(entry.file.path, owner: entry.file)
                ReaderAnnouncer.shared.stop(entry.file, by: ObjectIdentifier(self))
            }
        }
        for layer in PreferenceLayer.searchOrder where domain.watchedAwaited & layer.awaitedBit != 0 {
            fileWatcher?.unwatch(
                configuration.locations.path(forDomain: domain.name, layer: layer), owner: awaitedLayerWatches)
        }
    }

    /// The watcher saw something at or above an awaited layer's path (a directory appeared, a file was
    /// written there, a link on the way changed): the layer is attached once its directory exists; if
    /// another call attached it first, its file is reloaded (the change may be one that call's read did
    /// not see).
    private func awaitedLayerMayHaveAppeared(_ layer: PreferenceLayer, of name: String, event: FileWatcher.Event) {
        let (known, awaited) = attachedLayer(layer, of: name)
        if let known {
            known.reload(verifyContents: event.writtenInPlace, deferringRemoval: true)
            return
        }
        // The watcher tells every path awaiting a directory when anything appears where it waits (another
        // layer's directory, an unrelated one): only a layer whose directory is there now is attached.
        var directories = LayerDirectories(fileSystem: configuration.fileSystem)
        if awaited, layerMayExist(layer, directories: &directories) {
            attachAwaitedLayer(layer, of: name, deferred: true)
        }
        // The managed layer's watch stands for the per-user one while the managed directory is missing.
        if layer == .managed { awaitManagedUserLayer(of: name, directories: &directories, deferred: true) }
    }

    /// The per-user managed layer of a domain, when it is awaited without a watch of its own (the managed
    /// directory was missing): attached if its directory is there now, else watched once the managed
    /// directory exists (its path is then worth the user's name).
    private func awaitManagedUserLayer(of name: String, directories: inout LayerDirectories, deferred: Bool) {
        let unwatched = state.withLock { state in
            state.search.persistent[name]?.awaitsUnwatched(.managedUser) ?? false
        }
        guard unwatched else { return }
        if layerMayExist(.managedUser, directories: &directories) {
            attachAwaitedLayer(.managedUser, of: name, deferred: deferred)
            return
        }
        guard directories.exists(configuration.locations.managedDirectory) else { return }
        let watch = state.withLock { state -> Bool in
            guard var domain = state.search.persistent[name], domain.awaitsUnwatched(.managedUser) else { return false }
            domain.watchedAwaited |= PreferenceLayer.managedUser.awaitedBit
            state.search.persistent[name] = domain
            return true
        }
        if watch { watchAwaited(.managedUser, of: name) }
    }

    /// Attaches an awaited layer of an attached domain (``PersistentDomain/awaited``): its file is loaded,
    /// observed and watched, takes its place in the search list, and its keys are reported as changed
    /// where they change what the store shows. Returns the layer's file, or nil when the domain is no
    /// longer attached (the caller then uses a file of its own).
    ///
    /// Calls may race (the watcher's thread, a write, `synchronize()`): each loads the same file (the
    /// process has one per path), one publishes it, the others take the published one. The file is read
    /// before it is published and watched under the awaited path's own watch, which stays until the file's
    /// watch is in place: a write meanwhile reaches ``awaitedLayerMayHaveAppeared(_:of:event:)``, which
    /// reloads the published file. The keys are reported after publishing, from the file as it is then,
    /// so a change that reached the file before the store observed it is reported as well (as `.external`,
    /// also an edit of this process made to the layer in that instant: the view converges, the origin of
    /// such a racing edit is the one thing it may misname).
    ///
    /// - Parameter deferred: Whether a failure to read the file is reported in the background (found on
    ///   the watcher's thread) or on the caller's thread.
    @discardableResult
    func attachAwaitedLayer(_ layer: PreferenceLayer, of name: String, deferred: Bool) -> DomainFile? {
        let configuration = self.configuration
        let path = configuration.locations.path(forDomain: name, layer: layer)
        let file = DomainFileRegistry.shared.file(
            atPath: path, owner: fileOwner, clock: configuration.clock,
            fileSystem: configuration.fileSystem)
        // A layer of the domain the store's validators judge: judged from its first version on.
        let judging = name == configuration.applicationDomain && state.withLock { $0.validation != nil }
        if judging { startJudging(file) }
        // Read again even when another store of the process has it loaded: its directory just appeared.
        file.reload()
        let token = file.addObserver { [weak self] event in self?.handle(event, domain: name, layer: layer) }
        let (published, wasWatched, judged): (DomainFile?, Bool, Bool) = state.withLock { state in
            guard var domain = state.search.persistent[name] else { return (nil, false, false) }
            if let known = domain.file(layer) { return (known, false, false) }
            domain.files = domain.files.inserting(PersistentDomain.LayerFile(layer: layer, file: file, token: token))
            let wasWatched = domain.watchedAwaited & layer.awaitedBit != 0
            domain.awaited &= ~layer.awaitedBit
            domain.watchedAwaited &= ~layer.awaitedBit
            state.search.persistent[name] = domain
            flattenSearchList(&state)
            let judged = judging && state.validation != nil
            if judged { state.validation?.judgedFiles.append(file) }
            return (file, wasWatched, judged)
        }
        if judging && !judged { file.removeJudge(id: fileJudgeID) }
        guard published === file else {
            file.removeObserver(token)
            return published
        }
        watch(file)
        if wasWatched { fileWatcher?.unwatch(path, owner: awaitedLayerWatches) }
        if let failure = file.currentFailure { record(failure, deferred: deferred) }
        let contents = file.contents
        if !contents.isEmpty {
            let deltas = contents.map { KeyDelta(key: $0.key, old: nil, new: $0.value) }
            apply(deltas, domain: name, layer: layer, origin: .external)
        }
        return file
    }

    /// Attaches the awaited layers whose directory exists now (`synchronize()`: a store that does not
    /// watch finds them there).
    func attachAppearedLayers() {
        let awaiting = state.withLock { state in
            state.search.persistent.values.filter { $0.awaited != 0 }.map { ($0.name, $0.awaited) }
        }
        guard !awaiting.isEmpty else { return }
        var directories = LayerDirectories(fileSystem: configuration.fileSystem)
        for (name, awaited) in awaiting {
            for layer in PreferenceLayer.searchOrder where awaited & layer.awaitedBit != 0 {
                if layerMayExist(layer, directories: &directories) {
                    attachAwaitedLayer(layer, of: name, deferred: false)
                }
            }
            awaitManagedUserLayer(of: name, directories: &directories, deferred: false)
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
            (state.search.entries, state.volatileDomains, state.search.persistent, state.view.generation)
        }
        let (list, volatiles, persistent, generation) = sources
        // The deployment's layers, read outside the lock: the environment's variables and the directories of key
        // files, both typed by the application domain's published schema (a broken schema types nothing: its own
        // problem is reported where schemas are read).
        let schema =
            environment == nil && keyFiles == nil
            ? nil
            : try? DomainSchema.find(
                domain: configuration.applicationDomain, in: configuration.locations.schemaDirectories,
                on: configuration.fileSystem)
        let environmentLayer = materializeEnvironment(volatiles: volatiles, persistent: persistent, schema: schema)
        let keyFileLayer = keyFiles?.read(schema: schema, fileSystem: configuration.fileSystem)
        // Every source's contents in precedence order, empty ones left out: forced values first, then the search
        // list. As `Source`s (the type the flattened list uses already), not a `[[String: PropertyList]]`:
        // one array type less for the runtime to instantiate on a fresh process's first open.
        var layers: [Source] = []
        for entry in list {
            if case .persistent(let name) = entry {
                for item in persistent[name]?.files ?? PersistentDomain.LayerFiles() where item.layer.isManaged {
                    let contents = item.file.contents
                    if !contents.isEmpty { layers.append(.volatile(contents)) }
                }
            }
        }
        for entry in list {
            switch entry {
            case .volatile(let name):
                let contents =
                    switch name {
                    case DomainName.environment: environmentLayer?.values
                    case DomainName.keyFiles: keyFileLayer?.values
                    default: volatiles[name]
                    }
                if let contents, !contents.isEmpty { layers.append(.volatile(contents)) }
            case .persistent(let name):
                for item in persistent[name]?.files ?? PersistentDomain.LayerFiles() where !item.layer.isManaged {
                    let contents = item.file.contents
                    if !contents.isEmpty { layers.append(.volatile(contents)) }
                }
            }
        }
        let merged = Self.merge(layers)
        let outcome = state.withLock { state -> (EffectiveView.Applied, DeploymentNews)? in
            guard let applied = state.view.apply(.all(merged, domain: changedDomain, basedOn: generation)) else {
                return nil
            }
            guard environmentLayer != nil || keyFileLayer != nil else { return (applied, DeploymentNews()) }
            // The layers as the view now shows them, for the lookups of single keys and for the questions of
            // where a value comes from; their problems reported once while they last; their files watched.
            let record = state.environment ?? EnvironmentState()
            state.environment = record
            var news = DeploymentNews()
            if let environmentLayer {
                state.volatileDomains[DomainName.environment] = environmentLayer.values
                if record.origins != environmentLayer.origins { record.pinsGeneration += 1 }
                news.pinsGeneration = record.pinsGeneration
                record.origins = environmentLayer.origins
                (news.environmentProblems, news.environmentFiles) = record.environment.take(
                    problems: environmentLayer.problems, watched: environmentLayer.files)
            }
            if let keyFileLayer {
                state.volatileDomains[DomainName.keyFiles] = keyFileLayer.values
                record.keyFileOrigins = keyFileLayer.origins
                (news.keyFileProblems, news.keyFiles) = record.keyFiles.take(
                    problems: keyFileLayer.problems, watched: keyFileLayer.watched)
            }
            flattenSearchList(&state)
            return (applied, news)
        }
        guard let (outcome, news) = outcome else { return false }
        if let environmentLayer { announcePins(environmentLayer.origins, generation: news.pinsGeneration) }
        for problem in news.environmentProblems {
            record(.environmentValueIgnored(variable: problem.variable, key: problem.key, reason: problem.reason))
        }
        for problem in news.keyFileProblems {
            record(.keyFileIgnored(path: problem.variable, key: problem.key, reason: problem.reason))
        }
        watchDeploymentFiles(news.environmentFiles, rebuilding: DomainName.environment)
        watchDeploymentFiles(news.keyFiles, rebuilding: DomainName.keyFiles)
        for resume in outcome.resumptions { resume() }
        for violation in firstReports(of: outcome.refusals) { record(.invalidValue(violation, domain: changedDomain)) }
        return true
    }

    /// The merged view of layers given in precedence order (first wins).
    ///
    /// Starts from the largest layer as it is (sharing its storage, no copy while nothing else changes it)
    /// and resolves only the keys of the other layers, kept beside it (``MergedValues``): opening a 10,000-key
    /// domain then costs no 10,000 insertions and no copy, and the view takes no memory of its own beyond the
    /// keys the other layers add or override. The layers are `.volatile` sources, the dictionaries themselves.
    static func merge(_ layers: [Source]) -> MergedValues {
        func contents(_ index: Int) -> [String: PropertyList] {
            if case .volatile(let contents) = layers[index] { return contents }
            return [:]
        }
        guard let largest = layers.indices.max(by: { contents($0).count < contents($1).count }) else { return [:] }
        let base = contents(largest)
        var overlay: [String: PropertyList] = [:]
        for index in layers.indices where index != largest {
            for key in contents(index).keys {
                var effective: PropertyList?
                for candidate in layers.indices {
                    if let value = contents(candidate)[key] {
                        effective = value
                        break
                    }
                }
                guard let effective else { continue }
                if base[key] != effective { overlay[key] = effective }
            }
        }
        return MergedValues(base: base, overlay: overlay)
    }

    /// Recomputes ``SearchList/forcedFiles``, ``SearchList/sources`` and the application files from the search list.
    func flattenSearchList(_ state: inout State) {
        var forced: [Source] = []
        var sources: [Source] = []
        for entry in state.search.entries {
            switch entry {
            case .volatile(let name):
                if let contents = state.volatileDomains[name], !contents.isEmpty { sources.append(.volatile(contents)) }
            case .persistent(let name):
                for item in state.search.persistent[name]?.files ?? PersistentDomain.LayerFiles() {
                    let file = Unmanaged.passUnretained(item.file)
                    if item.layer.isManaged { forced.append(.file(file)) } else { sources.append(.file(file)) }
                }
            }
        }
        state.search.forcedFiles = forced
        state.search.sources = sources
        let application = state.search.persistent[configuration.applicationDomain]
        state.search.applicationFile = application?.file(.currentUser).map { Unmanaged.passUnretained($0) }
        state.search.applicationForcedFiles =
            application?.files.compactMap {
                $0.layer.isManaged ? .file(Unmanaged.passUnretained($0.file)) : nil
            } ?? []
    }

    /// The effective value of one key, walking the search list: forced values first, then the domains in order.
    func resolve(_ key: String, _ state: State) -> PropertyList? {
        resolve(key, state, replacing: nil, with: nil)
    }

    /// The value a key would have if `file` held `fileValue` for it: forced values first, then the search list
    /// with `fileValue` in the file's place; `fileValue` itself when the file is not in the search list (a
    /// transaction on another domain). Without a file, the effective value.
    func resolve(
        _ key: String, _ state: State, replacing file: DomainFile?, with fileValue: PropertyList?
    ) -> PropertyList? {
        let target = file.map { Unmanaged.passUnretained($0).toOpaque() }
        for case .file(let forced) in state.search.forcedFiles {
            if let value = forced._withUnsafeGuaranteedRef({ $0.value(forKey: key) }) { return value }
        }
        var found = false
        for source in state.search.sources {
            switch source {
            case .volatile(let contents):
                if let value = contents[key] { return value }
            case .file(let other) where other.toOpaque() == target:
                found = true
                if let fileValue { return fileValue }
            case .file(let other):
                if let value = other._withUnsafeGuaranteedRef({ $0.value(forKey: key) }) { return value }
            }
        }
        return found ? nil : fileValue
    }
}

extension PreferenceLayer {
    /// The layer's place in ``searchOrder``.
    var searchRank: Int {
        switch self {
        case .managedUser: 0
        case .managed: 1
        case .currentUserCurrentHost: 2
        case .currentUser: 3
        case .anyUserCurrentHost: 4
        case .anyUser: 5
        }
    }

    /// The layer's bit in ``Defaults/PersistentDomain/awaited``.
    var awaitedBit: UInt8 { 1 << UInt8(searchRank) }
}

/// The environment layer (``EnvironmentLayer``) in the search list: materialised with every full rebuild of the
/// view, from the keys the other domains hold and the published schema.
extension Defaults {
    /// What the store keeps of its deployment's layers (the environment's and the key files'): where each value
    /// comes from, the problems reported (each once while it lasts), the files watched. A class, held only by a
    /// store that has such a layer: the state of every other store holds a nil reference, and its types are
    /// never instantiated on a fresh process's first open.
    final class EnvironmentState: @unchecked Sendable {
        // @unchecked: read and changed only under the store's lock.
        var origins: [String: EnvironmentLayer.Origin] = [:]
        /// Counts the changes of `origins`: the readers' announcements describe the keys pinned again only
        /// when it moved.
        var pinsGeneration: UInt64 = 0
        var keyFileOrigins: [String: String] = [:]
        var environment = Reported()
        var keyFiles = Reported()
    }

    /// One layer's problems reported and files watched: each problem reported once while it lasts, each file
    /// watched once.
    struct Reported {
        var problems: [EnvironmentLayer.Problem] = []
        var watched: [String] = []

        /// The layer read again found `problems` and `watched`: which problems are new (to report) and which
        /// files are new (to watch).
        mutating func take(problems found: [EnvironmentLayer.Problem], watched paths: [String])
            -> ([EnvironmentLayer.Problem], [String])
        {
            let newProblems = found.filter { !problems.contains($0) }
            problems = found
            let newPaths = paths.filter { !watched.contains($0) }
            watched += newPaths
            return (newProblems, newPaths)
        }
    }

    /// What a rebuild found new in the deployment's layers: problems to report, files to watch.
    struct DeploymentNews {
        var environmentProblems: [EnvironmentLayer.Problem] = []
        var environmentFiles: [String] = []
        var keyFileProblems: [EnvironmentLayer.Problem] = []
        var keyFiles: [String] = []
        /// The number of the keys the environment sets (``EnvironmentState/pinsGeneration``).
        var pinsGeneration: UInt64 = 0
    }

    /// The environment layer's values for the keys of `volatiles` and `persistent` (the sources of a rebuild)
    /// and of the application domain's published schema; nil when the store has no environment layer.
    func materializeEnvironment(
        volatiles: VolatileDomains, persistent: [String: PersistentDomain], schema: DomainSchema?
    ) -> EnvironmentLayer.Materialized? {
        guard let environment else { return nil }
        // An array, not a set: duplicates cost the materialisation nothing (it groups the names by variable).
        var known: [String] = []
        for name in volatiles.names where name != DomainName.environment {
            known += (volatiles[name] ?? [:]).keys
        }
        for domain in persistent.values where domain.inSearchList {
            for item in domain.files { known += item.file.contents.keys }
        }
        if let schema { known += schema.keys.keys }
        return environment.materialize(
            knownKeys: known, schema: schema, fileSystem: configuration.fileSystem,
            workingDirectory: CurrentProcess.workingDirectory)
    }

    /// This process published the application domain's schema: the environment layer, whose names and types
    /// come from it, is materialised again (a schema another process publishes is read at the next rebuild).
    func schemaPublished() {
        if environment != nil { rebuildMerged(changedDomain: DomainName.environment) }
    }

    /// Tells the readers' announcements of the files this store watches which keys its environment pins (its
    /// `generation` of them), so that `defaults write` of one of them can warn that this program will not see it.
    /// The keys are described when an announcement is written, off the rebuild.
    func announcePins(_ origins: [String: EnvironmentLayer.Origin], generation: UInt64) {
        guard fileWatcher != nil else { return }
        let describe: (@Sendable () -> [String: String])? =
            origins.isEmpty
            ? nil
            : { @Sendable in
                var keys: [String: String] = [:]
                keys.reserveCapacity(origins.count)
                for (key, origin) in origins { keys[key] = origin.source.description }
                return keys
            }
        let files = state.withLock { state in
            state.search.persistent.values.filter(\.inSearchList).compactMap { $0.file(.currentUser) }
        }
        for file in files {
            ReaderAnnouncer.shared.pin(file, by: ObjectIdentifier(self), generation: generation, keys: describe)
        }
    }

    /// Watches the files of the deployment's layers (`_FILE` variables' files, key files and the `..data` of a
    /// directory of them): a change rebuilds the view from the layer read again, attributed to `domain`.
    func watchDeploymentFiles(_ paths: [String], rebuilding domain: String) {
        guard let fileWatcher, !paths.isEmpty else { return }
        // The logger made only if there is something to log (its first making costs a fresh process's open
        // more than watching the files), from a copy of the configuration, not `self` (see `watch(_:)`).
        let configuration = self.configuration
        for path in paths {
            fileWatcher.watch(path, owner: environmentFileWatches, logger: configuration.logger) { [weak self] _ in
                self?.rebuildMerged(changedDomain: domain)
            }
        }
    }

    /// Whether keys that appeared in a file (`deltas`) may take a variable the environment layer did not give
    /// them (its names are decided from the keys the store knows): the layer is then materialised again.
    func environmentMayName(_ deltas: some Sequence<KeyDelta>, _ state: State) -> Bool {
        guard let environment else { return false }
        let current = state.volatileDomains[DomainName.environment] ?? [:]
        for delta in deltas where delta.old == nil && delta.new != nil && current[delta.key] == nil {
            guard let suffix = EnvironmentLayer.variableSuffix(forKey: delta.key) else { continue }
            if environment.settings[suffix] != nil
                || (environment.hasFileNames && environment.settings[suffix + "_FILE"] != nil)
            {
                return true
            }
        }
        return false
    }
}
