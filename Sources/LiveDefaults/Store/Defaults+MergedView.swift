/// The effective view from the search list: merged from scratch after a change of the list or of a volatile
/// domain, flattened for lookups, and one key resolved through it.
extension Defaults {
    /// Rebuilds the merged view from scratch (after a change of the search list or of a volatile domain)
    /// and reports the effective changes, attributed to `changedDomain`.
    func rebuildMerged(changedDomain: String) {
        while !tryRebuildMerged(changedDomain: changedDomain) {}
    }

    /// One attempt of ``rebuildMerged(changedDomain:)``; false, having published nothing, when `merged`
    /// changed while the new view was computed.
    func tryRebuildMerged(changedDomain: String) -> Bool {
        let sources = state.withLock { state in
            (
                state.search.entries, state.volatileDomains, state.search.persistent, state.view.generation,
                state.environment.map { ($0.keyFileOrigins, $0.keyFiles.problems) }
            )
        }
        let (list, volatiles, persistent, generation, keyFilesShown) = sources
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
        var keyFileLayer = keyFiles?.read(schema: schema, fileSystem: configuration.fileSystem)
        if var layer = keyFileLayer, !layer.isWhole {
            // A volume swapped under every attempt of the read: what it holds is no one version. The layer keeps
            // the version it shows (the swap that ends the run of updates is watched, and read); a first read,
            // with none to keep, is made again until it is whole, a few times at most.
            if let shown = volatiles[DomainName.keyFiles], let (origins, problems) = keyFilesShown {
                layer.values = shown
                layer.origins = origins
                layer.problems = problems
                keyFileLayer = layer
            } else {
                for _ in 1..<KeyFileLayer.firstReadRounds where keyFileLayer?.isWhole == false {
                    keyFileLayer = keyFiles?.read(schema: schema, fileSystem: configuration.fileSystem)
                }
            }
        }
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
