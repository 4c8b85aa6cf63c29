/// The key-file layer of a store with ``Defaults/Configuration/keyFileDirectories``: directories of one file per
/// key, as a Kubernetes ConfigMap or Secret mounts them (`kubectl create configmap api --from-literal=RateLimit=200`
/// gives a file `RateLimit` holding `200`), systemd's `$CREDENTIALS_DIRECTORY` and Docker's `/run/secrets` lay
/// them out. A volatile domain (``DomainName/keyFiles``) directly below the application domain's files and above
/// the suites, the global domain and the registration domain: a deployment's base that `defaults write` overrides.
///
/// **Keys.** Each regular file of a directory is a key, its name the key's name; hidden files (a leading `.`:
/// Kubernetes' `..data` and its time-stamped directories) are not keys. The first directory that has a key wins.
/// Its value is the file's text, typed and checked as the environment layer's are (``EnvironmentLayer``: by the
/// published schema, else old-style arrays and dictionaries, else a string), one trailing newline dropped; a file
/// that cannot be a value (a FIFO, a directory, too large, not UTF-8, a loop of links) or that the schema refuses
/// is left out and reported once while it lasts.
///
/// **One version at a time.** A directory with `..data` (Kubernetes' atomic writer) is read through the one
/// directory `..data` names when the read starts: every key of one update together, never some keys of two. The
/// writer swaps `..data` to a new directory and then removes the old one, so a file that vanishes under the read
/// sends it back to the new `..data` (up to ``readAttempts`` times; a read swapped under every attempt is not
/// whole, ``Read/isWhole``, and the store keeps the version it shows). A directory without it is read file by file,
/// and every name in it is watched: a file added, removed, replaced or rewritten arrives live.
struct KeyFileLayer: Sendable {
    /// The directories, absolute, in precedence order.
    let directories: [String]

    /// How many times a read starts again when the version it reads is replaced under it.
    static let readAttempts = 8
    /// How many reads a store's first read of the layer makes while each is swapped under every attempt (it has
    /// no version to keep instead).
    static let firstReadRounds = 8
    /// The most files a directory may hold: more are left out, reported.
    static let maximumFiles = 4096

    /// What the layer holds now.
    struct Read: Sendable {
        var values: [String: PropertyList] = [:]
        /// The file each key's value came from.
        var origins: [String: String] = [:]
        var problems: [EnvironmentLayer.Problem] = []
        /// The paths to watch: a volume's `..data`, or every name of a directory without it
        /// (``FileWatcher/everyName(in:)``: a file written, replaced, removed or added).
        var watched: [String] = []
        /// False when a volume was swapped under every attempt of the read: what it holds may be keys of two
        /// updates, or some keys of none, so it must not be shown (the store keeps the version it shows; the
        /// swap that ends the run of updates is watched, and read).
        var isWhole = true
    }

    /// The layer's keys and values, typed by `schema`.
    func read(schema: DomainSchema?, fileSystem: any DefaultsFileSystem) -> Read {
        var result = Read()
        for (index, directory) in directories.enumerated() {
            let one = Self.read(directory: directory, schema: schema, fileSystem: fileSystem)
            // The first directory's read as it is (the usual one directory: no second copy of its keys).
            guard index > 0 else {
                result = one
                continue
            }
            for (key, value) in one.values where result.values[key] == nil {
                result.values[key] = value
                result.origins[key] = one.origins[key]
            }
            result.problems += one.problems
            result.watched += one.watched
            result.isWhole = result.isWhole && one.isWhole
        }
        return result
    }

    /// One directory's keys.
    static func read(directory: String, schema: DomainSchema?, fileSystem: any DefaultsFileSystem) -> Read {
        let data = directory + "/..data"
        // The directory `..data` names (relative to the directory, as the kubelet writes it), nil when it is not a
        // link: a plain directory of keys.
        func currentVersion() -> String? {
            guard fileSystem.isSymbolicLink(data), let target = try? fileSystem.readLink(data) else { return nil }
            return target.hasPrefix("/") ? target : directory + "/" + target
        }
        var attempt = 0
        while true {
            attempt += 1
            var result = Read()
            // The version `..data` names, if it is a Kubernetes volume: its files are read there, and its update
            // always swaps `..data`. A plain directory's files are written in place, replaced, removed and added
            // by name: every name of it is watched (a new `..data` is one of them).
            let version = currentVersion()
            let source = version ?? directory
            result.watched.append(version == nil ? FileWatcher.everyName(in: directory) : data)
            var names = fileSystem.namesInDirectory(source).filter { !$0.hasPrefix(".") }.sorted()
            if names.count > maximumFiles {
                result.problems.append(
                    EnvironmentLayer.Problem(
                        variable: directory, key: nil,
                        reason:
                            "\(names.count) files, more than the \(maximumFiles) a directory of keys may hold; the first \(maximumFiles) by name are read"
                    ))
                names = Array(names.prefix(maximumFiles))
            }
            var replaced = false
            result.values.reserveCapacity(names.count)
            result.origins.reserveCapacity(names.count)
            for name in names {
                let file = source + "/" + name
                let shown = directory + "/" + name
                switch EnvironmentLayer.readValueFile(file, on: fileSystem) {
                case .success(let text):
                    switch EnvironmentLayer.typedValue(text, key: name, schema: schema) {
                    case .success(let value):
                        result.values[name] = value
                        result.origins[name] = shown
                    case .failure(let reason):
                        result.problems.append(
                            EnvironmentLayer.Problem(variable: shown, key: name, reason: reason.description))
                    }
                case .failure(let reason):
                    // Gone under the read: the writer swapped `..data` to a newer version; read that one.
                    if version != nil, !fileSystem.exists(file) {
                        if attempt < readAttempts {
                            replaced = true
                            break
                        }
                        result.isWhole = false
                    }
                    result.problems.append(
                        EnvironmentLayer.Problem(variable: shown, key: name, reason: reason.description))
                }
                if replaced { break }
            }
            if replaced { continue }
            // The version read is still the current one, or the read starts again.
            if let version, attempt < readAttempts, currentVersion() != version { continue }
            return result
        }
    }
}
