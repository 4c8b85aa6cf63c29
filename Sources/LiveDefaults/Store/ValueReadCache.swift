import Synchronization

/// The lock-free read path of untyped reads (``Defaults/value(forKey:)`` and every getter built on it): the
/// effective values of the keys a store has read, found without the store's lock and without SipHash.
///
/// A read through the locked merged dictionary costs a lock, a SipHash of the name and a `Dictionary` probe
/// (the hash a third of it: Docs/Decisions/ReadPaths.md); through this cache, a scalar (integer,
/// real, Boolean, date) or a missing key costs the ``FastHash`` the missing-key filter computed anyway, a
/// probe of an open-addressing table and a seqlock read: loads only, as a typed key's read slot. A string,
/// data or collection is reference-counted: its reader also announces itself (two atomic additions) while it
/// copies the value out of its box.
///
/// **What it holds.** An entry per key *read* since the store opened: the key, its hash, and its effective
/// value — a scalar inline (tag and payload, as ``ScalarReadSlots`` encodes them, behind a version word), a
/// string, data or collection in an immutable box. A key not in the table is unknown, not missing: its reader
/// takes the locked path once and adds it (``fill(_:hash:value:viewCount:)``). Only the one owner of the view
/// (``EffectiveView``), under the store's lock, writes: a changed key's entry is rewritten in place
/// (``update(_:hash:to:)``), and a new view (search list, registration) rewrites every entry
/// (``refresh(from:)``). Entries are never removed.
///
/// **Bounds.** A table grows by doubling while it is at most half full, up to four times the view's keys
/// (``capacityBound(_:)``); absent keys take at most a quarter of it, so that reading ever new absent names
/// (the missing-key filter answers most of them before the cache is asked) leaves room for present ones. A
/// key that finds the table full at its bound reads through the lock: slower, never wrong.
///
/// **Reclamation.** A scalar reader holds nothing: a table is never freed while its store lives (one that
/// the cache outgrew is kept in ``outgrown`` — at most as large, all together, as the current one), and a
/// torn read of an entry is caught by its version word. A box is another matter: a reader announces itself
/// in ``readers`` before it loads the box pointer and leaves after it has copied the value. A box that a
/// writer unpublished is *retired*, and released only by a thread that, after retiring it, sees no reader at
/// all: a reader that was present could hold it; one that arrives later loads the new pointer. The check runs
/// after every write and whenever the last reader leaves, so retired boxes wait only while reads of strings
/// and collections overlap without a gap.
///
/// Keys are hashed as their UTF-8 bytes: two spellings of a name that Swift's `String ==` calls equal (`é`
/// precomposed and decomposed) hash differently and are two names here, as they are to Foundation, whose
/// `CFString` keys compare literally.
final class ValueReadCache: @unchecked Sendable {
    // @unchecked: the published table and its buckets are reached only through atomics; a bucket's key is
    // written before its hash publishes it and never changes after; buckets are written only by the owning
    // store's writers (serialised by its lock), as are `outgrown`; tables are freed only in deinit, boxes
    // only when no reader is present.

    /// A string, data or collection as readers see it: immutable once published.
    final class Box {
        let value: PropertyList
        init(_ value: PropertyList) { self.value = value }
    }

    /// An open-addressing table with linear probing. Each bucket is four words: the key's hash (0: empty; a
    /// hash of 0 is stored as 1), a ``SeqlockCell`` (its control word and the scalar payload), and the address
    /// of the value's ``Box`` (0 for scalars and missing keys), retained by the table.
    final class Table {
        let mask: Int
        /// How many buckets hold a key, and how many of those were filled with an absent key (writers only).
        var used = 0
        var absent = 0
        let words: UnsafeMutablePointer<Atomic<UInt64>>
        /// Initialised in the buckets whose hash is not 0.
        let keys: UnsafeMutablePointer<String>

        static let stride = 4

        init(capacity: Int) {
            mask = capacity - 1
            words = .allocate(capacity: capacity * Self.stride)
            keys = .allocate(capacity: capacity)
            for index in 0..<(capacity * Self.stride) { (words + index).initialize(to: Atomic(0)) }
        }

        deinit {
            for index in 0...mask where hash(index) != 0 {
                (keys + index).deinitialize(count: 1)
                if let box = box(index) { Unmanaged<Box>.fromOpaque(box).release() }
            }
            words.deinitialize(count: (mask + 1) * Self.stride)
            words.deallocate()
            keys.deallocate()
        }

        @inline(__always) func hashWord(_ index: Int) -> UnsafeMutablePointer<Atomic<UInt64>> {
            words + index &* Self.stride
        }
        @inline(__always) func hash(_ index: Int) -> UInt64 { hashWord(index).pointee.load(ordering: .acquiring) }
        @inline(__always) func cell(_ index: Int) -> SeqlockCell { SeqlockCell(hashWord(index) + 1) }
        @inline(__always) func boxWord(_ index: Int) -> UnsafeMutablePointer<Atomic<UInt64>> { hashWord(index) + 3 }
        func box(_ index: Int) -> UnsafeMutableRawPointer? {
            UnsafeMutableRawPointer(bitPattern: UInt(boxWord(index).pointee.load(ordering: .relaxed)))
        }

        /// The bucket holding `key`, or the empty bucket where it would go.
        @inline(__always)
        func bucket(of key: String, hash: UInt64) -> (index: Int, found: Bool) {
            let hash = ValueReadCache.stored(hash)
            var index = Int(truncatingIfNeeded: hash) & mask
            while true {
                let stored = self.hash(index)
                if stored == 0 { return (index, false) }
                if stored == hash && keys[index] == key { return (index, true) }
                index = (index &+ 1) & mask
            }
        }

        /// Writes a bucket's value (the store's writer, or a bucket not yet published).
        ///
        /// - Returns: the box the bucket held before, now the caller's to retire.
        func write(_ index: Int, _ value: PropertyList?) -> UnsafeMutableRawPointer? {
            let (tag, payload) = ScalarReadSlots.encode(value)
            let box: UInt64 =
                if tag == .other, let value {
                    UInt64(UInt(bitPattern: Unmanaged.passRetained(Box(value)).toOpaque()))
                } else { 0 }
            let old = cell(index).write(tag: tag.rawValue, payload: payload) {
                boxWord(index).pointee.exchange(box, ordering: .sequentiallyConsistent)
            }
            return UnsafeMutableRawPointer(bitPattern: UInt(old))
        }
    }

    /// What a read found, as the bucket holds it (``raw(_:hash:)``).
    enum Raw {
        /// A scalar key's value, or a key no domain has (tag `.missing`), as its slot holds it.
        case scalar(ScalarReadSlots.Tag, UInt64)
        /// A string, data or collection: the value in the bucket's box.
        case boxed(PropertyList)
        /// Not cached, being written, or its table outgrown under the reader: ask the view.
        case unknown
    }

    /// What a read found.
    enum Lookup {
        /// The key is in the cache: its effective value (nil when no domain has it).
        case known(PropertyList?)
        /// The key was not read yet, or is being written, or its table was outgrown under the reader: ask
        /// the view.
        case unknown
    }

    private let current: Atomic<Unmanaged<Table>>
    /// Tables the cache outgrew: a reader may still be probing one, and nothing tells when it is done.
    private var outgrown: [Table] = []
    private let readers = Atomic<Int>(0)
    private let hasRetired = Atomic<Bool>(false)
    private let retired = Lock<[Unmanaged<Box>]>([])
    /// A store's first table: four keys at half load (a store of a process that opens many suites often
    /// reads one or two keys of each; 384 bytes a store, where 16 buckets took 768).
    private static let minimumCapacity = 8

    init() {
        current = Atomic(Unmanaged.passRetained(Table(capacity: Self.minimumCapacity)))
    }

    deinit {
        // No reader can hold the store, so none is in the cache.
        current.load(ordering: .relaxed).release()
        for box in retired.withLock({ $0 }) { box.release() }
    }

    /// The hash a bucket stores for a key's ``FastHash`` (0 marks an empty bucket).
    @inline(__always)
    static func stored(_ hash: UInt64) -> UInt64 { hash == 0 ? 1 : hash }

    // MARK: Reading (any thread, no lock)

    /// The cached effective value of a key, if the key was read before; `hash` is the key's ``FastHash``
    /// (which the missing-key filter computed already).
    @inline(__always)
    func lookup(_ key: String, hash: UInt64) -> Lookup {
        switch raw(key, hash: hash) {
        case .scalar(let tag, let payload): .known(ScalarReadSlots.value(tag, payload))
        case .boxed(let value): .known(value)
        case .unknown: .unknown
        }
    }

    /// The cached value of a key as its bucket holds it: a scalar (or missing) key as the slot's tag and
    /// payload, anything else as its box's value. The scalar getters take a number this way without making
    /// a `PropertyList` and unwrapping it again (a third of an untyped read), with one probe.
    @inline(__always)
    func raw(_ key: String, hash: UInt64) -> Raw {
        current.load(ordering: .acquiring)._withUnsafeGuaranteedRef { table in
            let (index, found) = table.bucket(of: key, hash: hash)
            guard found else { return .unknown }
            guard let (raw, payload) = table.cell(index).read(), let tag = ScalarReadSlots.Tag(rawValue: raw)
            else { return .unknown }
            switch tag {
            case .missing, .integer, .real, .bool, .date: return .scalar(tag, payload)
            case .other: return boxed(table, index)
            case .unknown, .held: return .unknown
            }
        }
    }

    /// The value in a bucket's box, read as an announced reader.
    private func boxed(_ table: Table, _ index: Int) -> Raw {
        readers.wrappingAdd(1, ordering: .sequentiallyConsistent)
        let word = table.boxWord(index).pointee.load(ordering: .sequentiallyConsistent)
        let result: Raw =
            if let box = UnsafeMutableRawPointer(bitPattern: UInt(word)) {
                .boxed(Unmanaged<Box>.fromOpaque(box)._withUnsafeGuaranteedRef { $0.value })
            } else {
                // Changed to a scalar (or the table outgrown) since the version was read.
                .unknown
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
        let capacity = table.mask + 1
        let bound = Self.capacityBound(viewCount)
        if value == nil && (table.absent + 1) * 4 > capacity && capacity >= bound {
            return  // absent keys have their quarter of a table at its bound
        }
        if (table.used + 1) * 2 > capacity {
            guard capacity < bound else { return }  // full at its bound: this key reads through the lock
            table = grow(table, to: min(capacity * 2, bound))
            (index, _) = table.bucket(of: key, hash: hash)
        }
        (table.keys + index).initialize(to: key)
        _ = table.write(index, value)
        table.hashWord(index).pointee.store(Self.stored(hash), ordering: .releasing)
        table.used += 1
        if value == nil { table.absent += 1 }
    }

    /// Follows a change of a key's effective value, if the key is cached; `hash` is the key's ``FastHash``.
    func update(_ key: String, hash: UInt64, to value: PropertyList?) {
        let table = current.load(ordering: .relaxed).takeUnretainedValue()
        let (index, found) = table.bucket(of: key, hash: hash)
        guard found else { return }
        if let old = table.write(index, value) { retire(old) }
    }

    /// Rewrites every cached key from a new view (the search list or a volatile domain changed).
    func refresh(from view: MergedValues) {
        let table = current.load(ordering: .relaxed).takeUnretainedValue()
        guard table.used > 0 else { return }
        for index in 0...table.mask where table.hash(index) != 0 {
            if let old = table.write(index, view[table.keys[index]]) { retire(old) }
        }
    }

    /// Releases what was retired, if no reader is present now. Called after every change of the view, so
    /// it returns at once when nothing waits (the flag is set under the list's lock by whoever retires).
    func releaseRetired() {
        guard hasRetired.load(ordering: .relaxed) else { return }
        let batch = retired.withLock { retired -> [Unmanaged<Box>] in
            let batch = retired
            retired.removeAll()
            hasRetired.store(false, ordering: .relaxed)
            return batch
        }
        guard !batch.isEmpty else { return }
        if readers.load(ordering: .sequentiallyConsistent) == 0 {
            for box in batch { box.release() }
        } else {
            retired.withLock { retired in
                retired += batch
                hasRetired.store(true, ordering: .relaxed)
            }
        }
    }

    /// The current table's number of buckets (for tests).
    var capacity: Int { current.load(ordering: .relaxed)._withUnsafeGuaranteedRef { $0.mask + 1 } }

    /// How many boxes wait to be released (for tests).
    var retiredCount: Int { retired.withLock { $0.count } }

    /// Moves every entry into a new table of `capacity` buckets and publishes it. The outgrown table keeps its
    /// keys and scalars for a reader still probing it, but gives its boxes to the new one (its box words
    /// become 0: such a reader then reads through the lock).
    private func grow(_ table: Table, to capacity: Int) -> Table {
        let larger = Table(capacity: capacity)
        for index in 0...table.mask where table.hash(index) != 0 {
            let key = table.keys[index]
            let hash = table.hash(index)
            let (target, _) = larger.bucket(of: key, hash: hash)  // empty: each key is in a table once
            (larger.keys + target).initialize(to: key)
            larger.cell(target).copyUnpublished(from: table.cell(index))
            larger.boxWord(target).pointee.store(
                table.boxWord(index).pointee.exchange(0, ordering: .sequentiallyConsistent), ordering: .relaxed)
            larger.hashWord(target).pointee.store(hash, ordering: .relaxed)
        }
        larger.used = table.used
        larger.absent = table.absent
        let old = current.exchange(Unmanaged.passRetained(larger), ordering: .releasing)
        outgrown.append(old.takeRetainedValue())
        return larger
    }

    private func retire(_ box: UnsafeMutableRawPointer) {
        retired.withLock { retired in
            retired.append(Unmanaged<Box>.fromOpaque(box))
            hasRetired.store(true, ordering: .relaxed)
        }
    }

    /// The largest table for a view of `count` keys: room for every key and as many absent ones, at half load.
    static func capacityBound(_ count: Int) -> Int {
        let wanted = max(minimumCapacity, count.multipliedReportingOverflow(by: 4).partialValue)
        return wanted >= 1 << 40 ? 1 << 40 : 1 << (Int.bitWidth - (wanted - 1).leadingZeroBitCount)
    }
}
