import Foundation

/// The first step of a write (``DomainWrite``), with the file lock held: the version of the domain file that
/// the edits apply to. It is the version this process holds when the file is as this process left it (the same
/// stamp), else the file read again. A file that cannot be read is either a writer in the middle of its
/// in-place write (Foundation truncates, then writes, without a lock: ``Found/unsettled``, tried again after a
/// pause without the lock) or corrupt (``corrupt``: the write keeps it aside and applies the edits to the
/// version this process held, its last known good).
struct CurrentVersion {
    /// The contents the edits apply to.
    var contents: [String: PropertyList]
    /// The version's number in the change log: its digest, 0 for no file; nil when not known (the file there
    /// cannot be read, and the edits apply to the version held before it).
    var logVersion: UInt64?
    var format: PropertyList.Format
    /// Whether the file changed since this process last read or wrote it (it was read again).
    var reread: Bool
    /// Why the file there cannot be read, when it cannot: the write keeps it aside before it writes.
    var corrupt: PropertyListError?

    /// What this process holds of the file (``DomainFile/State``): the file as it last saw it, and the version it
    /// serves. They are one version but while a version on disk is refused or unreadable: the stamp is then that
    /// version's and the contents the last accepted (or the change log's fallback).
    struct Held {
        /// The file's stamp as last seen (``DomainFile/State/stamp``).
        var stamp: FileStamp?
        var contents: [String: PropertyList]
        /// The digest of `contents` (``DomainFile/State/servedDigest``).
        var servedDigest: UInt64?
        var format: PropertyList.Format
        /// The version last found corrupt (its contents are not `contents`).
        var knownCorrupt: FileStamp?
        /// The version on disk that validators refused (its contents are not `contents` either).
        var refused: FileStamp? = nil

        /// The version as the change log's recorder takes it (for the old values of what another writer
        /// changed), when its digest is known.
        var forChangeLog: ChangeLog.Held? { servedDigest.map { ChangeLog.Held.whole(version: $0, contents: contents) } }
    }

    enum Found {
        case version(CurrentVersion)
        /// Unreadable in a way a writer in progress explains: nothing done; try again after a pause.
        case unsettled
        case failed(DefaultsError)
    }

    /// The current version of `path`, as attempt `attempt` (from 1) of a write finds it.
    static func find(_ path: String, on fileSystem: any DefaultsFileSystem, held: Held, attempt: Int) -> Found {
        let stamp: FileStamp?
        do throws(SystemError) { stamp = try fileSystem.stamp(atPath: path) } catch {
            return .failed(.writeFailed(path: path, errno: error.errno, message: error.message))
        }
        // Read again when another process changed the file, and when the version held is one found corrupt (the
        // cache then holds nothing, and the file must be kept aside, not overwritten) or refused by validators
        // (the cache holds the version before it; the edits go onto the file as it is).
        guard stamp != held.stamp || (stamp != nil && (stamp == held.knownCorrupt || stamp == held.refused)) else {
            return .version(
                CurrentVersion(
                    contents: held.contents, logVersion: stamp == nil ? 0 : held.servedDigest, format: held.format,
                    reread: false))
        }
        // One read under the lock; waiting for a writer in progress happens without it (the commit's `writeSettled`).
        let read: VersionReading.ReadResult
        switch VersionReading.readOnce(
            path, on: fileSystem, knownCorrupt: held.knownCorrupt, emptyMayBeInProgress: attempt < 3)
        {
        case .done(let result): read = result
        case .unsettled(let failure):
            if attempt < VersionReading.settleAttempts { return .unsettled }
            read = .failure(failure)
        }
        switch read {
        case .success(let loaded):
            // Read without a previous version's index: always the whole contents.
            let contents: [String: PropertyList]
            if case .whole(let whole) = loaded?.contents { contents = whole } else { contents = [:] }
            return .version(
                CurrentVersion(
                    contents: contents, logVersion: FileVersion.logNumber(loaded?.version),
                    format: loaded?.format ?? held.format, reread: true))
        case .failure(let failure):
            let reason: PropertyListError
            switch failure.error.code {
            case .corruptFile:
                reason = failure.error.propertyListError ?? .unrecognizedFormat
            case .notADictionary:
                let found = failure.error.detail ?? "value"
                reason = .malformed(offset: 0, reason: "the top-level value is a \(found), not a dictionary")
            default: return .failed(failure.error)
            }
            // Never overwrite what cannot be read: the edits go onto the last version this process read (its last
            // known good, empty when it read none), so that no key it knew of is lost from the disk.
            return .version(
                CurrentVersion(
                    contents: held.contents, logVersion: nil, format: held.format, reread: true, corrupt: reason))
        }
    }

    /// Keeps the unreadable file at `destination` aside, as `<file>.corrupt-<time>-<pid>` (`pid`: the writer's): its bytes copied and
    /// flushed, not moved, so that the file stays under the domain's name until the new version replaces it by
    /// rename, and a write that fails or stops on the way leaves the domain as it was, never gone (the fault
    /// suite found readers seeing no file when it was moved first). Returns the copy's path.
    static func keepAside(
        _ destination: String, on fileSystem: any DefaultsFileSystem, owner: (UserID, GroupID)?, time: Date,
        pid: Int32
    ) throws(SystemError) -> String {
        let kept = "\(destination).corrupt-\(Self.wholeSeconds(time))-\(pid)"
        let bytes = try fileSystem.read(atPath: destination)?.data ?? Data()
        _ = try fileSystem.replaceAtomically(kept, with: bytes, owner: owner, pid: pid)
        return kept
    }

    /// A time as whole seconds since 1970 for a file name; a clock set beyond what a name can say gives 0.
    static func wholeSeconds(_ date: Date) -> Int {
        let seconds = date.timeIntervalSince1970.rounded(.down)
        return seconds.magnitude < 1e15 ? Int(seconds) : 0
    }
}
