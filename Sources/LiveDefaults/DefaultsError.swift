/// What went wrong in a store, with what a person needs to act on it: the domain, key or file involved.
public enum DefaultsError: Error, Sendable, Hashable {
    /// A domain name that cannot name a file safely: empty, `.` or `..`, starting with `.`, containing `/`
    /// or NUL, or longer than ``DomainName/maximumLength`` bytes.
    case invalidDomainName(String, reason: String)
    /// A value for `key` that has no property-list form.
    case notAPropertyList(key: String, PropertyListError)
    /// A write to a key that an administrator forces (see ``Defaults/objectIsForced(forKey:)``).
    case forcedKey(key: String, domain: String)
    /// A domain file that is not a readable property list. It is never overwritten: when a write needs the
    /// file, it is first renamed to `keptAs`, and the domain reads as empty.
    case corruptFile(path: String, PropertyListError, keptAs: String?)
    /// A domain file whose top-level value is not a dictionary.
    case notADictionary(path: String, found: String)
    /// Reading a file failed (for example permission denied); `errno` is the system error number.
    case readFailed(path: String, errno: Int32, message: String)
    /// Writing a file failed (read-only directory, disk full, permission denied); the edits stay pending
    /// and are retried by the next write or ``Defaults/synchronize()``.
    case writeFailed(path: String, errno: Int32, message: String)
    /// A value that the file's format cannot hold (an XML file cannot hold a date outside the years
    /// 0000–9999). The file keeps its last version; the edit stays pending, and every later write reports
    /// it again, until the value is replaced or removed. The error's key path names the value.
    case unrepresentableValue(path: String, PropertyListError)
    /// ``Defaults/setVolatileDomain(_:forName:)-([String:PropertyList],_)`` was given a name that already exists.
    case volatileDomainExists(String)
    /// A migration found a stored value it cannot convert (``Defaults/migrate(_:from:transform:)``).
    case migrationFailed(key: String, domain: String, reason: String)
}

extension DefaultsError: CustomStringConvertible {
    public var description: String {
        switch self {
        case .invalidDomainName(let name, let reason):
            "invalid domain name \"\(name)\": \(reason)"
        case .notAPropertyList(let key, let error):
            "cannot store key \"\(key)\": \(error)"
        case .forcedKey(let key, let domain):
            "key \"\(key)\" in domain \(domain) is managed by an administrator and cannot be changed"
        case .corruptFile(let path, let error, let keptAs):
            "\(path) is not a valid property list (\(error)); "
                + (keptAs.map { "it was kept aside as \($0) and the domain starts empty" }
                    ?? "the domain reads as empty until the file is fixed or replaced")
        case .notADictionary(let path, let found):
            "\(path) holds a \(found), not a dictionary of defaults"
        case .readFailed(let path, let code, let message):
            "cannot read \(path): \(message) (errno \(code))"
        case .writeFailed(let path, let code, let message):
            "cannot write \(path): \(message) (errno \(code)); the change is kept in memory and retried"
        case .unrepresentableValue(let path, let error):
            "cannot write \(path): \(error); the file was left as it was and the change is kept in memory until "
                + "that value is replaced or removed"
        case .migrationFailed(let key, let domain, let reason):
            "cannot migrate key \"\(key)\" in domain \(domain): \(reason); the stored value was left as it is"
        case .volatileDomainExists(let name):
            "a volatile domain named \"\(name)\" already exists; remove it first with removeVolatileDomain(forName:)"
        }
    }
}
