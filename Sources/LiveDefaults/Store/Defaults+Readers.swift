public import Foundation

/// A process that reads a domain's file, as it announced itself (Docs/OnDisk.md, "Readers"): which version of
/// the file it runs and the last version it refused. ``Defaults/readers(ofDomain:layer:)`` lists them.
public struct DefaultsReader: Sendable, Hashable {
    /// The reading process.
    public let processID: Int32
    /// Its executable's file name.
    public let executable: String
    /// The version of the file it applied, named as the change log names versions (16 hexadecimal digits of the
    /// digest of the file's bytes; all zeros for no file).
    public let version: String
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
        /// The version ``DefaultsReader/version``, given back by the file's change log: the newest its validators
        /// accept.
        case changeLog
        /// Nothing of the file (the log has no version its validators accept): the layers below it, its defaults.
        case defaults
    }

    init(_ announcement: ReaderAnnouncement) {
        processID = announcement.pid
        executable = announcement.executable
        version = FileVersion.hex(announcement.applied)
        since = Date(timeIntervalSince1970: announcement.since)
        pinnedKeys = announcement.pinned
        fallback = announcement.fallback.map { $0 == .log ? .changeLog : .defaults }
        refusal = announcement.refused.map { refused in
            VersionRefusal(
                processID: announcement.pid, executable: announcement.executable,
                version: FileVersion.hex(refused.version), reason: refused.reason,
                time: Date(timeIntervalSince1970: refused.time))
        }
    }
}

/// Who reads a domain, and which version each runs: "did my change take?"
extension Defaults {
    /// The processes that read one layer of a domain now (each a store that watches it: a program on the library,
    /// `defaults watch`, the fleet agent), with the version of the file each applied and the last it refused; a
    /// process that has ended is never listed. By process id. Compare ``DefaultsReader/version`` with
    /// ``versionOnDisk(ofDomain:layer:)`` to tell who runs the version on disk.
    ///
    /// - Parameters:
    ///   - domain: The domain; the store's application domain (or suite) when nil.
    ///   - layer: The domain's file: ``PreferenceLayer/currentUser`` unless given.
    public func readers(ofDomain domain: String? = nil, layer: PreferenceLayer = .currentUser) -> [DefaultsReader] {
        let path = configuration.locations.path(forDomain: domain ?? configuration.applicationDomain, layer: layer)
        return ReaderAnnouncements.read(forDomainFile: path, on: configuration.fileSystem).map(DefaultsReader.init)
    }

    /// The version of one layer of a domain on disk now, named as ``DefaultsReader/version`` names versions (all
    /// zeros when the file does not exist); nil when it cannot be read.
    public func versionOnDisk(ofDomain domain: String? = nil, layer: PreferenceLayer = .currentUser) -> String? {
        let path = configuration.locations.path(forDomain: domain ?? configuration.applicationDomain, layer: layer)
        return ReaderAnnouncements.versionOnDisk(ofDomainFile: path, on: configuration.fileSystem).map(
            FileVersion.hex)
    }

    /// The version of one layer of a domain this store holds, named as ``DefaultsReader/version`` names versions:
    /// after ``synchronize()``, the version it wrote (what `defaults write --wait` waits for its readers to apply).
    public func heldVersion(ofDomain domain: String? = nil, layer: PreferenceLayer = .currentUser) -> String {
        FileVersion.hex(
            file(forDomain: domain ?? configuration.applicationDomain, layer: layer).heldVersionNumber)
    }
}
