import Foundation

/// One version of an XML property list whose top-level value is a dictionary, kept with where each entry lies
/// in its bytes, so that the next version is read by parsing only the entries that changed.
///
/// Why: a write to one key of a 10,000-key domain rewrites the whole file (about 450 KB), and an observer in
/// another process that parsed all of it again and compared every key spent more than a millisecond on a
/// change of one key (Docs/Benchmarks.md, "another process writes → observer here"). Writers that sort their
/// keys — this library, Foundation, `plistlib`, a person with an editor — change a few bytes in one place.
///
/// Why the answer is exact, not a guess: the bytes before the first difference are the same in both
/// versions, so a parse of the new version reaches the start of the entry holding that difference in the
/// same state as the parse of the old one did; the bytes after the last difference are the same too, so once
/// the changed entries are read and the parse stands exactly where the first unchanged entry after them
/// starts, the rest reads as it did before. Every other case answers nil and the caller parses the whole
/// file: a difference in the header or the closing tags, changed bytes that do not end on an entry boundary
/// (an opened comment, a cut entry, malformed text), a key written twice, or a change spanning more than half
/// of the entries (a writer that does not sort its keys), where reading everything costs no more.
///
/// A class, not a struct: a struct holding `Data` made `XMLDictionaryIndex?` a type whose copies and
/// destruction went through runtime-made metadata, which a fresh process built on its first open of even a
/// small file (one that keeps no index). An optional reference is a pointer.
final class XMLDictionaryIndex: Sendable {
    /// The bytes of the version this index describes.
    let bytes: Data
    let layout: XMLPropertyListReader.Layout

    init(bytes: Data, layout: XMLPropertyListReader.Layout) {
        self.bytes = bytes
        self.layout = layout
    }

    /// Files smaller than this are parsed whole on every change (it takes microseconds) and keep no index:
    /// keeping the bytes costs memory in proportion to the file, which only pays off for large domains.
    static let minimumSize = 32 * 1024

    /// The new version, as what changed in the old one's top-level dictionary.
    struct Reread {
        /// The keys of the old version's entries that the changed bytes held (some may be written again).
        var removedKeys: [String]
        /// The entries the changed bytes hold now.
        var entries: [(key: String, value: PropertyList)]
        /// The index of the new version.
        var index: XMLDictionaryIndex
    }

    /// Reads a whole XML document, and indexes it when its top-level value is a dictionary with no key written
    /// twice and the document is at least ``minimumSize`` bytes (or `always`).
    static func read(_ data: Data, always: Bool = false) throws(PropertyListError) -> (
        value: PropertyList, index: XMLDictionaryIndex?
    ) {
        let wanted = always || data.count >= minimumSize
        let (value, layout) = try XMLPropertyListReader.readIndexed(data, collectingLayout: wanted)
        guard let layout, case .dictionary(let entries) = value, entries.count == layout.entryStarts.count else {
            return (value, nil)
        }
        return (value, XMLDictionaryIndex(bytes: data, layout: layout))
    }

    /// What changed from this version to `new`, reading only the entries around the changed bytes; nil when
    /// that cannot be done exactly (see the type's description): parse `new` whole instead.
    ///
    /// - Parameter isKey: Whether the old version has a given key (its contents are the caller's), to find a key
    ///   that the new entries would write twice.
    func reread(_ new: Data, isKey: (String) -> Bool) -> Reread? {
        let oldCount = bytes.count
        let newCount = new.count
        // The shared prefix stops at the closing tag at the latest: an entry inserted at the end may begin
        // with the same "<" as the "</dict>" it is inserted before, and a prefix that ran into the closing tag
        // would leave the changed bytes outside the body.
        let (prefix, suffix) = Self.commonEnds(bytes, new, prefixLimit: layout.bodyEnd)
        if oldCount == newCount && prefix + suffix == oldCount {
            return Reread(removedKeys: [], entries: [], index: XMLDictionaryIndex(bytes: new, layout: layout))
        }
        // The differing bytes: old[prefix ..< oldEnd] became new[prefix ..< newCount - suffix].
        let oldEnd = oldCount - suffix
        let starts = layout.entryStarts
        guard prefix >= layout.bodyStart, oldEnd <= layout.bodyEnd else { return nil }
        // From the start of the entry holding the first difference (or the body's start) …
        let first = Self.lastIndex(in: starts, atOrBelow: prefix)
        let regionStart = first.map { starts[$0] } ?? layout.bodyStart
        let firstRemoved = first ?? 0
        // … to the start of the first entry wholly after the last difference (or the body's end).
        let afterRemoved = Self.firstIndex(in: starts, atOrAbove: oldEnd)
        let oldRegionEnd = afterRemoved < starts.count ? starts[afterRemoved] : layout.bodyEnd
        let shift = newCount - oldCount
        let newRegionEnd = oldRegionEnd + shift
        guard regionStart <= oldRegionEnd, regionStart <= newRegionEnd, newRegionEnd <= newCount,
            (afterRemoved - firstRemoved) * 2 <= max(starts.count, 1)
        else { return nil }
        guard let removed = XMLPropertyListReader.entries(of: bytes, in: regionStart..<oldRegionEnd),
            let added = XMLPropertyListReader.entries(of: new, in: regionStart..<newRegionEnd)
        else { return nil }
        // A key the new entries write twice, or that an unchanged entry also holds, keeps the last value written:
        // only a whole parse knows which that is.
        let removedKeys = removed.map(\.key)
        let removedSet = Set(removedKeys)
        var addedSet = Set<String>(minimumCapacity: added.count)
        for entry in added {
            guard addedSet.insert(entry.key).inserted, removedSet.contains(entry.key) || !isKey(entry.key) else {
                return nil
            }
        }
        var newStarts = Array(starts[..<firstRemoved])
        newStarts.reserveCapacity(starts.count - removed.count + added.count)
        newStarts.append(contentsOf: added.map(\.start))
        newStarts.append(contentsOf: starts[afterRemoved...].lazy.map { $0 + shift })
        let newLayout = XMLPropertyListReader.Layout(
            bodyStart: layout.bodyStart, bodyEnd: layout.bodyEnd + shift, entryStarts: newStarts)
        return Reread(
            removedKeys: removedKeys, entries: added.map { ($0.key, $0.value) },
            index: XMLDictionaryIndex(bytes: new, layout: newLayout))
    }

    // MARK: Helpers

    /// How many leading (at most `prefixLimit`) and trailing bytes two buffers share; the two never overlap:
    /// together at most the shorter one's length.
    static func commonEnds(_ old: Data, _ new: Data, prefixLimit: Int) -> (prefix: Int, suffix: Int) {
        old.withUnsafeBytes { a in
            new.withUnsafeBytes { b in
                let limit = max(0, min(a.count, b.count, prefixLimit))
                guard limit > 0, let pa = a.baseAddress, let pb = b.baseAddress else { return (0, 0) }
                // Blocks compared with memcmp (vectorised), then the differing block byte by byte.
                let block = 4096
                var prefix = 0
                while prefix < limit {
                    let length = min(block, limit - prefix)
                    if memcmp(pa + prefix, pb + prefix, length) != 0 {
                        while a[prefix] == b[prefix] { prefix += 1 }
                        break
                    }
                    prefix += length
                }
                let room = min(a.count, b.count) - prefix
                var suffix = 0
                while suffix < room {
                    let length = min(block, room - suffix)
                    if memcmp(pa + (a.count - suffix - length), pb + (b.count - suffix - length), length) != 0 {
                        while a[a.count - suffix - 1] == b[b.count - suffix - 1] { suffix += 1 }
                        break
                    }
                    suffix += length
                }
                return (prefix, suffix)
            }
        }
    }

    /// The index of the last element ≤ `value` in an ascending array, or nil.
    static func lastIndex(in sorted: [Int], atOrBelow value: Int) -> Int? {
        let above = partitionPoint(of: sorted) { $0 > value }
        return above > 0 ? above - 1 : nil
    }

    /// The index of the first element ≥ `value` in an ascending array (its count when there is none).
    static func firstIndex(in sorted: [Int], atOrAbove value: Int) -> Int {
        partitionPoint(of: sorted) { $0 >= value }
    }

    /// The index of the first element for which `belongsAfter` holds, in an array where it holds for a
    /// suffix (its count when it holds for none): a binary search.
    private static func partitionPoint(of sorted: [Int], where belongsAfter: (Int) -> Bool) -> Int {
        var low = 0
        var high = sorted.count
        while low < high {
            let middle = low + (high - low) / 2
            if belongsAfter(sorted[middle]) { high = middle } else { low = middle + 1 }
        }
        return low
    }
}

// MARK: Checking the index against a whole read

extension XMLDictionaryIndex {
    /// Why reading `new` through the index of `old` disagrees with reading it whole, or nil when it agrees (a
    /// fallback to the whole read agrees by definition). Both are indexed whatever their size. What the tests'
    /// generated edits and the fuzz target `FuzzIncrementalXML` check.
    static func disagreement(old: Data, new: Data) -> String? {
        guard let (oldValue, index) = try? read(old, always: true), let index,
            case .dictionary(let oldContents) = oldValue
        else { return nil }
        guard let reread = index.reread(new, isKey: { oldContents[$0] != nil }) else { return nil }
        guard let (newValue, wholeIndex) = try? read(new, always: true), case .dictionary(let expected) = newValue
        else {
            return "the index read entries that a whole read refuses"
        }
        var contents = oldContents
        for key in reread.removedKeys { contents.removeValue(forKey: key) }
        for (key, value) in reread.entries { contents[key] = value }
        guard contents.count == expected.count,
            contents.allSatisfy({ key, value in expected[key].map { Self.identical($0, value) } ?? false })
        else { return "the contents differ from a whole read's" }
        guard wholeIndex?.layout == reread.index.layout else { return "the new index differs from a whole read's" }
        return nil
    }

    /// Equal, with reals compared bit for bit (NaN is not equal to itself under `==`).
    private static func identical(_ a: PropertyList, _ b: PropertyList) -> Bool {
        switch (a, b) {
        case (.real(let x), .real(let y)): return x.bitPattern == y.bitPattern
        case (.array(let x), .array(let y)): return x.count == y.count && zip(x, y).allSatisfy(identical)
        case (.dictionary(let x), .dictionary(let y)):
            return x.count == y.count && x.allSatisfy { key, value in y[key].map { identical($0, value) } ?? false }
        default: return a == b
        }
    }
}
