/// Several keys read from one version: ``Defaults/snapshot(of:)-(AnyDefaultsKey...)``.
extension Defaults {
    /// The values of several keys, all taken at one moment under the store's lock: never the state before a
    /// change of one key mixed with the state after a change of another made with it (a transaction, another
    /// process's new version of a file). For code that reads settings that belong together outside a stream.
    ///
    /// ```swift
    /// let upstream = defaults.snapshot(of: .upstreamHost, .upstreamPort)
    /// connect(host: upstream[.upstreamHost], port: upstream[.upstreamPort])
    /// ```
    ///
    /// A key of another suite is read from that suite's store, as `defaults[key]` reads it; the keys of each store
    /// are read together under its lock.
    public func snapshot(of keys: AnyDefaultsKey...) -> DefaultsSnapshot {
        snapshot(of: keys)
    }

    /// The values of a list of keys made at run time, from one version: the variadic form for a list that
    /// is not known when the program is written.
    public func snapshot(of keys: [AnyDefaultsKey]) -> DefaultsSnapshot {
        SnapshotKeys(keys, of: self).snapshot(of: self)
    }
}
