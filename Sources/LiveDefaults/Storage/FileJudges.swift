import Foundation

/// The judges of a domain file's versions: one for each store that has validators
/// (``Defaults/addValidator(_:)``) and holds the file in its search list. A judge is given the contents a new
/// version would make the file hold (this process's unwritten edits on top) and answers why it refuses them,
/// or nil.
///
/// A file is judged in three places, each time with no lock of ours held (a judge runs the program's
/// validators, which may take locks of their own or read the store):
/// - a version another process wrote, before it is adopted (``DomainFile``'s reload): refused, it is not
///   applied at all, and this process keeps serving the last version it accepted, for every key of the file;
/// - an edit of this process (`set`, `replace`), before it is applied in memory: refused, nothing changes;
/// - a write, before it goes to disk: the edits on top of the version on disk, which may be newer than the one
///   the edits were judged on; the write then checks, under the file lock, that it writes exactly what was
///   judged (else it is judged again).
struct FileJudges: Sendable {
    /// Answers why the file's contents `candidate` are refused, or nil to accept them.
    typealias Judge = @Sendable (_ candidate: [String: PropertyList]) -> String?

    private var judges: [(id: UInt64, judge: Judge)] = []

    var isEmpty: Bool { judges.isEmpty }

    mutating func add(_ judge: @escaping Judge, id: UInt64) {
        judges.append((id, judge))
    }

    mutating func remove(id: UInt64) {
        judges.removeAll { $0.id == id }
    }

    /// The first refusal of `candidate`, in the order the judges were added. Call it with no lock held.
    func verdict(on candidate: [String: PropertyList]) -> String? {
        for (_, judge) in judges {
            if let reason = judge(candidate) { return reason }
        }
        return nil
    }

    /// A version of the file the judges refused.
    struct RefusedVersion: Sendable, Equatable {
        /// The version (nil: the file is gone).
        var version: FileVersion?
        /// What it holds: a write of this process goes onto it, as onto any version on disk.
        var contents: [String: PropertyList]
        var reason: String
    }
}
