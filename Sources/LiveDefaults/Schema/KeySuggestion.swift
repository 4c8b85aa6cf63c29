/// Which declared key a mistyped one most likely meant: the nearest by edit distance (insertions, deletions,
/// substitutions and swaps of two neighbours, each 1, letter case ignored), when near enough to be a typo.
enum KeySuggestion {
    /// Keys longer than this (in Unicode scalars) get no suggestion: the comparison costs their product.
    static let maximumLength = 128

    /// The nearest of `candidates` to `name`, or nil when none is within ``allowance(_:_:)``; ties go to the
    /// first in name order.
    static func nearest(to name: String, among candidates: some Sequence<String>) -> String? {
        let typed = Array(name.lowercased().unicodeScalars)
        guard !typed.isEmpty, typed.count <= maximumLength else { return nil }
        var best: (distance: Int, key: String)?
        for candidate in candidates where candidate != name {
            let declared = Array(candidate.lowercased().unicodeScalars)
            guard declared.count <= maximumLength else { continue }
            let allowed = allowance(typed.count, declared.count)
            // Lengths further apart than the allowance cannot be within it.
            guard abs(typed.count - declared.count) <= allowed else { continue }
            let distance = editDistance(typed, declared)
            guard distance <= allowed else { continue }
            if let current = best,
                current.distance < distance || (current.distance == distance && current.key < candidate)
            {
                continue
            }
            best = (distance, candidate)
        }
        return best?.key
    }

    /// How many edits still make a typo: one per four characters of the longer name, at least one and at most
    /// three, and fewer than the shorter name has (no key is a "typo" of a wholly different one).
    static func allowance(_ a: Int, _ b: Int) -> Int {
        min(min(max(max(a, b) / 4, 1), 3), min(a, b) - 1)
    }

    /// The optimal string alignment distance of two scalar arrays (each at most ``maximumLength`` long).
    static func editDistance(_ a: [Unicode.Scalar], _ b: [Unicode.Scalar]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        // Three rows of the table: two back (for a swap), the previous, the current.
        var beforePrevious = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                var value = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    value = min(value, beforePrevious[j - 2] + 1)
                }
                current[j] = value
            }
            (beforePrevious, previous, current) = (previous, current, beforePrevious)
        }
        return previous[b.count]
    }
}
