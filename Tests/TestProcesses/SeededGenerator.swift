package import LiveDefaultsTesting

/// A small deterministic random number generator, so that a randomized test can be repeated from the seed it
/// prints: the simulated machine's (SplitMix64), under the name the tests know it by.
package typealias SeededGenerator = SeededRandom
