import Foundation

/// Domains and the search list: registration, suites, volatile and persistent domains, forced keys.
extension Defaults {
    // MARK: Registration domain

    /// Adds values to the registration domain, the last domain searched: the values a key has when nobody
    /// set it. They are never written to disk; register them at every start.
    public func register(defaults registrationDictionary: [String: PropertyList]) {
        changeVolatileDomains(DomainName.registration) { domains in
            domains[DomainName.registration, default: [:]].merge(registrationDictionary) { _, new in new }
            return true
        }
    }

    /// Adds Foundation-typed values to the registration domain; a `URL` is stored as ``set(_:forKey:)-(URL?,_)``
    /// stores it (``url(forKey:)`` reads it back), and values with no property-list form are skipped and logged.
    public func register(defaults registrationDictionary: [String: Any]) {
        register(defaults: converted(registrationDictionary, context: "register(defaults:)"))
    }

    // MARK: Suites

    /// Inserts a persistent domain into the search list after the application domain (and after suites
    /// added before it). Invalid names and the application and global domains are ignored.
    public func addSuite(named suiteName: String) {
        guard (try? DomainName.validate(suiteName)) != nil, suiteName != configuration.applicationDomain,
            suiteName != DomainName.global
        else { return }
        let added = state.withLock { state in
            guard !state.search.suites.contains(suiteName) else { return false }
            state.search.suites.append(suiteName)
            state.search.suitesVersion &+= 1
            return true
        }
        if added { rebuildSearchList() }
    }

    /// Removes a suite from the search list.
    public func removeSuite(named suiteName: String) {
        let removed = state.withLock { state in
            guard let index = state.search.suites.firstIndex(of: suiteName) else { return false }
            state.search.suites.remove(at: index)
            state.search.suitesVersion &+= 1
            return true
        }
        if removed { rebuildSearchList() }
    }

    /// The domain names searched, in order, with `NSArgumentDomain` first and `NSRegistrationDomain` last.
    public var searchList: [String] {
        state.withLock { state in
            state.search.entries.map { entry in
                switch entry {
                case .volatile(let name), .persistent(let name): name
                }
            }
        }
    }

    // MARK: Volatile domains

    /// The names of the volatile domains, `NSArgumentDomain` and `NSRegistrationDomain` included.
    public var volatileDomainNames: [String] {
        state.withLock { $0.volatileDomains.names.sorted() }
    }

    /// The contents of a volatile domain; empty when there is none of that name.
    public func volatileDomain(forName domainName: String) -> [String: Any] {
        volatileDomainValues(forName: domainName).mapValues(\.foundationValue)
    }

    /// The contents of a volatile domain as ``PropertyList`` values, as ``value(forKey:)`` returns them (the
    /// library's `…Values` twin of each Foundation call that returns Foundation objects).
    public func volatileDomainValues(forName domainName: String) -> [String: PropertyList] {
        state.withLock { $0.volatileDomains[domainName] ?? [:] }
    }

    /// Creates a volatile domain. It is searched when its name is in the search list (a language name).
    ///
    /// - Throws: ``DefaultsError/Code/volatileDomainExists`` when a volatile domain of that name exists
    ///   (Foundation raises an exception).
    public func trySetVolatileDomain(_ domain: [String: PropertyList], forName domainName: String)
        throws(DefaultsError)
    {
        // The check and the insertion in one critical section: of two callers with one name, one succeeds.
        let inserted = changeVolatileDomains(domainName) { domains in
            guard domains[domainName] == nil else { return false }
            domains[domainName] = domain
            return true
        }
        guard inserted else { throw .volatileDomainExists(domainName) }
    }

    /// Creates a volatile domain from Foundation-typed values, with Foundation's signature (it does not
    /// throw): where Foundation raises — a name that exists, `NSArgumentDomain` and `NSRegistrationDomain`
    /// included — the domain is refused and its contents kept; a value with no property-list form is refused
    /// too. Either is logged and reported (``lastError``, the error handler); nothing changes.
    public func setVolatileDomain(_ domain: [String: Any], forName domainName: String) {
        report { () throws(DefaultsError) in
            try trySetVolatileDomain(try Self.convertedDomain(domain), forName: domainName)
        }
    }

    /// The throwing form under a `set` name, which the API's rule keeps for forms that do not throw.
    @available(*, deprecated, renamed: "trySetVolatileDomain(_:forName:)")
    public func setVolatileDomain(_ domain: [String: PropertyList], forName domainName: String) throws(DefaultsError) {
        try trySetVolatileDomain(domain, forName: domainName)
    }

    private static func convertedDomain(_ domain: [String: Any]) throws(DefaultsError) -> [String: PropertyList] {
        var converted: [String: PropertyList] = [:]
        for (key, value) in domain {
            do throws(PropertyListError) { converted[key] = try storedValue(forFoundationValue: value) } catch {
                throw .notAPropertyList(key: key, error)
            }
        }
        return converted
    }

    /// Removes a volatile domain.
    public func removeVolatileDomain(forName domainName: String) {
        changeVolatileDomains(domainName) { domains in
            domains.removeValue(forKey: domainName)
            return true
        }
    }

    /// Changes the volatile domains under the store's lock; when `change` says it changed them (true), the
    /// search list and the merged view follow.
    @discardableResult
    private func changeVolatileDomains(
        _ domainName: String, _ change: (inout VolatileDomains) -> Bool
    ) -> Bool {
        let changed = state.withLock { state in
            guard change(&state.volatileDomains) else { return false }
            flattenSearchList(&state)
            return true
        }
        if changed { rebuildMerged(changedDomain: domainName) }
        return changed
    }

    // MARK: Persistent domains

    /// The domains with a file in the current user's directory.
    public var persistentDomainNames: [String] {
        configuration.locations.persistentDomainNames(on: configuration.fileSystem)
    }

    /// The contents of a persistent domain (its current-user file), or nil when it has none.
    public func persistentDomain(forName domainName: String) -> [String: Any]? {
        persistentDomainValues(forName: domainName)?.mapValues(\.foundationValue)
    }

    /// The contents of one layer of a persistent domain as ``PropertyList`` values, or nil when the layer has no
    /// file (``persistentDomain(forName:)`` gives the current-user layer as Foundation objects).
    public func persistentDomainValues(
        forName domainName: String, layer: PreferenceLayer = .currentUser
    ) -> [String: PropertyList]? {
        guard (try? DomainName.validate(domainName)) != nil else { return nil }
        let file = file(forDomain: domainName, layer: layer)
        // A file this store does not watch (outside its search list, or a store that does not watch) may be
        // kept open: it is read again when another process changed it (one stat when nothing did).
        file.reload()
        guard file.exists else { return nil }
        return file.contents
    }

    /// Why one layer of a persistent domain cannot be read right now (corrupt, not a dictionary, no
    /// permission), or nil when it can (or has no file). A tool checks this before it writes, so that it can
    /// refuse rather than keep the file aside. `domainName`: the store's application domain (or suite) when nil.
    public func problem(inDomain domainName: String? = nil, layer: PreferenceLayer = .currentUser) -> DefaultsError? {
        let domainName = domainName ?? configuration.applicationDomain
        guard (try? DomainName.validate(domainName)) != nil else { return nil }
        let file = file(forDomain: domainName, layer: layer)
        file.loadIfNeeded()
        return file.currentFailure
    }

    /// Replaces the contents of one layer of a persistent domain (by default the current-user file);
    /// observers of the domain in any store of the process see the change at once, and it is on disk within
    /// milliseconds. An empty dictionary removes the file. ``didChangeNotification`` is posted once for each
    /// call, as Foundation posts it: also when nothing changed, and when the domain is not in this store's
    /// search list (`set` posts once for a burst of changes).
    ///
    /// - Throws: ``DefaultsError/Code/invalidDomainName``.
    public func trySetPersistentDomain(
        _ domain: [String: PropertyList], forName domainName: String, layer: PreferenceLayer = .currentUser
    ) throws(DefaultsError) {
        try DomainName.validate(domainName)
        // One post per call, as Foundation posts one (also when nothing changed, and for a domain outside the
        // search list). The call claims the store's pending post first, so that the merged view's change,
        // delivered during `replace`, does not schedule a second; when a burst of sets has one scheduled
        // already, that one stays theirs and the call posts its own beside it.
        let claimed = claimNotification()
        defer { postDidChange(clearingPending: claimed) }
        try file(forDomain: domainName, layer: layer).replace(with: domain)
    }

    /// Replaces the contents of a persistent domain with Foundation-typed values. Like Foundation's, it does
    /// not throw: an invalid name or value is refused and logged (see ``lastError``).
    public func setPersistentDomain(_ domain: [String: Any], forName domainName: String) {
        report { () throws(DefaultsError) in
            try trySetPersistentDomain(try Self.convertedDomain(domain), forName: domainName)
        }
    }

    /// The throwing form under a `set` name, which the API's rule keeps for forms that do not throw.
    @available(*, deprecated, renamed: "trySetPersistentDomain(_:forName:layer:)")
    public func setPersistentDomainValues(
        _ domain: [String: PropertyList], forName domainName: String, layer: PreferenceLayer = .currentUser
    ) throws(DefaultsError) {
        try trySetPersistentDomain(domain, forName: domainName, layer: layer)
    }

    /// Removes a persistent domain: its current-user file is deleted.
    public func removePersistentDomain(forName domainName: String) {
        report { () throws(DefaultsError) in try trySetPersistentDomain([:], forName: domainName) }
    }

    /// Every key and effective value of the search list, as ``object(forKey:)`` would return them.
    public func dictionaryRepresentation() -> [String: Any] {
        state.withLock { $0.view.merged }.dictionary.mapValues(\.foundationValue)
    }

    /// Every key and effective value of the search list as ``PropertyList`` values, as ``value(forKey:)``
    /// returns them.
    public func dictionaryRepresentationValues() -> [String: PropertyList] {
        state.withLock { $0.view.merged }.dictionary
    }

    // MARK: Forced (managed) keys

    /// Whether an administrator forces the key in the application domain (or the global domain); writes to
    /// it are refused, and a program should not offer to change it.
    ///
    /// Forced values come from `<managed directory>/<domain>.plist` and
    /// `<managed directory>/<user>/<domain>.plist` (see ``DefaultsLocations/managedDirectory``).
    public func objectIsForced(forKey key: String) -> Bool {
        objectIsForced(forKey: key, inDomain: configuration.applicationDomain)
            || objectIsForced(forKey: key, inDomain: DomainName.global)
    }

    /// Whether an administrator forces the key in a given domain.
    public func objectIsForced(forKey key: String, inDomain domain: String) -> Bool {
        // A domain the store already uses: its managed files are at hand (the path every `set` takes).
        // Asked under the store's lock (store, then file: the order every lookup takes), without copying the
        // list of files.
        let attached: Bool? = state.withLock { state in
            state.search.persistent[domain].map { $0.forces(key) }
        }
        if let attached { return attached }
        guard (try? DomainName.validate(domain)) != nil else { return false }
        for layer in PreferenceLayer.searchOrder where layer.isManaged {
            let file = file(forDomain: domain, layer: layer)
            file.loadIfNeeded()
            if file.value(forKey: key) != nil { return true }
        }
        return false
    }

    // MARK: Another user's defaults

    /// A store for another user's defaults (`~user/.config`), with the standard search list.
    ///
    /// Returns nil when the user does not exist or the current user may not read that user's defaults
    /// directory (only root, or the user themself, normally can). Files that a root process creates there
    /// are given to that user.
    public convenience init?(user userName: String) {
        guard let account = UserAccount(named: userName) else { return nil }
        let home = account.home
        let uid = account.uid
        let gid = account.gid
        let directory = home + "/.config"
        let fileSystem = ProcessContext.system.fileSystem
        let probe = fileSystem.owner(ofPath: directory) != nil ? directory : home
        guard CurrentProcess.effectiveUserID == uid || fileSystem.canSearch(probe) else { return nil }
        var locations = DefaultsLocations.current
        locations.userDirectory = directory
        locations.userName = userName
        var configuration = Configuration(locations: locations)
        if (try? DomainName.validate(configuration.applicationDomain)) == nil {
            configuration.applicationDomain = "LiveDefaults"
        }
        self.init(
            validated: configuration, fileOwner: CurrentProcess.effectiveUserID == 0 && uid != 0 ? (uid, gid) : nil)
    }

    private func converted(_ values: [String: Any], context: String) -> [String: PropertyList] {
        var result: [String: PropertyList] = [:]
        for (key, value) in values {
            do throws(PropertyListError) {
                result[key] = try Self.storedValue(forFoundationValue: value)
            } catch {
                report { () throws(DefaultsError) in throw .notAPropertyList(key: key, error) }
            }
        }
        return result
    }

    /// The first domain in the search list that has the key (forced values first), for messages.
    func domainProviding(_ key: String) -> String? {
        state.withLock { state in
            for entry in state.search.entries {
                if case .persistent(let name) = entry, state.search.persistent[name]?.forces(key) == true {
                    return name
                }
            }
            for entry in state.search.entries {
                switch entry {
                case .volatile(let name):
                    if state.volatileDomains[name]?[key] != nil { return name }
                case .persistent(let name):
                    if let domain = state.search.persistent[name], domain.value(forKey: key) != nil { return name }
                }
            }
            return nil
        }
    }
}
