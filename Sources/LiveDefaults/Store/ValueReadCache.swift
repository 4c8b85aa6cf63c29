import Synchronization

/// The lock-free read path of untyped reads (``Defaults/value(forKey:)`` and every getter built on it): the
/// effective values of the keys a store has read, found without the store's lock and without SipHash.
///
/// A read through the locked merged dictionary costs a lock, a SipHash of the name and a `Dictionary` probe
/// (the hash a third of it: Docs/Benchmarks.md, "Why the read paths"); through this cache it costs the
/// ``FastHash`` the missing-key filter computed anyway, a probe of an open-addressing table, and two atomic
/// additions that mark the reader's presence.
///
/// **What it holds.** An entry per key *read* since the view was last replaced: the key, its hash, and its
/// effective value in an immutable box (nil: no domain has the key). A key not in the table is unknown, not
/// missing: its reader takes the locked path once and adds it (``fill(_:hash:value:)``). Only the one owner
/// of the view (``EffectiveView``), under the store's lock, writes: a changed key's entry gets a new box; a
/// new view (search list, registration) replaces the table by an empty one. Entries are never removed one by
/// one; when the table is full it is replaced by an empty one twice the size (at most four times the view's
/// keys, so that reading many absent keys cannot grow it without bound).
///
/// **Reclamation.** A reader announces itself in ``readers`` before it loads the table and leaves after it
/// has copied the value. A box or table that a writer unpublished is *retired*, and released only by a thread
/// that, after retiring it, sees no reader at all: a reader that was present could hold it; one that arrives
/// later loads the new pointer. The check runs after every write and whenever the last reader leaves, so
/// retired memory waits only while reads overlap without a gap (threads reading in a tight loop, together,
/// for as long as writes go on).
///
/// Keys are hashed as their UTF-8 bytes: two spellings of a name that Swift's `String ==` calls equal (`é`
/// precomposed and decomposed) hash differently and are two names here, as they are to Foundation, whose
/// `CFString` keys compare literally.
final class ValueReadCache: @unchecked Sendable {
    // @unchecked: the published table and boxes are reached only through atomics; a table's buckets are
    // written only by the owning store's writers (serialised by its lock) and each bucket's key is written
    // before its hash publishes it; unpublished objects are released only when no reader is present.

    /// A value as readers see it: immutable once published.
    final class Box {
        let value: PropertyList?
        init(_ value: PropertyList?) { self.value = value }
    }

    /// An open-addressing table with linear probing. A bucket whose hash is 0 is empty; a hash of 0 is
    /// stored as 1.
    final class Table {
        let mask: Int
        /// How many buckets hold a key (writers only).
        var used = 0
        let hashes: UnsafeMutablePointer<Atomic<UInt64>>
        /// Initialised in the buckets whose hash is not 0.
        let keys: UnsafeMutablePointer<String>
        /// `Unmanaged<Box>`, retained by the table, of the buckets whose hash is not 0.
        let boxes: UnsafeMutablePointer<Atomic<UnsafeMutableRawPointer?>>

        init(capacity: Int) {
            mask = capacity - 1
            hashes = .allocate(capacity: capacity)
            keys = .allocate(capacity: capacity)
            boxes = .allocate(capacity: capacity)
            for index in 0..<capacity {
                (hashes + index).initialize(to: Atomic(0))
                (boxes + index).initialize(to: Atomic(nil))
            }
        }

        deinit {
            for index in 0...mask where hashes[index].load(ordering: .relaxed) != 0 {
                (keys + index).deinitialize(count: 1)
                if let box = boxes[index].load(ordering: .relaxed) { Unmanaged<Box>.fromOpaque(box).release() }
            }
            hashes.deinitialize(count: mask + 1)
            boxes.deinitialize(count: mask + 1)
            hashes.deallocate()
            keys.deallocate()
            boxes.deallocate()
        }

        /// The bucket holding `key`, or the empty bucket where it would go.
        @inline(__always)
        func bucket(of key: String, hash: UInt64) -> (index: Int, found: Bool) {
            let hash = ValueReadCache.stored(hash)
            var index = Int(truncatingIfNeeded: hash) & mask
            while true {
                let stored = hashes[index].load(ordering: .acquiring)
                if stored == 0 { return (index, false) }
                if stored == hash && keys[index] == key { return (index, true) }
                index = (index &+ 1) & mask
            }
        }
    }

    /// What a read found.
    enum Lookup {
        /// The key is in the cache: its effective value (nil when no domain has it).
        case known(PropertyList?)
        /// The key was not read since the view was last replaced: ask the view.
        case unknown
    }

    private let current: Atomic<Unmanaged<Table>>
    private let readers = Atomic<Int>(0)
    private let hasRetired = Atomic<Bool>(false)
    private let retired = Lock<[Unmanaged<AnyObject>]>([])
    private static let minimumCapacity = 16

    init() {
        current = Atomic(Unmanaged.passRetained(Table(capacity: Self.minimumCapacity)))
    }

    deinit {
        // No reader can hold the store, so none is in the cache.
        current.load(ordering: .relaxed).release()
        for object in retired.withLock({ $0 }) { object.release() }
    }

    /// The hash a bucket stores for a key's ``FastHash`` (0 marks an empty bucket).
    @inline(__always)
    static func stored(_ hash: UInt64) -> UInt64 { hash == 0 ? 1 : hash }

    // MARK: Reading (any thread, no lock)

    /// The cached effective value of a key, if the key was read since the view was last replaced; `hash` is
    /// the key's ``FastHash`` (which the missing-key filter computed already).
    @inline(__always)
    func lookup(_ key: String, hash: UInt64) -> Lookup {
        readers.wrappingAdd(1, ordering: .sequentiallyConsistent)
        let table = current.load(ordering: .sequentiallyConsistent)
        let result: Lookup = table._withUnsafeGuaranteedRef { table in
            let (index, found) = table.bucket(of: key, hash: hash)
            guard found else { return .unknown }
            guard let box = table.boxes[index].load(ordering: .sequentiallyConsistent) else { return .known(nil) }
            return .known(Unmanaged<Box>.fromOpaque(box)._withUnsafeGuaranteedRef { $0.value })
        }
        let (before, _) = readers.wrappingSubtract(1, ordering: .sequentiallyConsistent)
        if before == 1 && hasRetired.load(ordering: .relaxed) { releaseRetired() }
        return result
    }

    // MARK: Writing (the view's owner, under the store's lock)

    /// Adds a key that a reader had to look up in the view, with the value it found there; `viewCount` (the
    /// view's number of keys) bounds the table.
    func fill(_ key: String, hash: UInt64, value: PropertyList?, viewCount: Int) {
        var table = current.load(ordering: .relaxed).takeUnretainedValue()
        var (index, found) = table.bucket(of: key, hash: hash)
        if found { return }
        if (table.used + 1) * 2 > table.mask + 1 {
            // Full: start again, empty (what was read before is read once more through the view).
            let capacity = min(max(Self.minimumCapacity, (table.mask + 1) * 2), Self.capacityBound(viewCount))
            table = Table(capacity: capacity)
            replace(with: table)
            (index, _) = table.bucket(of: key, hash: hash)
        }
        (table.keys + index).initialize(to: key)
        table.boxes[index].store(value.map { Unmanaged.passRetained(Box($0)).toOpaque() }, ordering: .relaxed)
        table.hashes[index].store(Self.stored(hash), ordering: .releasing)
        table.used += 1
    }

    /// Follows a change of a key's effective value, if the key is cached; `hash` is the key's ``FastHash``.
    func update(_ key: String, hash: UInt64, to value: PropertyList?) {
        let table = current.load(ordering: .relaxed).takeUnretainedValue()
        let (index, found) = table.bucket(of: key, hash: hash)
        guard found else { return }
        let box = value.map { Unmanaged.passRetained(Box($0)).toOpaque() }
        if let old = table.boxes[index].exchange(box, ordering: .sequentiallyConsistent) {
            retire(Unmanaged<AnyObject>.fromOpaque(old))
        }
    }

    /// Forgets every key (the whole view was replaced); an empty table (a store being opened) stays.
    func clear() {
        guard current.load(ordering: .relaxed)._withUnsafeGuaranteedRef({ $0.used > 0 }) else { return }
        replace(with: Table(capacity: Self.minimumCapacity))
    }

    /// Releases what was retired, if no reader is present now. Called after every change of the view, so
    /// it returns at once when nothing waits (the flag is set under the list's lock by whoever retires).
    func releaseRetired() {
        guard hasRetired.load(ordering: .relaxed) else { return }
        let batch = retired.withLock { retired -> [Unmanaged<AnyObject>] in
            let batch = retired
            retired.removeAll()
            hasRetired.store(false, ordering: .relaxed)
            return batch
        }
        guard !batch.isEmpty else { return }
        if readers.load(ordering: .sequentiallyConsistent) == 0 {
            for object in batch { object.release() }
        } else {
            retired.withLock { retired in
                retired += batch
                hasRetired.store(true, ordering: .relaxed)
            }
        }
    }

    /// The current table's number of buckets (for tests).
    var capacity: Int { current.load(ordering: .relaxed)._withUnsafeGuaranteedRef { $0.mask + 1 } }

    /// How many objects wait to be released (for tests).
    var retiredCount: Int { retired.withLock { $0.count } }

    private func replace(with table: Table) {
        let old = current.exchange(Unmanaged.passRetained(table), ordering: .sequentiallyConsistent)
        retire(Unmanaged<AnyObject>.fromOpaque(old.toOpaque()))
    }

    private func retire(_ object: Unmanaged<AnyObject>) {
        retired.withLock { retired in
            retired.append(object)
            hasRetired.store(true, ordering: .relaxed)
        }
    }

    /// The largest table for a view of `count` keys: room for every key and as many absent ones, at half load.
    private static func capacityBound(_ count: Int) -> Int {
        let wanted = max(minimumCapacity, count.multipliedReportingOverflow(by: 4).partialValue)
        return wanted >= 1 << 40 ? 1 << 40 : 1 << (Int.bitWidth - (wanted - 1).leadingZeroBitCount)
    }
}
