/// The symbolic-link chains of the paths a ``FileWatcher`` watches: which links and files each registered
/// path depends on, so that an event on any of them reaches the path's registrants.
///
/// Plain paths (no link anywhere, the ordinary case) have no entry at all: they cost nothing here, and the
/// watcher finds their registrants by the event's path as it always did. Only a path that is a link, or
/// lies in a directory reached through one, has a chain, and its events are looked up in ``dependents``.
/// A value type kept under the watcher's lock; the system calls that resolve chains happen outside it.
struct WatchedLinks {
    /// How each registered directory resolves (every one, once resolved).
    private(set) var directories: [String: SymlinkChain] = [:]
    /// The chains of registered files that are links or lie in a directory that is not plain.
    private(set) var files: [String: SymlinkChain] = [:]
    /// Every link and target of a chain in ``files`` → the registered files whose chains hold it.
    private(set) var dependents: [String: Set<String>] = [:]
    /// Registered files whose chains must be worked out (again): new registrations, files an event touched.
    var unresolved: Set<String> = []
    /// Whether the directories' chains must be worked out again (a directory or a link on the way changed).
    var directoriesStale = false

    /// Records a directory's chain; true when it differs from the one known before (not for the first).
    mutating func setDirectory(_ directory: String, _ chain: SymlinkChain) -> Bool {
        let old = directories.updateValue(chain, forKey: directory)
        return old != nil && old != chain
    }

    /// Records a file's chain (nil for a plain file); true when it differs from the one known before.
    mutating func setFile(_ path: String, _ chain: SymlinkChain?) -> Bool {
        let old = files[path]
        guard old != chain else { return false }
        if let old { removeDependents(of: path, old) }
        if let chain {
            files[path] = chain
            for dependency in chain.links + [chain.target] { dependents[dependency, default: []].insert(path) }
        } else {
            files.removeValue(forKey: path)
        }
        return true
    }

    /// Forgets a file nobody watches any more.
    mutating func forgetFile(_ path: String) {
        _ = setFile(path, nil)
        unresolved.remove(path)
    }

    /// Forgets a directory nobody watches any more.
    mutating func forgetDirectory(_ directory: String) {
        directories.removeValue(forKey: directory)
    }

    /// Whether files in `directory` are reached through no link (true while its chain is not known yet).
    func isPlain(_ directory: String) -> Bool {
        directories[directory]?.isPlain ?? true
    }

    /// The directories that hold a link or target of some chain → the registered directories whose files
    /// need them watched.
    func chainDirectories() -> [String: Set<String>] {
        var result: [String: Set<String>] = [:]
        for (path, chain) in files {
            let registered = PathComponents.directory(of: path)
            for dependency in chain.links + [chain.target] {
                result[PathComponents.directory(of: dependency), default: []].insert(registered)
            }
        }
        return result
    }

    /// Registered files with a chain through something in `directory` (a watch on it was just added, or it
    /// went away).
    func files(dependingOn directory: String) -> [String] {
        files.compactMap { path, chain in
            (chain.links + [chain.target]).contains { PathComponents.directory(of: $0) == directory } ? path : nil
        }
    }

    private mutating func removeDependents(of path: String, _ chain: SymlinkChain) {
        for dependency in chain.links + [chain.target] {
            dependents[dependency]?.remove(path)
            if dependents[dependency]?.isEmpty == true { dependents.removeValue(forKey: dependency) }
        }
    }
}
