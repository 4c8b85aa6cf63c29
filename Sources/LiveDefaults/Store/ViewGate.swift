public import Synchronization

/// Makes a store's lock-free reads see whole versions: one ``SeqlockCell`` around every change of the view.
///
/// The typed keys' read slots, the missing-key filter and the value cache are each read without the store's
/// lock, and each of their cells is read whole. A change of several keys (another process's write of a file,
/// a transaction) updates them one key at a time, though; without the gate a thread reading key A and then
/// key B could get A's new value and then B's old one, a pair no writer wrote. ``EffectiveView/apply(_:)``
/// writes under the gate, and a lock-free read keeps what it read only when no change began or ended
/// meanwhile; otherwise it reads under the store's lock, which waits for the change to end. So every read
/// returns the value of a version current at some instant during the read, and a thread's successive reads
/// never go back to an older version.
@usableFromInline
final class ViewGate: @unchecked Sendable {
    // @unchecked: the two words are only accessed through atomics; writers are serialised by the owning store's
    // lock, and the words are freed only in deinit, when no reader can hold the store.

    @usableFromInline let words: UnsafeMutablePointer<Atomic<UInt64>>

    init() {
        words = .allocate(capacity: 2)
        for index in 0..<2 { (words + index).initialize(to: Atomic(0)) }
    }

    deinit {
        words.deinitialize(count: 2)
        words.deallocate()
    }

    /// What `body` read, when no change of the view began or ended while it read; nil otherwise (the caller
    /// reads under the store's lock).
    @inlinable @inline(__always)
    func read<Result>(_ body: () -> Result) -> Result? {
        SeqlockCell(words).consistently { _ in body() }
    }

    /// Runs `change` on `subject` (the view, changed in place), during which lock-free readers give up. Only
    /// under the owning store's lock.
    func changing<Subject, Result>(_ subject: inout Subject, _ change: (inout Subject) -> Result) -> Result {
        SeqlockCell(words).write(tag: 0, payload: 0) { change(&subject) }
    }
}
