/// The machine's choices, from its seed (and a test's scenario's, apart from them): SplitMix64, small, fast and the same on every platform and Swift
/// version (the standard library's generator is neither seedable nor promised stable).
package struct SeededRandom: RandomNumberGenerator, Sendable {
    private var state: UInt64

    package init(seed: UInt64) {
        state = seed
    }

    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number below `bound` (at least 1).
    package mutating func below(_ bound: Int) -> Int {
        Int(next() % UInt64(max(1, bound)))
    }

    /// True once in `odds` times on average.
    package mutating func oneIn(_ odds: Int) -> Bool {
        below(odds) == 0
    }
}
