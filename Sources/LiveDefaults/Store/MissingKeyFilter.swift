import Synchronization

/// A Bloom filter of the key names in a store's merged view, read without the store's lock: a read of a key
/// that no domain has (checking an optional setting, the common case for flags) is answered by two bit tests,
/// without the lock and without hashing the name with SipHash.
///
/// Bits are only ever added (a removed key leaves its bits, so it costs a locked lookup, which still finds
/// nothing), so a clear bit proves a key absent at the moment it was read. Writers, serialised by the store's
/// lock, set a key's bits before the key enters the merged view. The filter is sized for the view when it is
/// rebuilt (16 bits a key, two bits per key); when the view outgrows it, a filter twice the size replaces
/// it, and the old one is kept until the store goes away (readers may still be looking at it), which
/// bounds the memory held at twice the current filter.
final class MissingKeyFilter: @unchecked Sendable {
    // @unchecked: the published table is immutable in size and only read through atomics; tables are
    // made and linked only by writers, which the owning store's lock serialises, and are freed only in
    // deinit, when no reader can hold the store.

    /// A table: `words[0]` holds the mask of bit indexes, `words[1]` the address of the table it replaced (0
    /// for the first: every table ever published is freed in deinit, by following these links — not kept in
    /// an array, whose element type the runtime would instantiate on a fresh process's first open, with a
    /// scan of every loaded conformance for `Atomic`'s requirement), `words[2...]` the bits.
    private typealias Table = UnsafeMutablePointer<Atomic<UInt64>>
    private static let header = 2

    private let current: Atomic<Table?>
    private static let minimumBits = 1 << 10
    private static let maximumBits = 1 << 22

    init() {
        current = Atomic(nil)
    }

    deinit {
        var next = current.load(ordering: .relaxed)
        while let table = next {
            next = Table(bitPattern: UInt(table[1].load(ordering: .relaxed)))
            let words = Int(table[0].load(ordering: .relaxed) / 64) + 1 + Self.header
            table.deinitialize(count: words)
            table.deallocate()
        }
    }

    /// False when the key is certainly absent from the merged view; true when it may be present.
    func mayContain(_ key: String) -> Bool {
        mayContain(hash: Self.hash(key))
    }

    /// ``mayContain(_:)`` for a key whose ``FastHash`` the caller computed.
    @inline(__always)
    func mayContain(hash: UInt64) -> Bool {
        guard let table = current.load(ordering: .acquiring) else { return true }
        let (first, second) = Self.bitIndexes(of: hash, in: table)
        return Self.test(table, first) && Self.test(table, second)
    }

    /// Adds one key. Only under the owning store's lock.
    func insert(_ key: String) {
        insert(hash: Self.hash(key))
    }

    /// ``insert(_:)`` for a key whose ``FastHash`` the caller computed.
    func insert(hash: UInt64) {
        guard let table = current.load(ordering: .acquiring) else { return }
        Self.add(hash: hash, to: table)
    }

    /// Replaces the table by a larger one holding every key when the view has outgrown it (keys added one by
    /// one, as a domain replaced by a much larger one arrives). Only under the owning store's lock.
    func grow(toHold view: MergedValues) {
        guard let table = current.load(ordering: .acquiring), Self.size(for: view.count) > Self.size(of: table) else {
            return
        }
        insert(all: view)
    }

    /// Adds every key of a new merged view, first replacing the table by a larger one when the view has
    /// outgrown it; a new table is published only once it holds them all. Only under the owning store's lock.
    func insert(all view: MergedValues) {
        let wanted = Self.size(for: view.count)
        let existing = current.load(ordering: .acquiring)
        let table: Table
        if let existing, Self.size(of: existing) >= wanted {
            table = existing
        } else {
            let words = wanted / 64
            table = .allocate(capacity: words + Self.header)
            table.initialize(to: Atomic(UInt64(wanted - 1)))
            (table + 1).initialize(to: Atomic(existing.map { UInt64(UInt(bitPattern: $0)) } ?? 0))
            for index in Self.header..<(words + Self.header) { (table + index).initialize(to: Atomic(0)) }
        }
        view.forEachKey { Self.add($0, to: table) }
        if table != existing { current.store(table, ordering: .releasing) }
    }

    /// The bits a table for a view of `count` keys has: 16 a key, a power of two, within the bounds.
    private static func size(for count: Int) -> Int {
        min(maximumBits, max(minimumBits, (count * 16).nextPowerOfTwo))
    }

    /// The bits a table has.
    private static func size(of table: Table) -> Int {
        Int(table[0].load(ordering: .relaxed)) + 1
    }

    /// The two bits that stand for a key in a table.
    private static func bitIndexes(of hash: UInt64, in table: Table) -> (UInt64, UInt64) {
        let mask = table[0].load(ordering: .relaxed)
        return (hash & mask, (hash >> 32) & mask)
    }

    private static func add(_ key: String, to table: Table) {
        add(hash: hash(key), to: table)
    }

    private static func add(hash: UInt64, to table: Table) {
        let (first, second) = bitIndexes(of: hash, in: table)
        set(table, first)
        set(table, second)
    }

    private static func test(_ table: Table, _ bit: UInt64) -> Bool {
        table[Int(bit >> 6) + header].load(ordering: .relaxed) & (1 << (bit & 63)) != 0
    }

    private static func set(_ table: Table, _ bit: UInt64) {
        let word = Int(bit >> 6) + header
        let flag: UInt64 = 1 << (bit & 63)
        if table[word].load(ordering: .relaxed) & flag == 0 { table[word].bitwiseOr(flag, ordering: .relaxed) }
    }

    /// The key's hash (see ``FastHash``: a few nanoseconds for a setting's name, where SipHash costs about
    /// fifteen).
    static func hash(_ key: String) -> UInt64 {
        FastHash.hash(key)
    }
}

extension Int {
    /// The smallest power of two at least this large (1 for values below 1).
    fileprivate var nextPowerOfTwo: Int {
        self <= 1 ? 1 : 1 << (Int.bitWidth - (self - 1).leadingZeroBitCount)
    }
}
