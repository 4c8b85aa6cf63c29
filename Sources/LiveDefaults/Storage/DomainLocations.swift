import Foundation

/// Rules for domain names, which become file names.
public enum DomainName {
    /// The name of the global domain, shared by every program (`NSGlobalDomain`).
    static let global = "NSGlobalDomain"
    /// The volatile domain parsed from `-Key value` command-line arguments (`NSArgumentDomain`).
    static let argument = "NSArgumentDomain"
    /// The volatile domain of a store's directories of key files (``Defaults/Configuration/keyFileDirectories``).
    static let keyFiles = "LiveDefaultsKeyFileDomain"
    /// The volatile domain of a store's environment variables (``Defaults/Configuration/environmentPrefix``).
    static let environment = "LiveDefaultsEnvironmentDomain"
    /// The volatile domain that ``Defaults/register(defaults:)-([String:PropertyList])`` fills (`NSRegistrationDomain`).
    static let registration = "NSRegistrationDomain"

    /// The longest domain name accepted, in UTF-8 bytes. File names are limited to 255 bytes, and the
    /// library derives longer names from a domain (`.<domain>.plist.lock`, `.<domain>.plist.tmp-…`,
    /// `<domain>.plist.corrupt-…`), so the bound is below 255 to keep every one of them legal.
    public static let maximumLength = 200

    /// Checks that a domain name can be used as a file name without escaping the defaults directory.
    ///
    /// - Throws: ``DefaultsError/Code/invalidDomainName`` for an empty name, `.` or `..`, a name that
    ///   starts with `.` (hidden files belong to the library and to the global domain), a name containing `/`
    ///   or NUL, or one longer than ``maximumLength`` bytes.
    public static func validate(_ name: String) throws(DefaultsError) {
        func invalid(_ reason: String) -> DefaultsError { .invalidDomainName(name, reason: reason) }
        if name.isEmpty { throw invalid("a domain name cannot be empty") }
        // Bytes, not Characters: no grapheme breaking on a fresh process's first open.
        let dot = UInt8(ascii: ".")
        if name.utf8.first == dot {
            if name.utf8.count <= 2 && name.utf8.allSatisfy({ $0 == dot }) {
                throw invalid("\".\" and \"..\" are not domain names")
            }
            throw invalid("a domain name cannot start with \".\"")
        }
        if name.utf8.contains(UInt8(ascii: "/")) { throw invalid("a domain name cannot contain \"/\"") }
        if name.utf8.contains(0) { throw invalid("a domain name cannot contain a NUL byte") }
        if name.utf8.count > maximumLength {
            throw invalid("\(name.utf8.count) bytes is longer than the limit of \(maximumLength)")
        }
    }
}

/// One layer of a persistent domain. A persistent domain is the merge of up to six files; earlier layers in
/// ``searchOrder`` win.
public enum PreferenceLayer: String, Sendable, Hashable, CaseIterable {
    /// Forced by an administrator for the current user: `<managed>/<user>/<domain>.plist`.
    case managedUser
    /// Forced by an administrator for every user: `<managed>/<domain>.plist`.
    case managed
    /// The current user on this host only: `<user dir>/ByHost/<domain>.<host id>.plist`.
    case currentUserCurrentHost
    /// The current user on any host, where writes go: `<user dir>/<domain>.plist`.
    case currentUser
    /// Every user on this host: `<any-user dir>/ByHost/<domain>.<host id>.plist`.
    case anyUserCurrentHost
    /// Every user on any host: `<any-user dir>/<domain>.plist`.
    case anyUser

    /// The layers from highest to lowest precedence.
    public static let searchOrder: [PreferenceLayer] = allCases

    /// Whether values in this layer are forced (managed) and refuse writes.
    public var isManaged: Bool { self == .managed || self == .managedUser }
}

/// Where a store's files live. The defaults match swift-corelibs-foundation's `UserDefaults` on Linux, so the
/// two read and write the same files (see `Docs/OnDisk.md`).
public struct DefaultsLocations: Sendable, Hashable {
    /// The current user's directory: `$XDG_CONFIG_HOME` when it is an absolute path, else `~/.config`.
    public var userDirectory: String
    /// Files shared by every user; Foundation on Linux uses `/usr/local/etc`.
    public var anyUserDirectory: String
    /// Administrator-forced (managed) values; `/etc/livedefaults/managed` unless
    /// `LIVEDEFAULTS_MANAGED_DIRECTORY` is set. Per-user files sit in a subdirectory named after the user.
    public var managedDirectory: String
    /// The user whose managed subdirectory applies: the name given, else the current user's (`USER`, else
    /// the user database's), worked out when it is read — only a managed directory that exists needs it,
    /// and without `USER` it costs a read of the user database (like ``schemaDirectories``, locations
    /// compare by what was given).
    public var userName: String {
        get { givenUserName ?? DefaultsLocations.currentUserName }
        set { givenUserName = newValue }
    }
    private var givenUserName: String?
    /// The host identifier of per-host (`ByHost`) files. Foundation on Linux uses the empty string, which
    /// gives names like `ByHost/com.example.app..plist`; keep it to share per-host files with Foundation.
    public var hostIdentifier: String
    /// Where published key schemas are looked for, in order (the first `<domain>.plist` wins), and the
    /// first of them where ``Defaults/publishSchema(for:)`` writes: the directories of
    /// `LIVEDEFAULTS_SCHEMA_PATH` (colon-separated) when it is set, else
    /// `$XDG_DATA_HOME/livedefaults/schemas` (`$HOME/.local/share/livedefaults/schemas`) then
    /// `/usr/share/livedefaults/schemas` (for schemas installed with a package). See Docs/Schema.md.
    ///
    /// The default list is worked out from the environment when it is read (publishing or checking a
    /// schema), not when a store opens.
    public var schemaDirectories: [String] {
        get { givenSchemaDirectories ?? DefaultsLocations.defaultSchemaDirectories }
        set { givenSchemaDirectories = newValue }
    }
    private var givenSchemaDirectories: [String]?

    /// Locations with explicit directories; any not given take their defaults.
    public init(
        userDirectory: String, anyUserDirectory: String = "/usr/local/etc", managedDirectory: String? = nil,
        userName: String? = nil, hostIdentifier: String = "", schemaDirectories: [String]? = nil
    ) {
        self.userDirectory = userDirectory
        self.anyUserDirectory = anyUserDirectory
        self.managedDirectory = managedDirectory ?? DefaultsLocations.defaultManagedDirectory
        givenUserName = userName
        self.hostIdentifier = hostIdentifier
        givenSchemaDirectories = schemaDirectories
    }

    /// A store rooted in one directory: user files in `directory`, any-user files in `directory/AnyUser`,
    /// managed files in `directory/Managed`, schemas in `directory/Schemas`. Tests and sandboxed tools use
    /// this to stay out of the real home.
    public static func rooted(at directory: String) -> DefaultsLocations {
        DefaultsLocations(
            userDirectory: directory, anyUserDirectory: directory + "/AnyUser",
            managedDirectory: directory + "/Managed", schemaDirectories: [directory + "/Schemas"])
    }

    /// The locations Foundation uses for the current user, from the environment.
    public static var current: DefaultsLocations {
        let directory: String
        if let configured = Environment.value("XDG_CONFIG_HOME"), configured.utf8.first == UInt8(ascii: "/") {
            directory = configured
        } else {
            directory = DefaultsLocations.currentHomeDirectory + "/.config"
        }
        return DefaultsLocations(userDirectory: directory)
    }

    static var defaultManagedDirectory: String {
        Environment.value("LIVEDEFAULTS_MANAGED_DIRECTORY") ?? "/etc/livedefaults/managed"
    }

    /// The schema search path from the environment (see ``schemaDirectories``).
    static var defaultSchemaDirectories: [String] {
        if let list = Environment.value("LIVEDEFAULTS_SCHEMA_PATH"), !list.isEmpty {
            return list.split(separator: ":").map(String.init)
        }
        let data: String
        if let configured = Environment.value("XDG_DATA_HOME"), configured.utf8.first == UInt8(ascii: "/") {
            data = configured
        } else if let home = Environment.value("HOME"), home.utf8.first == UInt8(ascii: "/") {
            // `$HOME`, as the XDG Base Directory specification says (the user database only without it): the
            // schema directory is ours, not Foundation's, and a fresh process's first open that reads a schema
            // (a store with an environment prefix or key files) reads no user database for it.
            data = home + "/.local/share"
        } else {
            data = DefaultsLocations.currentHomeDirectory + "/.local/share"
        }
        return [data + "/livedefaults/schemas", "/usr/share/livedefaults/schemas"]
    }

    /// `$USER`, else the name `NSUserName()` gives (the effective user's, or the real one's when the
    /// effective user is root, as Foundation does), read from the user database's files where NSS would say
    /// the same (``UserDatabaseFiles``: much cheaper on a fresh process's first open), else from NSS.
    ///
    /// The database's answer is kept for the user id it was for: a process that opens many stores (suites)
    /// looks it up once (a few system calls), and again only if its user changes.
    static var currentUserName: String {
        if let name = Environment.value("USER") { return name }
        return currentUserEntry?.name ?? NSUserName()
    }

    /// The home directory `NSHomeDirectory()` gives, without asking Foundation where the answer is certain.
    ///
    /// Foundation takes `CFFIXED_USER_HOME` when it is set, else the user database's home directory of the
    /// effective user (the real one when the effective user is root), else `HOME`, and standardizes the
    /// path. Its first call costs a fresh process NSS, then URL and path machinery — more than the rest of
    /// opening a domain. When `CFFIXED_USER_HOME` is not set and the user database's files
    /// give the user's home (see ``UserDatabaseFiles``) as a path that is already standard (absolute, no
    /// empty, `.` or `..` component, no trailing slash), that path is the answer; in every other case
    /// `NSHomeDirectory()` is.
    static var currentHomeDirectory: String {
        if Environment.value("CFFIXED_USER_HOME") == nil, let home = currentUserEntry?.home,
            isStandardAbsolutePath(home)
        {
            return home
        }
        return NSHomeDirectory()
    }

    /// Whether `path` is absolute and already in the form Foundation's path standardizing gives: no empty
    /// (`//`), `.` or `..` component, no trailing slash, not the root alone, and not under `/private/` or
    /// `/var/automount/` (whose prefix Foundation strips when the rest of the path exists).
    static func isStandardAbsolutePath(_ path: String) -> Bool {
        let slash = UInt8(ascii: "/")
        let dot = UInt8(ascii: ".")
        guard path.utf8.count > 1, path.utf8.first == slash, path.utf8.last != slash,
            !path.utf8.starts(with: "/private/".utf8), !path.utf8.starts(with: "/var/automount/".utf8)
        else { return false }
        var componentLength = 0
        var dotsOnly = true
        for byte in path.utf8.dropFirst() {
            if byte == slash {
                if componentLength == 0 || (dotsOnly && componentLength <= 2) { return false }
                componentLength = 0
                dotsOnly = true
            } else {
                componentLength += 1
                if byte != dot { dotsOnly = false }
            }
        }
        return !(dotsOnly && componentLength <= 2)
    }

    /// The current user's line in the user database's files: the effective user's, or the real one's when
    /// the effective user is root (whose answers Foundation gives); nil when NSS must be asked. Kept per
    /// process for the user id it was read for.
    private static var currentUserEntry: UserDatabaseFiles.Entry? {
        let effective = CurrentProcess.effectiveUserID
        let user = UInt32(effective != 0 ? effective : CurrentProcess.realUserID)
        if let known = knownUser.withLock({ $0 }), known.user == user { return known.entry }
        let entry = UserDatabaseFiles.entry(ofUser: user)
        knownUser.withLock { $0 = KnownUser(user: user, entry: entry) }
        return entry
    }

    /// A user id and what the user database's files said about it (nil: ask NSS).
    private final class KnownUser: Sendable {
        let user: UInt32
        let entry: UserDatabaseFiles.Entry?
        init(user: UInt32, entry: UserDatabaseFiles.Entry?) {
            self.user = user
            self.entry = entry
        }
    }

    private static let knownUser = Lock<KnownUser?>(nil)

    /// The file of one layer of a domain. The name must have passed ``DomainName/validate(_:)``.
    public func path(forDomain domain: String, layer: PreferenceLayer) -> String {
        let base = domain == DomainName.global ? ".GlobalPreferences" : domain
        // Joined in one allocation (``PathComponents/joined(_:)``), not interpolated.
        switch layer {
        case .managedUser: return PathComponents.joined(managedDirectory, "/", userName, "/", base, ".plist")
        case .managed: return PathComponents.joined(managedDirectory, "/", base, ".plist")
        case .currentUserCurrentHost:
            return PathComponents.joined(userDirectory, "/ByHost/", base, ".", hostIdentifier, ".plist")
        case .currentUser: return PathComponents.joined(userDirectory, "/", base, ".plist")
        case .anyUserCurrentHost:
            return PathComponents.joined(anyUserDirectory, "/ByHost/", base, ".", hostIdentifier, ".plist")
        case .anyUser: return PathComponents.joined(anyUserDirectory, "/", base, ".plist")
        }
    }

    /// The directory of a layer's files (the directory of every ``path(forDomain:layer:)`` of the layer).
    func directory(of layer: PreferenceLayer) -> String {
        switch layer {
        case .managedUser: PathComponents.joined(managedDirectory, "/", userName)
        case .managed: managedDirectory
        case .currentUserCurrentHost: PathComponents.joined(userDirectory, "/ByHost")
        case .currentUser: userDirectory
        case .anyUserCurrentHost: PathComponents.joined(anyUserDirectory, "/ByHost")
        case .anyUser: anyUserDirectory
        }
    }

    /// The domains that have a file in the current user's directory, `NSGlobalDomain` for
    /// `.GlobalPreferences.plist`. Library files (locks, temporaries, files kept aside) are skipped.
    public func persistentDomainNames() -> [String] {
        persistentDomainNames(on: StorageContext.system.fileSystem)
    }

    /// ``persistentDomainNames()`` on a store's file system.
    func persistentDomainNames(on fileSystem: any DefaultsFileSystem) -> [String] {
        var names: Set<String> = []
        for file in fileSystem.namesInDirectory(userDirectory) where file.hasSuffix(".plist") {
            let name = String(file.dropLast(6))
            if name == ".GlobalPreferences" {
                names.insert(DomainName.global)
            } else if (try? DomainName.validate(name)) != nil {
                names.insert(name)
            }
        }
        return names.sorted()
    }
}
