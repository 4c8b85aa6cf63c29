public import Foundation

/// A version of a domain's file that a reading program's validator refused (``Defaults/addValidator(_:)``): which
/// program, which version, why and when. One type wherever a refusal is told: a store's readers
/// (``ReadingProcess/refusal``, ``Defaults/refusals(inDomain:layer:)``), the change log
/// (``LoggedChange/refusals``), and the fleet's host records and `defaults sync --status`.
///
/// Codable: the fleet keeps refusals in its JSON host records (`processID`, `executable`, `version`, `reason`,
/// `time`, and `userID` when known).
public struct VersionRefusal: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The refusing program's process ID (on its host).
    public var processID: Int32
    /// Its executable's file name.
    public var executable: String
    /// Its effective user ID, when known: the change log records it, a reader's announcement does not.
    public var userID: UInt32?
    /// The version refused.
    public var version: DomainVersion
    /// The description of the error its validator threw.
    public var reason: String
    /// When it refused.
    public var time: Date

    /// A refusal as the library reads one (from a reader's announcement, the change log, a fleet record).
    package init(
        processID: Int32, executable: String, userID: UInt32? = nil, version: DomainVersion, reason: String, time: Date
    ) {
        self.processID = processID
        self.executable = executable
        self.userID = userID
        self.version = version
        self.reason = reason
        self.time = time
    }

    /// One line: `process 4242 (api-server) refuses version 3f…: MaxPool 90 is above the limit`.
    public var description: String {
        "process \(processID) (\(executable)) refuses version \(version): \(reason)"
    }
}

extension Defaults {
    /// The refusals of the version of one layer of a domain on disk now, one per running reader that refuses it
    /// and keeps serving a version before it, by process id (a reader that refused an older version and applied
    /// none since does not count: the version on disk is a new one, not yet judged or judged good). Empty when
    /// the file cannot be read.
    ///
    /// - Parameters:
    ///   - domain: The domain; the store's application domain (or suite) when nil.
    ///   - layer: The domain's file: ``PreferenceLayer/currentUser`` unless given.
    public func refusals(inDomain domain: String? = nil, layer: PreferenceLayer = .currentUser) -> [VersionRefusal] {
        guard let onDisk = versionOnDisk(inDomain: domain, layer: layer) else { return [] }
        return readers(inDomain: domain, layer: layer).compactMap { reader in
            guard reader.version != onDisk, let refusal = reader.refusal, refusal.version == onDisk else { return nil }
            return refusal
        }
    }

    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    @available(*, deprecated, renamed: "refusals(inDomain:layer:)")
    public func refusals(ofDomain domain: String?, layer: PreferenceLayer = .currentUser) -> [VersionRefusal] {
        refusals(inDomain: domain, layer: layer)
    }
}
