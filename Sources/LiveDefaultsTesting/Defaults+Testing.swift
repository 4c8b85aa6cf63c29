public import LiveDefaults

extension Defaults {
    /// The number of live stream iterators on this store: a test that ends its loops expects it back at zero
    /// (an iterator is released when its task ends or leaves the loop).
    public var activeObserverCount: Int { liveIteratorCount }

    /// Whether ``LiveDefaults/Defaults/finishStreams()`` was called on this store: what a test of a graceful
    /// shutdown checks after its service group ended.
    public var streamsFinished: Bool { streamsAreFinished }
}
