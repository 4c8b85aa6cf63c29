/// The search list: its persistent domains found and attached in order (the attaching itself:
/// ``Defaults/attach(_:)``), and the file of a domain outside it.
extension Defaults {
    /// The file of one layer of a persistent domain: the attached one when the domain is, else the process's
    /// file for the path, kept among the ``recentFiles``.
    func file(forDomain domain: String, layer: PreferenceLayer) -> DomainFile {
        let (known, awaited) = attachedLayer(layer, of: domain)
        if let known { return known }
        // A write to a layer whose directory was missing: attached first, so that the store sees it.
        if awaited, let attached = attachAwaitedLayer(layer, of: domain, deferred: false) { return attached }
        let file = configuration.context.storage.registry.file(
            atPath: configuration.locations.path(forDomain: domain, layer: layer),
            owner: fileOwner, clock: configuration.clock,
            fileSystem: configuration.fileSystem, context: configuration.context.storage)
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
    func attachedLayer(_ layer: PreferenceLayer, of domain: String) -> (file: DomainFile?, awaited: Bool) {
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
    func tryRebuildSearchList() -> Bool {
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
    func layerMayExist(_ layer: PreferenceLayer, directories: inout LayerDirectories) -> Bool {
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

}
