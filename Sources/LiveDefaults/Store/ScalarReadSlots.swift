public import Foundation
public import Synchronization

/// The lock-free read path of typed keys: for each ``DefaultsKey`` a store has read, the key's effective value
/// when it is a scalar (integer, real, Boolean, date) or missing, readable without the store's lock and
/// without hashing the key's name.
///
/// A typed read through the locked merged dictionary costs a lock and a string hash; through a slot it
/// costs a few loads (the figures are in Docs/Decisions/ReadPaths.md). Strings, data and
/// collections are reference-counted, so a slot only marks them as "other", and their reads take the locked
/// path.
///
/// Each key takes a process-wide slot number when it is made (``DefaultsKeys/slot``); a store allocates
/// slots in chunks of ``chunkSize`` on first use, and frees them when it goes away. Slots are written only
/// under the store's state lock, in the same critical section that changes the merged view, so a slot never
/// disagrees with ``Defaults/value(forKey:)`` for longer than that section. A slot is a ``SeqlockCell``
/// (two 64-bit words: the control word, then the payload), read with loads only.
@usableFromInline
final class ScalarReadSlots: @unchecked Sendable {
    // @unchecked: the chunk table and the chunks are accessed only through atomics; the table and each chunk
    // are published with a releasing store after they are initialised, written only under the owning store's
    // lock, and freed only in deinit, when no reader can hold the store.

    @usableFromInline static let chunkSize = 256
    @usableFromInline static let chunkCount = 256
    /// How many keys of a process get a slot (the rest read through the locked path).
    @usableFromInline static let capacity = chunkSize * chunkCount

    /// What a slot holds.
    @usableFromInline
    enum Tag: UInt64 {
        /// Never filled: the reader fills it through the locked path.
        case unknown = 0
        /// No domain has the key.
        case missing
        case integer
        case real
        case bool
        case date
        /// A string, data or collection: read through the locked path.
        case other
        /// A string, data or collection that the slot's key accepted last, held back in place of a stored
        /// value the key refuses: read under the lock from the store's view (``EffectiveView/typedValue(_:forKey:)``).
        case held
    }

    @usableFromInline typealias Chunk = UnsafeMutablePointer<Atomic<UInt64>>

    /// The table of chunks (``chunkCount`` entries), made when the store fills its first slot: a store that
    /// reads no typed key never pays its 2 KiB (1,000 suites of a process, 2 MiB; Docs/Benchmarks.md, memory).
    @usableFromInline let table = Atomic<UnsafeMutablePointer<Atomic<Chunk?>>?>(nil)

    init() {}

    deinit {
        guard let chunks = table.load(ordering: .acquiring) else { return }
        for index in 0..<Self.chunkCount {
            if let chunk = chunks[index].load(ordering: .acquiring) {
                chunk.deinitialize(count: 2 * Self.chunkSize)
                chunk.deallocate()
            }
        }
        chunks.deinitialize(count: Self.chunkCount)
        chunks.deallocate()
    }

    /// The slot's tag and payload, or nil when the slot was never filled, is being written, or the key has
    /// no slot.
    @inlinable
    func read(_ slot: Int) -> (tag: Tag, payload: UInt64)? {
        guard slot >= 0, slot < Self.capacity, let chunks = table.load(ordering: .acquiring),
            let chunk = chunks[slot / Self.chunkSize].load(ordering: .acquiring)
        else { return nil }
        guard let (raw, payload) = SeqlockCell(chunk + 2 * (slot % Self.chunkSize)).read(),
            let tag = Tag(rawValue: raw), tag != .unknown
        else { return nil }
        return (tag, payload)
    }

    /// Stores a key's effective value in its slot; `held` marks a last valid value shown in place of a
    /// refused one. Only under the owning store's lock (writers are serialised).
    func write(_ slot: Int, _ value: PropertyList?, held: Bool = false) {
        guard slot >= 0, slot < Self.capacity else { return }
        var (tag, payload) = Self.encode(value)
        if held && tag == .other { tag = .held }
        SeqlockCell(chunk(slot / Self.chunkSize) + 2 * (slot % Self.chunkSize)).write(
            tag: tag.rawValue, payload: payload)
    }

    private func chunk(_ number: Int) -> Chunk {
        let chunks: UnsafeMutablePointer<Atomic<Chunk?>>
        if let existing = table.load(ordering: .acquiring) {
            chunks = existing
        } else {
            chunks = .allocate(capacity: Self.chunkCount)
            for index in 0..<Self.chunkCount { (chunks + index).initialize(to: Atomic(nil)) }
            table.store(chunks, ordering: .releasing)
        }
        if let chunk = chunks[number].load(ordering: .acquiring) { return chunk }
        let chunk = UnsafeMutablePointer<Atomic<UInt64>>.allocate(capacity: 2 * Self.chunkSize)
        for index in 0..<(2 * Self.chunkSize) { (chunk + index).initialize(to: Atomic(0)) }
        chunks[number].store(chunk, ordering: .releasing)
        return chunk
    }

    /// The effective value a slot or cache bucket holds, for tags other than `unknown`, `other` and `held`:
    /// nil for `missing` (no domain has the key).
    static func value(_ tag: Tag, _ payload: UInt64) -> PropertyList? {
        tag == .missing ? nil : decode(tag, payload)
    }

    /// The stored value a slot holds, for tags other than `unknown`, `missing` and `other`.
    @inlinable
    static func decode(_ tag: Tag, _ payload: UInt64) -> PropertyList {
        switch tag {
        case .integer: .integer(Int(Int64(bitPattern: payload)))
        case .real: .real(Double(bitPattern: payload))
        case .bool: .bool(payload != 0)
        case .date: .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: payload)))
        case .unknown, .missing, .other, .held: preconditionFailure("no stored value in a slot tagged \(tag)")
        }
    }

    static func encode(_ value: PropertyList?) -> (Tag, UInt64) {
        switch value {
        case nil: (.missing, 0)
        case .integer(let integer): (.integer, UInt64(bitPattern: Int64(integer)))
        case .real(let real): (.real, real.bitPattern)
        case .bool(let bool): (.bool, bool ? 1 : 0)
        case .date(let date): (.date, date.timeIntervalSinceReferenceDate.bitPattern)
        case .string, .data, .array, .dictionary: (.other, 0)
        }
    }
}
