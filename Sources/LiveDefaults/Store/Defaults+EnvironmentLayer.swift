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
        // On the watcher's thread, where the files' announcements start (see `watch(_:)`); a store that does not
        // watch announces nothing.
        guard let fileWatcher else { return }
        let (announcer, store) = (configuration.context.storage.announcer, ObjectIdentifier(self))
        for file in files {
            fileWatcher.perform { announcer.pin(file, by: store, generation: generation, keys: describe) }
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
