/// What went wrong in a store, with what a person needs to act on it: the domain, key or file involved.
///
/// A struct with a ``code`` rather than an enum, so that later releases can report new kinds of trouble
/// without breaking code that handles today's (as swift-system's `Errno` does). The library makes them; tell
/// kinds apart by ``code`` (a test double can make one with ``init(code:domain:key:path:errno:propertyListError:keptAs:detail:keepsLastKnownGood:violation:)``):
///
/// ```swift
/// do {
///     try defaults.trySet(.integer(5), forKey: "Limit")
/// } catch where error.code == .forcedKey {
///     print("managed by an administrator: \(error)")
/// }
/// ```
public struct DefaultsError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of error. New codes can appear in any release: a `switch` over codes needs a `default`.
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
        public let rawValue: String

        /// A code by name (for codes this version does not know yet, as logs or other processes spell them).
        public init(rawValue: String) {
            self.rawValue = rawValue
        }

        /// A domain name that cannot name a file safely: empty, `.` or `..`, starting with `.`, containing `/`
        /// or NUL, or longer than ``DomainName/maximumLength`` bytes.
        public static let invalidDomainName = Code(rawValue: "invalidDomainName")
        /// A value for `key` that has no property-list form.
        public static let notAPropertyList = Code(rawValue: "notAPropertyList")
        /// A write to a key that an administrator forces (see ``Defaults/objectIsForced(forKey:)``).
        public static let forcedKey = Code(rawValue: "forcedKey")
        /// A domain file that is not a readable property list. It is never overwritten: when a write needs the
        /// file, it is first renamed to `keptAs`, and the domain reads as empty.
        public static let corruptFile = Code(rawValue: "corruptFile")
        /// A domain file whose top-level value is not a dictionary.
        public static let notADictionary = Code(rawValue: "notADictionary")
        /// Reading a file failed (for example permission denied); `errno` is the system error number.
        public static let readFailed = Code(rawValue: "readFailed")
        /// Writing a file failed (read-only directory, disk full, permission denied); the edits stay pending
        /// and are retried by the next write or ``Defaults/synchronize()``.
        public static let writeFailed = Code(rawValue: "writeFailed")
        /// A value that the file's format cannot hold (an XML file cannot hold a date outside the years
        /// 0000–9999). The file keeps its last version; the edit stays pending, and every later write reports
        /// it again, until the value is replaced or removed. The property-list error's key path names the value.
        public static let unrepresentableValue = Code(rawValue: "unrepresentableValue")
        /// ``Defaults/trySetVolatileDomain(_:forName:)`` was given a name that already exists.
        public static let volatileDomainExists = Code(rawValue: "volatileDomainExists")
        /// A migration found a stored value it cannot convert (``Defaults/migrate(_:from:transform:)``).
        public static let migrationFailed = Code(rawValue: "migrationFailed")
        /// A value that a typed key refuses — of a type the key cannot read, out of its range, not one of its
        /// choices: a typed write of it is refused (nothing is stored); a stored one, written by another
        /// writer, is reported once while typed reads return the key's last valid value.
        public static let invalidValue = Code(rawValue: "invalidValue")
        /// A transaction ran `attempts` times and every time another writer had changed a key it read before it
        /// could commit; nothing was committed.
        public static let transactionConflict = Code(rawValue: "transactionConflict")
        /// A transaction of `domain` was given a typed key of another suite: a transaction changes one domain.
        public static let transactionSpansDomains = Code(rawValue: "transactionSpansDomains")
        /// A key in `domain`'s files that the schema a program published for the domain does not declare (a typo,
        /// most often): nothing that reads the declared keys reads it. `detail` is the declared key it most likely
        /// meant, if one is near. Reported once per key by a store that published the schema.
        public static let undeclaredKey = Code(rawValue: "undeclaredKey")
        /// A version of a domain that a validator refused (``Defaults/addValidator(_:)``); `detail` is the reason
        /// (the description of the error the validator threw). Another process's version of `path` is not
        /// applied at all: this process keeps serving the last version it accepted, for every key of the file,
        /// until a later version passes. This process's own change (a `set`, a transaction) is not made.
        public static let versionRefused = Code(rawValue: "versionRefused")
        /// An environment variable of the store's prefix (``Defaults/Configuration/environmentPrefix``) set nothing:
        /// its text is not a value of the key's type, the schema refuses it, its `_FILE` cannot be read, or two
        /// keys share its name. The key reads from the layers below; reported once while it lasts.
        public static let environmentValueIgnored = Code(rawValue: "environmentValueIgnored")
        /// A file of one of the store's directories of key files (``Defaults/Configuration/keyFileDirectories``)
        /// set nothing: it cannot be read as a value (a FIFO, too large, not UTF-8), its text is not a value of the
        /// key's type, or the schema refuses it. The key reads from the layers below; reported once while it lasts.
        public static let keyFileIgnored = Code(rawValue: "keyFileIgnored")
        /// A schema published for `domain` that cannot be read (``Defaults/publishedSchema(inDomain:)``): `path` is
        /// the file, `detail` what is wrong with it (not a schema, a later format, another domain's, an I/O error).
        public static let invalidSchema = Code(rawValue: "invalidSchema")

        // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
        public var description: String { rawValue }
    }

    /// The kind of error.
    public var code: Code { storage.fields.code }
    /// The domain involved (for ``Code/invalidDomainName`` and ``Code/volatileDomainExists``, the name refused).
    public var domain: String? { storage.fields.domain }
    /// The key involved.
    public var key: String? { storage.fields.key }
    /// The file involved.
    public var path: String? { storage.fields.path }
    /// The system error number, for failed reads and writes.
    public var errno: Int32? { storage.fields.errno }
    /// Why a file or value could not be read or written as a property list.
    public var propertyListError: PropertyListError? { storage.fields.propertyListError }
    /// Where a corrupt file was moved before the domain was written again.
    public var keptAs: String? { storage.fields.keptAs }
    /// Details in words: the reason, the system's message, the type found.
    public var detail: String? { storage.fields.detail }
    /// For a file that cannot be read (``Code/corruptFile``, ``Code/notADictionary``, ``Code/readFailed``):
    /// whether the store keeps serving the last version of it that it read (its *last known good*) instead
    /// of reading the layer as empty. True in a running store that had read the file before it broke; false
    /// in a process that found it broken from the start.
    public var keepsLastKnownGood: Bool { storage.fields.keepsLastKnownGood }
    /// For ``Code/invalidValue``: the value refused and what the key accepts.
    public var violation: SchemaViolation? { storage.fields.violation }

    /// An error of any code with the given context.
    public init(
        code: Code, domain: String? = nil, key: String? = nil, path: String? = nil, errno: Int32? = nil,
        propertyListError: PropertyListError? = nil, keptAs: String? = nil, detail: String? = nil,
        keepsLastKnownGood: Bool = false, violation: SchemaViolation? = nil
    ) {
        storage = Storage(
            Fields(
                code: code, domain: domain, key: key, path: path, errno: errno, propertyListError: propertyListError,
                keptAs: keptAs, detail: detail, keepsLastKnownGood: keepsLastKnownGood, violation: violation))
    }

    /// The fields, in one immutable object: an error is then one word wherever it is kept (a file's current
    /// failure, a store's last error), where the fields inline took 233 bytes, in every one of the six layer
    /// files of every domain a process opens (Docs/Benchmarks.md, memory).
    private let storage: Storage

    private final class Storage: Sendable, Hashable {
        let fields: Fields

        init(_ fields: Fields) { self.fields = fields }

        static func == (lhs: Storage, rhs: Storage) -> Bool { lhs === rhs || lhs.fields == rhs.fields }
        func hash(into hasher: inout Hasher) { hasher.combine(fields) }
    }

    private struct Fields: Sendable, Hashable {
        let code: Code
        let domain: String?
        let key: String?
        let path: String?
        let errno: Int32?
        let propertyListError: PropertyListError?
        let keptAs: String?
        let detail: String?
        let keepsLastKnownGood: Bool
        let violation: SchemaViolation?
    }

    /// This error, saying whether the store keeps serving the file's last known good version.
    func keepingLastKnownGood(_ keeps: Bool) -> DefaultsError {
        DefaultsError(
            code: code, domain: domain, key: key, path: path, errno: errno, propertyListError: propertyListError,
            keptAs: keptAs, detail: detail, keepsLastKnownGood: keeps)
    }

    /// An error of code ``Code/invalidDomainName``.
    package static func invalidDomainName(_ name: String, reason: String) -> DefaultsError {
        DefaultsError(code: .invalidDomainName, domain: name, detail: reason)
    }

    /// An error of code ``Code/notAPropertyList``.
    package static func notAPropertyList(key: String, _ error: PropertyListError) -> DefaultsError {
        DefaultsError(code: .notAPropertyList, key: key, propertyListError: error)
    }

    /// An error of code ``Code/forcedKey``.
    package static func forcedKey(key: String, domain: String) -> DefaultsError {
        DefaultsError(code: .forcedKey, domain: domain, key: key)
    }

    /// An error of code ``Code/corruptFile``.
    package static func corruptFile(path: String, _ error: PropertyListError, keptAs: String?) -> DefaultsError {
        DefaultsError(code: .corruptFile, path: path, propertyListError: error, keptAs: keptAs)
    }

    /// An error of code ``Code/notADictionary``.
    package static func notADictionary(path: String, found: String) -> DefaultsError {
        DefaultsError(code: .notADictionary, path: path, detail: found)
    }

    /// An error of code ``Code/readFailed``.
    package static func readFailed(path: String, errno: Int32, message: String) -> DefaultsError {
        DefaultsError(code: .readFailed, path: path, errno: errno, detail: message)
    }

    /// An error of code ``Code/writeFailed``.
    package static func writeFailed(path: String, errno: Int32, message: String) -> DefaultsError {
        DefaultsError(code: .writeFailed, path: path, errno: errno, detail: message)
    }

    /// An error of code ``Code/unrepresentableValue``.
    package static func unrepresentableValue(path: String, _ error: PropertyListError) -> DefaultsError {
        DefaultsError(code: .unrepresentableValue, path: path, propertyListError: error)
    }

    /// An error of code ``Code/volatileDomainExists``.
    package static func volatileDomainExists(_ name: String) -> DefaultsError {
        DefaultsError(code: .volatileDomainExists, domain: name)
    }

    /// An error of code ``Code/migrationFailed``.
    package static func migrationFailed(key: String, domain: String, reason: String) -> DefaultsError {
        DefaultsError(code: .migrationFailed, domain: domain, key: key, detail: reason)
    }

    /// An error of code ``Code/invalidValue``.
    package static func invalidValue(_ violation: SchemaViolation, domain: String) -> DefaultsError {
        DefaultsError(
            code: .invalidValue, domain: domain, key: violation.key, detail: violation.description,
            violation: violation)
    }

    /// An error of code ``Code/transactionConflict``.
    package static func transactionConflict(domain: String, attempts: Int) -> DefaultsError {
        DefaultsError(code: .transactionConflict, domain: domain, detail: "\(attempts)")
    }

    /// An error of code ``Code/undeclaredKey``, with the declared key it most likely meant.
    package static func undeclaredKey(_ key: String, domain: String, suggestion: String?) -> DefaultsError {
        DefaultsError(code: .undeclaredKey, domain: domain, key: key, detail: suggestion)
    }

    /// An error of code ``Code/versionRefused``: another process's version of `path`, kept out.
    package static func versionRefused(path: String, domain: String, reason: String) -> DefaultsError {
        DefaultsError(
            code: .versionRefused, domain: domain, path: path, detail: reason,
            keepsLastKnownGood: true)
    }

    /// An error of code ``Code/versionRefused``: this process's own change of `path`, not made.
    package static func changeRefused(path: String, domain: String, reason: String) -> DefaultsError {
        DefaultsError(code: .versionRefused, domain: domain, path: path, detail: reason)
    }

    /// An error of code ``Code/keyFileIgnored``: the key file at `path` (of `key`) set nothing.
    package static func keyFileIgnored(path: String, key: String?, reason: String) -> DefaultsError {
        DefaultsError(code: .keyFileIgnored, domain: "LiveDefaultsKeyFileDomain", key: key, path: path, detail: reason)
    }

    /// An error of code ``Code/environmentValueIgnored``: `variable` (setting `key`, when known) set nothing.
    package static func environmentValueIgnored(variable: String, key: String?, reason: String) -> DefaultsError {
        DefaultsError(
            code: .environmentValueIgnored, domain: "LiveDefaultsEnvironmentDomain", key: key,
            detail: variable + "\u{1F}" + reason)
    }

    /// An error of code ``Code/transactionSpansDomains``.
    package static func transactionSpansDomains(key: String, suite: String, domain: String) -> DefaultsError {
        DefaultsError(code: .transactionSpansDomains, domain: domain, key: key, detail: suite)
    }

    /// What a store does while a file cannot be read.
    private var untilFixed: String {
        keepsLastKnownGood
            ? "this process keeps serving the last version it read (last known good) until the file is fixed"
            : "its layer reads as empty until the file is fixed or replaced"
    }

    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    public var description: String {
        let path = path ?? "?"
        let key = key ?? "?"
        let domain = domain ?? "?"
        let detail = detail ?? "unknown"
        let underlying = propertyListError.map { "\($0)" } ?? "unknown"
        switch code {
        case .invalidDomainName:
            return "invalid domain name \"\(domain)\": \(detail)"
        case .notAPropertyList:
            return "cannot store key \"\(key)\": \(underlying)"
        case .forcedKey:
            return "key \"\(key)\" in domain \(domain) is managed by an administrator and cannot be changed"
        case .corruptFile:
            return "\(path) is not a valid property list (\(underlying)); "
                + (keptAs.map {
                    "it was kept aside as \($0), and the file was written again from the last version this "
                        + "process had read (empty if it had read none) with the change on top"
                } ?? untilFixed)
        case .notADictionary:
            return "\(path) holds a \(detail), not a dictionary of defaults; \(untilFixed)"
        case .readFailed:
            return "cannot read \(path): \(detail) (errno \(errno ?? 0)); \(untilFixed)"
        case .writeFailed:
            return "cannot write \(path): \(detail) (errno \(errno ?? 0)); the change is kept in memory and retried"
        case .unrepresentableValue:
            return "cannot write \(path): \(underlying); the file was left as it was and the change is kept in "
                + "memory until that value is replaced or removed"
        case .migrationFailed:
            return "cannot migrate key \"\(key)\" in domain \(domain): \(detail); the stored value was left as it is"
        case .invalidValue:
            return "domain \(domain): \(detail)"
        case .transactionConflict:
            return "domain \(domain) changed under a transaction on each of its \(detail) attempts; nothing was "
                + "committed (another writer keeps changing the keys it reads)"
        case .transactionSpansDomains:
            return "key \"\(key)\" belongs to suite \(detail), not to domain \(domain): a transaction changes one "
                + "domain; nothing was committed (use a transaction of that suite's store)"
        case .versionRefused where keepsLastKnownGood:
            return "a validator refused the new version of \(path) (domain \(domain)): \(detail); this process keeps "
                + "serving the last version it accepted until a later version passes"
        case .versionRefused:
            return "a validator refused the change of domain \(domain): \(detail); nothing was changed"
        case .undeclaredKey:
            return "\(key) is not a key of \(domain)"
                + (self.detail.map { "; did you mean \($0)?" } ?? " (its published schema does not declare it)")
        case .keyFileIgnored:
            return "key file \(path)\(self.key.map { " (key \($0))" } ?? ""): \(detail); it sets nothing, and the key "
                + "reads from the layers below"
        case .environmentValueIgnored:
            let parts = detail.split(separator: "\u{1F}", maxSplits: 1).map(String.init)
            let variable = parts.first ?? "?"
            let reason = parts.count > 1 ? parts[1] : detail
            return "environment variable \(variable)\(self.key.map { " (key \($0))" } ?? ""): \(reason); "
                + "it sets nothing, and the key reads from the layers below"
        case .invalidSchema:
            return "the schema published for \(domain) (\(path)) cannot be read: \(detail)"
        case .volatileDomainExists:
            return
                "a volatile domain named \"\(domain)\" already exists; remove it first with removeVolatileDomain(forName:)"
        default:
            let context = [
                self.domain.map { "domain \($0)" }, self.key.map { "key \"\($0)\"" }, self.path,
                self.detail, propertyListError.map { "\($0)" },
            ].compactMap { $0 }
            return ([code.rawValue] + context).joined(separator: ": ")
        }
    }
}
