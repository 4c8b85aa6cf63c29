import Foundation

/// Validators: a program's judges of a whole version of its domain, over typed snapshots.
extension Defaults {
    /// Adds a validator of the store's domain: a rule over a whole version of the settings, for values that are
    /// each valid but wrong together (a typed key's range or choices check each key alone).
    ///
    /// ```swift
    /// let validation = defaults.addValidator { candidate in
    ///     guard candidate[.minPool] <= candidate[.maxPool] else {
    ///         throw PoolSettingsError("MinPool \(candidate[.minPool]) is above MaxPool \(candidate[.maxPool])")
    ///     }
    /// }
    /// ```
    ///
    /// `candidate` is the store's settings as a new version of one of its domain's files would make them: every
    /// key, read through the typed subscript as ``snapshot(of:)-(AnyDefaultsKey...)`` reads it. Throwing any error
    /// refuses the version; the error's description is the reason.
    ///
    /// - **Another process's version** (a `defaults write`, an editor, the fleet agent) is judged before it is
    ///   applied. Refused, it is **not applied at all**: this process keeps serving the last version it
    ///   accepted, for every key of that file (reads, streams, snapshots, the swift-configuration provider). The
    ///   refusal is reported once, through the error handler and ``lastError`` (code
    ///   ``DefaultsError/Code/versionRefused``), the log and the metric `livedefaults_refused_versions_total`;
    ///   the next version that passes is applied as usual.
    /// - **This process's own change** is judged before it is made: a `set` refused reports through the error
    ///   handler and changes nothing; ``trySet(_:forKey:)-(PropertyList?,_)``, a transaction and
    ///   ``trySetPersistentDomain(_:forName:layer:)`` throw and change nothing. Its write is judged again
    ///   when another process's version came in between, on top of that version.
    ///
    /// - **The version the store holds** is judged before this call returns. Refused, it is served no more: a
    ///   version of the file that the program never accepted — refused now, refused or unreadable when the
    ///   program started — gives way to the newest version of that file its change log gives back that the
    ///   validators accept (the last known good across restarts), else to the layers below the file (its
    ///   defaults). Reported as any refusal; ``readers(inDomain:layer:)`` shows the program running the log's
    ///   version (``ReadingProcess/fallback``). Give the validators in ``Configuration/validators`` for the
    ///   program's first read to come from a judged version already.
    ///
    /// Validators run with no lock of the library held, on the thread that found the version (the watcher's, or
    /// the caller's for a change of this process or for this call): keep them quick and free of waits on other
    /// settings. Several may be added; they are asked in the order they were added, and the first refusal counts.
    /// Validators judge versions of the files of the store's own domain (its application domain or suite, every
    /// layer in its search list); a domain's file that is removed is not judged (the domain then reads its
    /// defaults), nor are the defaults themselves.
    ///
    /// - Returns: The validation, to ``DefaultsValidation/remove()`` it. A validator stays until it is removed
    ///   or its store goes away: dropping the returned value does not remove it (a validator is usually meant to
    ///   last as long as its store).
    @discardableResult
    public func addValidator(_ validate: @escaping @Sendable (DefaultsSnapshot) throws -> Void) -> DefaultsValidation {
        let store = WeakStore(self)
        let id = addJudge { values in
            do {
                try validate(DefaultsSnapshot(values: values, store: store))
                return nil
            } catch {
                return String(describing: error)
            }
        }
        return DefaultsValidation(store: self, id: id)
    }
}

extension Defaults.Configuration {
    /// The store's validators (``Defaults/addValidator(_:)``), judges of a whole version of its domain, added
    /// before the store is returned: a program's first read already comes from a version they accept. A
    /// version on disk that they refuse is never served, not even at start: the store serves the newest
    /// version of that file its change log gives back that they accept, else the layers below the file.
    ///
    /// ```swift
    /// configuration.validators = [{ candidate in
    ///     guard candidate[.minPool] <= candidate[.maxPool] else { throw PoolError.minAboveMax }
    /// }]
    /// ```
    public var validators: [@Sendable (DefaultsSnapshot) throws -> Void] {
        get { givenValidators.compactMap { $0 as? @Sendable (DefaultsSnapshot) throws -> Void } }
        set {
            givenValidators = newValue
            validatorInstallers = newValue.map { validator in { store in store.addValidator(validator) } }
        }
    }
}

/// A validator added by ``Defaults/addValidator(_:)``, to remove it.
public final class DefaultsValidation: Sendable {
    private let store: WeakStore
    private let id: UInt64

    init(store: Defaults, id: UInt64) {
        self.store = WeakStore(store)
        self.id = id
    }

    /// Removes the validator: versions are no longer judged by it. Removing it again does nothing.
    public func remove() {
        store.store?.removeJudge(id: id)
    }
}
