public import Synchronization

/// A tag (3 bits) and a 64-bit payload that one writer at a time changes and any thread reads with loads
/// only: the seqlock behind a typed key's read slot (``ScalarReadSlots``) and a cached key's bucket
/// (``ValueReadCache``).
///
/// The cell is two adjacent atomic words in memory its owner allocates: `control` = version << 4 | tag << 1 |
/// writing, then the payload. A writer (writers are serialised by their owner's lock) sets the writing bit,
/// stores the payload, then stores the next version with the tag and the bit clear. A reader loads the control
/// word, gives up if a write is under way, loads the payload, and keeps it only if the control word is
/// unchanged after it: a torn read is never returned, only nil (the caller then takes its locked path). A
/// word that was never written is 0: tag 0, which owners use for "never filled".
///
/// Only values that can be copied as bits belong here; a reference-counted value cannot be copied out of a
/// seqlock (the reader would retain an object the writer may already have released).
@usableFromInline
struct SeqlockCell {
    /// The control word; the payload is the word after it.
    @usableFromInline let control: UnsafeMutablePointer<Atomic<UInt64>>

    @inlinable @inline(__always)
    init(_ control: UnsafeMutablePointer<Atomic<UInt64>>) { self.control = control }

    /// How many bits of the control word the tag takes (values 0 to 7).
    @usableFromInline static let tagMask: UInt64 = 7

    /// The tag and payload of the last completed write, or nil when a write is under way or completed during
    /// the read.
    @inlinable @inline(__always)
    func read() -> (tag: UInt64, payload: UInt64)? {
        consistently { tag in (tag, (control + 1).pointee.load(ordering: .relaxed)) }
    }

    /// What `body` reads (given the cell's tag), when no write of this cell began or ended while it read; nil
    /// otherwise. `body` reads only atomics: the payload, or memory the cell's writes guard (``ViewGate``).
    @inlinable @inline(__always)
    func consistently<Result>(_ body: (_ tag: UInt64) -> Result) -> Result? {
        let before = control.pointee.load(ordering: .acquiring)
        guard before & 1 == 0 else { return nil }
        let result = body((before >> 1) & Self.tagMask)
        atomicMemoryFence(ordering: .acquiring)
        guard control.pointee.load(ordering: .relaxed) == before else { return nil }
        return result
    }

    /// The tag of the last write, for the writer (under its owner's lock).
    var tag: UInt64 { (control.pointee.load(ordering: .relaxed) >> 1) & Self.tagMask }

    /// Writes `tag` and `payload`; `during` runs while the write is under way (readers give up), for what must
    /// change with the cell (a cache bucket's box). Only one writer at a time.
    @inline(__always)
    func write<Result>(tag: UInt64, payload: UInt64, during: () -> Result) -> Result {
        let before = control.pointee.load(ordering: .relaxed)
        control.pointee.store(before | 1, ordering: .relaxed)
        atomicMemoryFence(ordering: .releasing)
        (control + 1).pointee.store(payload, ordering: .relaxed)
        let result = during()
        control.pointee.store(((before >> 4) &+ 1) << 4 | (tag & Self.tagMask) << 1, ordering: .releasing)
        return result
    }

    /// Writes `tag` and `payload`. Only one writer at a time.
    @inline(__always)
    func write(tag: UInt64, payload: UInt64) {
        write(tag: tag, payload: payload, during: {})
    }

    /// Copies another cell's control word and payload as they are, for a cell no reader sees yet (a table
    /// being filled before it is published).
    func copyUnpublished(from other: SeqlockCell) {
        control.pointee.store(other.control.pointee.load(ordering: .relaxed), ordering: .relaxed)
        (control + 1).pointee.store((other.control + 1).pointee.load(ordering: .relaxed), ordering: .relaxed)
    }
}
