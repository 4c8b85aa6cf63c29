/// Past bugs a simulated process can be made to have again (``StorageContext/hasReintroduced(_:)``), so that a test shows
/// the simulated machine's swarm finds each: never set in a real process, only in a test's context.
///
/// Each names the fix it undoes; the fix's test names the bug.
package enum ReintroducedBug: UInt8, Sendable, Hashable, CaseIterable {
    /// A file the watcher finds gone is taken as removed at once, not looked at again later (``RemovalSettling``):
    /// a replacement by unlink and create reads as every key removed and then back.
    case removalSettlingOff
    /// A version read after its stamp went stale is not judged by the settling rule (the reload's stat found the
    /// version held, the read found the replacement still empty): a transient default.
    case staleStampRead
    /// The change log's intent is written after the rename, not before it: a writer killed between the two leaves
    /// a version of its own that the log does not name, which the next reader records as another writer's.
    case logIntentAfterRename
}
