/// Publishing the schema of a program's typed keys, so that every other writer honours it.
extension Defaults {
    /// Writes the schema of `keys` — each key's type, default, range or choices, summary and secrecy — for
    /// the domain they live in (a key's suite where it has one, else this store's application domain), as
    /// `<domain>.plist` in the first of ``DefaultsLocations/schemaDirectories``
    /// (`$XDG_DATA_HOME/livedefaults/schemas` unless `LIVEDEFAULTS_SCHEMA_PATH` says otherwise).
    ///
    /// From then on `defaults write`, `defaults import` and `defaults sync` refuse values the schema
    /// refuses (and `write`, `merge` and `import` keys it does not declare), and `defaults schema`,
    /// `defaults describe` show it. This store reports, once each, keys of the domain's files that the schema
    /// does not declare (``DefaultsError/Code/undeclaredKey``: to the error handler, ``lastError`` and the
    /// logger), those present now and any that appear later. A domain's file is replaced whole:
    /// publish all of a domain's keys in one call, typically at start-up.
    ///
    /// ```swift
    /// try defaults.publishSchema(for: [.rateLimit, .theme, .apiToken])
    /// ```
    ///
    /// - Returns: the paths written, one per domain.
    /// - Throws: ``DefaultsError/Code/writeFailed`` when the directory cannot be written,
    ///   ``DefaultsError/Code/invalidDomainName`` for a suite that cannot name a file.
    @discardableResult
    public func publishSchema(for keys: [AnyDefaultsKey]) throws(DefaultsError) -> [String] {
        guard let directory = configuration.locations.schemaDirectories.first else {
            throw .writeFailed(
                path: "(no schema directory)", errno: 0,
                message: "the schema search path is empty (LIVEDEFAULTS_SCHEMA_PATH)")
        }
        var byDomain: [String: [KeySchema]] = [:]
        for key in keys { byDomain[key.suite ?? configuration.applicationDomain, default: []].append(key.schema) }
        var written: [String] = []
        for (domain, schemas) in byDomain.sorted(by: { $0.key < $1.key }) {
            let schema = DomainSchema(domain: domain, keys: schemas)
            written.append(
                try schema.write(
                    to: directory, on: configuration.fileSystem, pid: configuration.context.storage.pid))
            declare(keys: Set(schema.keys.keys), ofDomain: domain) { schema.nearestKey(to: $0) }
        }
        // The environment's variables are named and typed by the application domain's schema: read again.
        if byDomain[configuration.applicationDomain] != nil { schemaPublished() }
        return written
    }

    /// The schema published for a domain (this store's application domain unless named), found in
    /// ``DefaultsLocations/schemaDirectories``; nil when none is published.
    ///
    /// - Throws: ``DefaultsError/Code/invalidSchema`` when the schema found cannot be read (the error's `path` is
    ///   the file, its `detail` what is wrong).
    public func publishedSchema(inDomain domain: String? = nil) throws(DefaultsError) -> DomainSchema? {
        let domain = domainOrOwn(domain)
        do throws(SchemaFileError) {
            return try DomainSchema.find(
                domain: domain, in: configuration.locations.schemaDirectories, on: configuration.fileSystem)
        } catch {
            throw DefaultsError(code: .invalidSchema, domain: domain, path: error.path, detail: error.message)
        }
    }

    /// The schema published for a domain, throwing the schema file's own error.
    @available(*, deprecated, renamed: "publishedSchema(inDomain:)")
    public func publishedSchema(forDomain domain: String?) throws(SchemaFileError) -> DomainSchema? {
        try DomainSchema.find(
            domain: domainOrOwn(domain), in: configuration.locations.schemaDirectories,
            on: configuration.fileSystem)
    }
}
