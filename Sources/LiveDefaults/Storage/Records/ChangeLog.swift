import Foundation
import Synchronization

/// A domain file's change log: which writer changed which keys, from what to what, and when (Docs/OnDisk.md,
/// "The change log"). It lives beside the file (`.<file name>.log`, as the lock is `.<file name>.lock`), one
/// JSON object per line, oldest first, and is bounded: past ``maximumSize`` the oldest entries are dropped.
///
/// Three kinds of line:
/// - an **entry**: a version of the file someone wrote — when, the writer (its executable, process and user;
///   the agent's etcd revision) or `external` when no LiveDefaults writer made it, the version's digest, and
///   each key changed with its old and new value (a value larger than ``maximumValueBytes`` encoded is logged as
///   its digest, type and size);
/// - a **checkpoint**: a version's digest and the digest of each key's value in it. The log's last checkpoint
///   with the entries after it say what the last logged version held, key by key, so that a process finding
///   the file changed by someone else can tell which keys they changed;
/// - an **intent**: the version a LiveDefaults writer is about to rename into place, and who it is, without
///   keys. The writer appends it before its rename and the entry after it, both under the domain's file lock:
///   an entry is only ever written for a version that landed, and a writer stopped between the rename and
///   its entry leaves its intent, so that whoever records the version later (as one nobody logged) names the
///   writer rather than `external`. An intent whose version never landed is never shown;
/// - a **refusal**: a reading process whose validators refused a version of the file (it kept the version
///   before): when, the version, the validator's reason, and the process. Appended by the refusing process, in
///   the background; it records nothing of the file's contents, so the lines around it read as without it.
///
/// The log is a record, not the data: it is appended without `fdatasync` (a crash may lose its last lines,
/// never a value), and a log that cannot be read or written never stops a write — its unreadable lines are
/// skipped and a write that cannot append says nothing.
struct ChangeLog: Sendable, Equatable {
    /// The size beyond which the oldest entries are dropped (the log is rewritten with its newest quarter,
    /// ``keptSize(bound:)``), for a domain of up to about 1,300 keys; a larger domain's bound is eight of its
    /// checkpoints (``bound(keys:)``).
    static let maximumSize = 512 << 10
    /// The most a reader takes of a log (its end): a log grown past any bound by a hostile writer costs no more.
    static let maximumReadSize = 16 << 20
    /// Values whose binary encoding is larger are logged as their digest, type and size, not whole.
    static let maximumValueBytes = 1024
    /// The format of the lines this version writes; lines of another are skipped.
    static let formatVersion = 1

    /// The process that wrote a version.
    struct Writer: Sendable, Hashable, Codable {
        var executable: String
        var pid: Int32
        var uid: UInt32
        /// For the fleet agent: the etcd revision it applied.
        var revision: Int64?
    }

    /// A value as the log holds it: whole, or, when large, its digest, type and encoded size; or, for the old
    /// value of an external change, unknown (the log held only its digest and the noticing process had no copy).
    enum LoggedValue: Sendable, Hashable {
        /// A value and its binary encoding (``ChangeLog/encode(_:)``), made once: the size check, the line and
        /// the digest all need it.
        case value(PropertyList, encoding: Data)
        case summary(digest: UInt64, type: String, size: Int)
        case unknown

        /// The value as logged: whole when small enough, else summarised.
        init(_ value: PropertyList) {
            let encoded = ChangeLog.encode(value)
            if encoded.count <= ChangeLog.maximumValueBytes {
                self = .value(value, encoding: encoded)
            } else {
                self = .summary(digest: FastHash.hash(encoded), type: value.typeName, size: encoded.count)
            }
        }

        /// The digest of the value's binary encoding, whichever way it is logged; nil when unknown.
        var digest: UInt64? {
            switch self {
            case .value(_, let encoding): FastHash.hash(encoding)
            case .summary(let digest, _, _): digest
            case .unknown: nil
            }
        }
    }

    /// One key of a version: its value before and after (nil: absent).
    struct Change: Sendable, Hashable {
        var key: String
        var old: LoggedValue?
        var new: LoggedValue?
    }

    /// A writer's announcement of the version it is about to rename into place.
    struct Intent: Sendable, Hashable {
        var origin: ChangeOrigin
        var writer: Writer
        /// The version's reason: what the entry will say, kept for a version whose writer stopped before it.
        var reason: String? = nil
    }

    /// One version someone wrote.
    struct Entry: Sendable, Hashable {
        var time: Date
        var origin: ChangeOrigin
        /// Nil for an external change.
        var writer: Writer?
        /// The digest of the version's file, as the store computes it for every version it reads or writes:
        /// a process that reads a version can tell whether the log recorded it.
        var version: UInt64
        var changes: [Change]
        /// Why the writer made it, when it said (``ChangeLogAttribution/reason``): `defaults write --wait` putting
        /// back a version a reader refused says which and why.
        var reason: String? = nil
    }

    /// A reading process that refused a version (``Defaults/addValidator(_:)``).
    struct Refusal: Sendable, Hashable {
        var time: Date
        var version: UInt64
        var reason: String
        var reader: Writer
    }

    /// The entries, oldest first.
    var entries: [Entry] = []
    /// The refusals, by the version refused, each version's oldest first.
    var refusals: [UInt64: [Refusal]] = [:]
    /// Who announced each version in an intent line after the last entry or checkpoint (origin and writer), by
    /// the version's digest: the versions announced and not recorded since.
    var intents: [UInt64: Intent] = [:]
    /// The digest of the last version the log recorded, and each of its keys' value digests; nil when the log
    /// holds no checkpoint (absent, or every line unreadable).
    var lastVersion: UInt64?
    var lastKeys: [String: UInt64]?
    /// The checkpoints, oldest first, each with the number of entries before it: with the entries' new values
    /// they say what every logged version held, key by key (``LoggedVersions``).
    var checkpoints: [Checkpoint] = []

    /// A checkpoint line: a version, each of its keys' value digests, and how many entries come before it.
    struct Checkpoint: Sendable, Hashable {
        var entriesBefore: Int
        var version: UInt64
        var keys: [String: UInt64]
    }

    // MARK: Digests

    /// A value's binary property-list encoding (the same bytes for the same value in every process).
    static func encode(_ value: PropertyList) -> Data {
        (try? value.encoded(as: .binary)) ?? Data()
    }

    /// Each key's value digest.
    static func keyDigests(of contents: [String: PropertyList]) -> [String: UInt64] {
        contents.mapValues { FastHash.hash(encode($0)) }
    }

    init() {}
}

/// Who the writes made in a task are logged as, when not this process's own: the fleet agent applying etcd's
/// change sets the revision it applies (``Defaults/attributingWrites(toFleetRevision:_:)``), and the log
/// records the version as `fleet` with that revision.
enum ChangeLogAttribution {
    /// The fleet revision bound by ``withFleetRevision(_:_:)``, and why the writes made in a task are made
    /// (``withReason(_:_:)``): each read by every `set`, so each costs one relaxed load while unbound.
    private static let fleetRevision = CountedTaskLocal<Int64>()
    private static let reason = CountedTaskLocal<String>()

    /// Runs `body` with its writes attributed to the fleet at etcd's `revision`.
    static func withFleetRevision<Result>(_ revision: Int64, _ body: () throws -> Result) rethrows -> Result {
        try fleetRevision.withValue(revision, body)
    }

    /// The fleet revision the current task or thread writes for, nil for this process's own writes.
    static var currentFleetRevision: Int64? { fleetRevision.current }

    /// Runs `body` with the writes and edits it makes attributed to `reason`
    /// (``Defaults/attributingWrites(reason:_:)``).
    static func withReason<Result>(_ reason: String, _ body: () throws -> Result) rethrows -> Result {
        try self.reason.withValue(reason, body)
    }

    /// The reason the current task or thread writes for, nil outside any attribution. An edit keeps it
    /// (``DomainEdits/reason``), so that the background writer's later write of the edit is logged with it.
    static var currentReason: String? { reason.current }

    /// The longest reason a log line holds, in UTF-8 bytes: a line stays small beside its changes.
    static let longestReason = 1_000

    /// A reason as the log records it: one line (a control character becomes a space, so that `defaults log`
    /// prints it on its own line and never passes a terminal's escape through), without the space around it,
    /// cut at a character to ``longestReason`` bytes; nil when nothing is left.
    static func recordedReason(_ reason: String?) -> String? {
        guard let reason else { return nil }
        var text = String(
            String.UnicodeScalarView(
                reason.unicodeScalars.map { $0.properties.generalCategory == .control ? " " : $0 }))
        text = String(text.drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
        guard !text.isEmpty else { return nil }
        if text.utf8.count > longestReason {
            var cut = ""
            for character in text {
                guard cut.utf8.count + character.utf8.count <= longestReason else { break }
                cut.append(character)
            }
            text = cut
        }
        return text
    }
}

extension ChangeOrigin {
    /// The origin of a change this process makes now: ``fleet`` on a task or thread inside the fleet agent's
    /// attribution (`Defaults.attributingWrites(toFleetRevision:_:)`), else ``local``.
    static var ofThisProcess: ChangeOrigin { ChangeLogAttribution.currentFleetRevision == nil ? .local : .fleet }
}
