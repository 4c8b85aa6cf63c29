public import Foundation

/// A temporary change not yet undone (``Defaults/transaction(for:inDomain:layer:reason:_:)``,
/// `defaults write --for`): ``Defaults/pendingReverts(inDomain:layer:)`` lists them.
public struct PendingRevert: Sendable, Hashable {
    /// The version the change wrote, as ``LoggedChange/version`` names it.
    public let version: DomainVersion
    /// When it was made.
    public let made: Date
    /// When it is undone: at once by a process that has the domain open, else before the next one's first read.
    public let expiry: Date
    /// Why it was made, as recorded with it.
    public let reason: String?
    /// Each key it changed.
    public let keys: [String: Change]

    /// One key of a temporary change.
    public struct Change: Sendable, Hashable {
        /// The value the key returns to (nil: it is removed).
        public let before: PropertyList?
        /// The value the change set (nil: it removed the key); a key that no longer holds it is left as it is.
        public let set: PropertyList?
    }

    init(_ entry: PendingReverts.Entry) {
        version = DomainVersion(digest: entry.version)
        made = entry.made
        expiry = entry.expiry
        reason = entry.reason
        keys = entry.keys.mapValues { Change(before: $0.before, set: $0.set) }
    }
}

extension Defaults {
    /// What is wrong with reading `data` as a domain's pending reverts, nil when nothing is: it is entries or an
    /// error, never a trap, and what it reads writes back as bytes that read as the same. What the fuzz target
    /// `FuzzChangeLog` holds the reader to.
    package static func pendingRevertsProblem(_ data: Data) -> String? {
        guard case .success(let read) = PendingReverts.decode(data) else { return nil }
        guard let written = try? read.encoded() else { return "pending reverts read but not written back" }
        guard case .success(let again) = PendingReverts.decode(written) else {
            return "pending reverts written back do not read"
        }
        guard (try? again.encoded()) == written else { return "pending reverts written back read as others" }
        return nil
    }
}
