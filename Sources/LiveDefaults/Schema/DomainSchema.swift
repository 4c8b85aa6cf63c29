public import Foundation

/// The schema of one domain: what a program declares about the keys it reads there, published as a
/// property list where every process and the `defaults` command find it (Docs/Schema.md).
///
/// A program publishes it with ``Defaults/publishSchema(for:)``; `defaults write`, `import` and `sync`
/// refuse what it refuses, and `defaults schema`, `describe` show it.
///
/// The file (`<domain>.plist` in a directory of ``DefaultsLocations/schemaDirectories``):
///
/// ```xml
/// <dict>
///     <key>Domain</key>         <string>com.example.api</string>
///     <key>FormatVersion</key>  <integer>1</integer>
///     <key>Keys</key>
///     <dict>
///         <key>RateLimit</key>
///         <dict>
///             <key>Type</key>     <string>integer</string>
///             <key>Default</key>  <integer>100</integer>
///             <key>Minimum</key>  <integer>1</integer>
///             <key>Maximum</key>  <integer>100000</integer>
///             <key>Summary</key>  <string>Requests per minute per client.</string>
///         </dict>
///     </dict>
/// </dict>
/// ```
public struct DomainSchema: Sendable, Hashable {
    /// The format this version writes and reads; a file of a later version is refused with a clear error.
    static let formatVersion = 1
    /// The longest schema file read (a schema is small; anything larger is not one).
    static let maximumFileSize = 4 << 20

    /// The domain.
    public var domain: String
    /// The keys, by name.
    public var keys: [String: KeySchema]

    /// A schema.
    public init(domain: String, keys: [KeySchema]) {
        self.domain = domain
        self.keys = Dictionary(keys.map { ($0.name, $0) }, uniquingKeysWith: { _, last in last })
    }

    /// The keys in name order.
    public var sortedKeys: [KeySchema] { keys.values.sorted { $0.name < $1.name } }

    /// Why each of `values` that the schema refuses is refused, in key order; keys it does not declare
    /// are accepted.
    public func violations(in values: [String: PropertyList]) -> [SchemaViolation] {
        values.keys.sorted().compactMap { name in
            guard let key = keys[name], let value = values[name] else { return nil }
            return key.violation(for: value).map { violation in
                var violation = violation
                violation.isSecret = key.isSecret
                return violation
            }
        }
    }

    /// Why one value is refused, or nil (also for a key the schema does not declare).
    public func violation(forKey name: String, value: PropertyList) -> SchemaViolation? {
        guard let key = keys[name], var violation = key.violation(for: value) else { return nil }
        violation.isSecret = key.isSecret
        return violation
    }

    /// The keys among `names` the schema does not declare, in name order: set by mistake (a typo), or by a
    /// program that does not publish them; nothing that reads the schema's keys reads them.
    public func undeclaredKeys(in names: some Sequence<String>) -> [String] {
        names.filter { keys[$0] == nil }.sorted()
    }

    /// The declared key a key the schema does not declare most likely meant — the nearest by edit distance,
    /// letter case ignored, when within a typo's reach (one edit per four characters, at most three) — or nil.
    ///
    /// ```swift
    /// schema.nearestKey(to: "RateLimt")   // "RateLimit"
    /// ```
    public func nearestKey(to name: String) -> String? {
        KeySuggestion.nearest(to: name, among: keys.keys.sorted())
    }

    // MARK: The file

    /// The schema as its file holds it.
    public var propertyList: PropertyList {
        var entries: [String: PropertyList] = [:]
        for key in keys.values {
            var entry: [String: PropertyList] = [:]
            if let type = key.type { entry["Type"] = .string(type.rawValue) }
            if let value = key.defaultValue { entry["Default"] = value }
            if let summary = key.summary { entry["Summary"] = .string(summary) }
            if let minimum = key.minimum { entry["Minimum"] = minimum }
            if let maximum = key.maximum { entry["Maximum"] = maximum }
            if let choices = key.choices { entry["Choices"] = .array(choices) }
            if key.isSecret { entry["Secret"] = .bool(true) }
            entries[key.name] = .dictionary(entry)
        }
        return .dictionary([
            "Domain": .string(domain), "FormatVersion": .integer(Self.formatVersion), "Keys": .dictionary(entries),
        ])
    }

    /// A schema from its file's contents.
    ///
    /// - Throws: ``SchemaFileError`` naming what is wrong: not a dictionary, a later format version, a key
    ///   whose entry has the wrong shape, an unknown type name.
    init(propertyList: PropertyList) throws(SchemaFileError) {
        guard case .dictionary(let top) = propertyList else {
            throw SchemaFileError("the top level is a \(propertyList.typeName), not a dictionary")
        }
        guard case .string(let domain)? = top["Domain"] else { throw SchemaFileError("no Domain string") }
        if let version = top["FormatVersion"] {
            guard case .integer(let number) = version else { throw SchemaFileError("FormatVersion is not an integer") }
            guard number <= Self.formatVersion else {
                throw SchemaFileError(
                    "format version \(number) is newer than this program reads (\(Self.formatVersion))")
            }
        }
        guard case .dictionary(let entries)? = top["Keys"] else { throw SchemaFileError("no Keys dictionary") }
        var keys: [KeySchema] = []
        for (name, entry) in entries {
            guard case .dictionary(let fields) = entry else {
                throw SchemaFileError("key \"\(name)\": its entry is a \(entry.typeName), not a dictionary")
            }
            var key = KeySchema(name: name, type: nil)
            if let type = fields["Type"] {
                guard case .string(let text) = type, let known = PropertyListType(rawValue: text) else {
                    throw SchemaFileError(
                        "key \"\(name)\": Type must be one of "
                            + PropertyListType.allCases.map(\.rawValue).joined(separator: ", "))
                }
                key.type = known
            }
            key.defaultValue = fields["Default"]
            if let summary = fields["Summary"] {
                guard case .string(let text) = summary else {
                    throw SchemaFileError("key \"\(name)\": Summary is not a string")
                }
                key.summary = text
            }
            key.minimum = fields["Minimum"]
            key.maximum = fields["Maximum"]
            if let choices = fields["Choices"] {
                guard case .array(let values) = choices else {
                    throw SchemaFileError("key \"\(name)\": Choices is not an array")
                }
                key.choices = values
            }
            if let secret = fields["Secret"] {
                guard case .bool(let flag) = secret else {
                    throw SchemaFileError("key \"\(name)\": Secret is not a Boolean")
                }
                key.isSecret = flag
            }
            keys.append(key)
        }
        self.init(domain: domain, keys: keys)
    }

    /// A schema from a file's bytes (any property-list format).
    public init(data: Data) throws(SchemaFileError) {
        guard data.count <= Self.maximumFileSize else {
            throw SchemaFileError("\(data.count) bytes, more than a schema file may hold (\(Self.maximumFileSize))")
        }
        let value: PropertyList
        do { value = try PropertyList.decode(data).value } catch { throw SchemaFileError("\(error)") }
        try self.init(propertyList: value)
    }

    // MARK: Finding and publishing

    /// The published schema of a domain: the first `<domain>.plist` in `directories` (searched in order),
    /// nil when none has one.
    ///
    /// - Throws: ``SchemaFileError`` (with the file's path) when the first file found cannot be read or is
    ///   no schema of that domain; a broken schema is an error, never silently no schema.
    public static func find(domain: String, in directories: [String]) throws(SchemaFileError) -> DomainSchema? {
        try find(domain: domain, in: directories, on: StorageContext.system.fileSystem)
    }

    /// ``find(domain:in:)`` on a store's file system.
    static func find(domain: String, in directories: [String], on fileSystem: any DefaultsFileSystem)
        throws(SchemaFileError) -> DomainSchema?
    {
        for directory in directories where !directory.isEmpty {
            let path = file(domain: domain, in: directory)
            let data: Data
            do throws(SystemError) {
                guard let read = try fileSystem.read(atPath: path) else { continue }
                data = read.data
            } catch {
                throw SchemaFileError("cannot read it: \(systemErrorText(error.errno))", path: path)
            }
            var schema: DomainSchema
            do throws(SchemaFileError) { schema = try DomainSchema(data: data) } catch {
                throw SchemaFileError(error.message, path: path)
            }
            guard schema.domain == domain else {
                throw SchemaFileError("it is the schema of \(schema.domain), not of \(domain)", path: path)
            }
            schema.domain = domain
            return schema
        }
        return nil
    }

    /// The path of a domain's schema in a directory.
    static func file(domain: String, in directory: String) -> String {
        (directory.hasSuffix("/") ? directory : directory + "/") + domain + ".plist"
    }

    /// Writes the schema as `<domain>.plist` in `directory` (created if needed), atomically.
    ///
    /// - Returns: the file's path.
    @discardableResult
    public func write(to directory: String) throws(DefaultsError) -> String {
        try write(to: directory, on: StorageContext.system.fileSystem, pid: StorageContext.system.pid)
    }

    /// ``write(to:)`` on a store's file system, by the process `pid` (its context's).
    func write(to directory: String, on fileSystem: any DefaultsFileSystem, pid: Int32) throws(DefaultsError)
        -> String
    {
        try DomainName.validate(domain)
        let path = Self.file(domain: domain, in: directory)
        let data: Data
        do {
            data = try propertyList.encoded(as: .xml)
        } catch {
            throw .notAPropertyList(key: "schema of \(domain)", error)
        }
        do throws(SystemError) {
            // Readable by every user, as the schema is (each writer checks against it).
            try fileSystem.createDirectories(directory, permissions: 0o755)
        } catch {
            throw .writeFailed(path: directory, errno: error.errno, message: error.message)
        }
        do throws(SystemError) {
            // The store's own atomic replace, readable by every user (each writer checks against it).
            _ = try fileSystem.replaceAtomically(path, with: data, readableByOthers: true, pid: pid)
        } catch {
            throw .writeFailed(path: path, errno: error.errno, message: error.message)
        }
        return path
    }
}

/// A schema file that cannot be used, and why.
public struct SchemaFileError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong.
    public var message: String
    /// The file, when one was read.
    public var path: String?

    /// An error.
    init(_ message: String, path: String? = nil) {
        self.message = message
        self.path = path
    }

    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    public var description: String {
        path.map { "schema \($0): \(message)" } ?? "schema: \(message)"
    }
}
