/// The search list's persistent domains: their files attached, loaded, watched and observed for the store,
/// layers awaited while their directory is missing, and detached.
extension Defaults {
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
    func watch(_ file: DomainFile) {
        // The registration makes its logger only if it has something to log, from this copy of the
        // configuration (not `self`: the process's watcher would keep the store alive).
        let configuration = self.configuration
        guard let fileWatcher else { return }
        fileWatcher.watch(file.path, owner: file, logger: configuration.logger) { [weak file] event in
            file?.reload(verifyContents: event.writtenInPlace, deferringRemoval: true)
        }
        // A store that follows the file is one of its readers: it says which version it runs. Started on the
        // watcher's thread, after the registration: the announcement's first record wakes the records queue,
        // whose threads a fresh process's open would otherwise start before its first read returns. Its stop and
        // its pins take the same way, so that they meet it in order.
        let announcer = configuration.context.storage.announcer
        fileWatcher.perform { announcer.start(file) }
    }

    /// Watches the path of an awaited layer for this store (``awaitedLayerWatches``).
    func watchAwaited(_ layer: PreferenceLayer, of name: String) {
        guard let fileWatcher else { return }
        let configuration = self.configuration
        let path = configuration.locations.path(forDomain: name, layer: layer)
        fileWatcher.watch(path, owner: awaitedLayerWatches, logger: configuration.logger) { [weak self] event in
            self?.awaitedLayerMayHaveAppeared(layer, of: name, event: event)
        }
    }

    /// The file of one layer of a domain being attached: loaded, observed by this store and watched; a
    /// failure to read it recorded.
    func attachFile(_ layer: PreferenceLayer, of name: String, at path: String) -> PersistentDomain.LayerFile {
        let file = configuration.context.storage.registry.file(
            atPath: path, owner: fileOwner, clock: configuration.clock,
            fileSystem: configuration.fileSystem, context: configuration.context.storage)
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
                let (announcer, file, store) = (
                    configuration.context.storage.announcer, entry.file, ObjectIdentifier(self)
                )
                fileWatcher.perform { announcer.stop(file, by: store) }
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
    func awaitedLayerMayHaveAppeared(_ layer: PreferenceLayer, of name: String, event: FileWatcher.Event) {
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
    func awaitManagedUserLayer(of name: String, directories: inout LayerDirectories, deferred: Bool) {
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
        let file = configuration.context.storage.registry.file(
            atPath: path, owner: fileOwner, clock: configuration.clock,
            fileSystem: configuration.fileSystem, context: configuration.context.storage)
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

}
