public import LiveDefaults

/// Where `defaults revert` takes a key's earlier value from: the domain's change log
/// (``Defaults/loggedChanges(inDomain:layer:key:limit:)``), as the value before the key's latest change, or
/// as its value in a version the log names.
public struct RevertSource: Sendable, Equatable {
    /// Why the log cannot say.
    public enum Problem: Error, Equatable, CustomStringConvertible {
        /// The log holds no change of the key.
        case noChange(key: String)
        /// The log holds no change in that version (never one of this domain's, or older than the log keeps).
        case versionNotLogged(DomainVersion)

        // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
        public var description: String {
            switch self {
            case .noChange(let key): "the change log holds no change of \(key)"
            case .versionNotLogged(let version):
                "the change log holds no version \(version) (defaults log lists the versions it keeps)"
            }
        }
    }

    /// The key's value then; nil when no change of the key is logged since that version (it holds the same
    /// value now).
    public let value: LoggedChange.Value?
    /// The version undone (the key's latest change) or asked for.
    public let version: DomainVersion
    /// Whether ``version`` was asked for (`--to`), rather than the key's latest change undone.
    public let isAskedFor: Bool

    /// "before its change in version V" or "in version V", for messages and the change log.
    public var when: String { isAskedFor ? "in version \(version)" : "before its change in version \(version)" }

    /// The value to write back for `key`, from `changes` (newest first, every key's, as the log lists them).
    ///
    /// - Parameter version: The version whose value to take; nil for the value before the key's latest change.
    public init(changes: [LoggedChange], key: String, at version: DomainVersion?) throws(Problem) {
        guard let version else {
            guard let latest = changes.first(where: { $0.key == key }) else { throw .noChange(key: key) }
            self.init(value: latest.oldValue, version: latest.version, isAskedFor: false)
            return
        }
        // A version's changes are together in the log: every one of them is at this index or after it.
        guard let first = changes.firstIndex(where: { $0.version == version }) else {
            throw .versionNotLogged(version)
        }
        if let atOrBefore = changes[first...].first(where: { $0.key == key }) {
            // The key's last change up to that version: what it set is what the version held.
            self.init(value: atOrBefore.newValue, version: version, isAskedFor: true)
        } else if let after = changes[..<first].last(where: { $0.key == key }) {
            // Not changed up to it (as far as the log goes): the value its first later change found.
            self.init(value: after.oldValue, version: version, isAskedFor: true)
        } else {
            self.init(value: nil, version: version, isAskedFor: true)
        }
    }

    private init(value: LoggedChange.Value?, version: DomainVersion, isAskedFor: Bool) {
        self.value = value
        self.version = version
        self.isAskedFor = isAskedFor
    }
}
