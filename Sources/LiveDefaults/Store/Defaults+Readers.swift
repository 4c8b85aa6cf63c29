public import Foundation

/// A process that reads a domain's file, as it announced itself (Docs/OnDisk.md, "Readers"): which version of
/// the file it runs and the last version it refused. ``Defaults/readers(inDomain:layer:)`` lists them.
///
/// A process, not an API to read through: settings are read through a ``Defaults`` store.
public struct ReadingProcess: Sendable, Hashable {
    /// The reading process.
    public let processID: Int32
    /// Its executable's file name.
    public let executable: String
    /// The version of the file it applied (``DomainVersion/noFile`` for no file).
    public let version: DomainVersion
    /// When it applied that version.
    public let since: Date
    /// The last version it refused (``Defaults/addValidator(_:)``), if any.
    public let refusal: VersionRefusal?
    /// The keys its environment sets (``Defaults/Configuration/environmentPrefix``), each with what sets it
    /// ("environment variable MYSERVER_RATE_LIMIT"): a write of one of them to the file changes the file, not
    /// what this process reads.
    public let pinnedKeys: [String: String]
    /// What it runs instead of the file's version, when it has accepted none of the file's versions since it
    /// started (the one on disk refused by its validators, or unreadable): nil when it runs a version of the file.
    public let fallback: Fallback?

    /// What a reader runs instead of the file's version: the last known good across restarts.
    public enum Fallback: Sendable, Hashable {
        /// The version ``ReadingProcess/version``, given back by the file's change log: the newest its validators
        /// accept.
        case changeLog
        /// Nothing of the file (the log has no version its validators accept): the layers below it, its defaults.
        case defaults
    }

    init(_ announcement: ReaderAnnouncement) {
        processID = announcement.pid
        executable = announcement.executable
        version = DomainVersion(digest: announcement.applied)
        since = Date(timeIntervalSince1970: announcement.since)
        pinnedKeys = announcement.pinned
        fallback = announcement.fallback.map { $0 == .log ? .changeLog : .defaults }
        refusal = announcement.refused.map { refused in
            VersionRefusal(
                processID: announcement.pid, executable: announcement.executable,
                version: DomainVersion(digest: refused.version), reason: refused.reason,
                time: Date(timeIntervalSince1970: refused.time))
        }
    }
}

/// A process that reads a domain's file: the name this type had first.
@available(*, deprecated, renamed: "ReadingProcess")
public typealias DefaultsReader = ReadingProcess

/// Who reads a domain, and which version each runs: "did my change take?"
extension Defaults {
    /// The processes that read one layer of a domain now (each a store that watches it: a program on the library,
    /// `defaults watch`, the fleet agent), with the version of the file each applied and the last it refused; a
    /// process that has ended is never listed. By process id. Compare ``ReadingProcess/version`` with
    /// ``versionOnDisk(inDomain:layer:)`` to tell who runs the version on disk.
    ///
    /// - Parameters:
    ///   - domain: The domain; the store's application domain (or suite) when nil.
    ///   - layer: The domain's file: ``PreferenceLayer/currentUser`` unless given.
    public func readers(inDomain domain: String? = nil, layer: PreferenceLayer = .currentUser) -> [ReadingProcess] {
        ReaderAnnouncements.read(
            forDomainFile: path(ofDomain: domain, layer: layer), on: configuration.fileSystem,
            processes: configuration.context.storage.processes
        ).map(ReadingProcess.init)
    }

    /// The version of one layer of a domain on disk now (``DomainVersion/noFile`` when the file does not exist);
    /// nil when it cannot be read.
    ///
    /// - Parameters:
    ///   - domain: The domain; the store's application domain (or suite) when nil.
    ///   - layer: The domain's file: ``PreferenceLayer/currentUser`` unless given.
    public func versionOnDisk(inDomain domain: String? = nil, layer: PreferenceLayer = .currentUser) -> DomainVersion? {
        ReaderAnnouncements.versionOnDisk(
            ofDomainFile: path(ofDomain: domain, layer: layer), on: configuration.fileSystem
        )
        .map(DomainVersion.init(digest:))
    }

    /// The version of one layer of a domain this store holds: after ``synchronize()``, the version it wrote (what
    /// `defaults write --wait` waits for its readers to apply).
    ///
    /// - Parameters:
    ///   - domain: The domain; the store's application domain (or suite) when nil.
    ///   - layer: The domain's file: ``PreferenceLayer/currentUser`` unless given.
    public func heldVersion(inDomain domain: String? = nil, layer: PreferenceLayer = .currentUser) -> DomainVersion {
        DomainVersion(
            digest: file(forDomain: domainOrOwn(domain), layer: layer).heldVersionNumber)
    }

    /// The path of one layer of a domain's file (the application domain's when nil).
    private func path(ofDomain domain: String?, layer: PreferenceLayer) -> String {
        configuration.locations.path(forDomain: domainOrOwn(domain), layer: layer)
    }

    /// `domain`, or the store's own (its application domain or suite) when nil: what every `inDomain:` means by
    /// none.
    func domainOrOwn(_ domain: String?) -> String {
        domain ?? configuration.applicationDomain
    }

    // MARK: The names these had first

    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    @available(*, deprecated, renamed: "readers(inDomain:layer:)")
    public func readers(ofDomain domain: String?, layer: PreferenceLayer = .currentUser) -> [ReadingProcess] {
        readers(inDomain: domain, layer: layer)
    }

    /// The version on disk as text (``DomainVersion/description``).
    @available(*, deprecated, renamed: "versionOnDisk(inDomain:layer:)")
    public func versionOnDisk(ofDomain domain: String?, layer: PreferenceLayer = .currentUser) -> String? {
        versionOnDisk(inDomain: domain, layer: layer)?.description
    }

    /// The version held as text (``DomainVersion/description``).
    @available(*, deprecated, renamed: "heldVersion(inDomain:layer:)")
    public func heldVersion(ofDomain domain: String?, layer: PreferenceLayer = .currentUser) -> String {
        heldVersion(inDomain: domain, layer: layer).description
    }
}
