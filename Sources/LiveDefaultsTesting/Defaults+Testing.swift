public import Foundation
public import LiveDefaults

extension Defaults {
    /// The number of live stream iterators on this store: a test that ends its loops expects it back at zero
    /// (an iterator is released when its task ends or leaves the loop).
    public var activeObserverCount: Int { liveIteratorCount }

    /// Whether ``LiveDefaults/Defaults/finishStreams()`` was called on this store: what a test of a graceful
    /// shutdown checks after its service group ended.
    public var streamsFinished: Bool { streamsAreFinished }
}

extension PropertyList {
    /// Why reading `new` as an edit of `old` through the index the library keeps of a large XML domain file
    /// (only the entries that changed are parsed) disagrees with reading it whole; nil when it agrees. What
    /// the fuzz target `FuzzIncrementalXML` holds the incremental read to.
    public static func incrementalXMLReadDisagreement(old: Data, new: Data) -> String? {
        incrementalReadDisagreement(old: old, new: new)
    }
}

extension Defaults {
    /// What is wrong with reading `data` as a domain's change log, nil when nothing is (every entry read writes
    /// back as a line that reads as the same entry). What the fuzz target `FuzzChangeLog` holds the reader to.
    public static func changeLogParsingProblem(_ data: Data) -> String? {
        changeLogProblem(data)
    }

    /// What is wrong with reading `data` as a domain's pending reverts (`.<d>.plist.reverts`), nil when nothing is
    /// (what it reads writes back as itself). What the fuzz target `FuzzChangeLog` holds that reader to.
    public static func pendingRevertsParsingProblem(_ data: Data) -> String? {
        pendingRevertsProblem(data)
    }
}

extension Defaults {
    /// What is wrong with the environment layer's reading of `data` (a schema type, a variable's text, a key's
    /// name), nil when nothing is. What the fuzz target `FuzzEnvironment` holds it to.
    public static func environmentParsingProblem(_ data: Data) -> String? {
        environmentProblem(data)
    }
}

extension Defaults {
    /// Whether this process records the versions it writes and notices in the domains' change logs: on, but
    /// for a benchmark that measures what the log costs a write (every process that writes a domain should
    /// log, or the log misses its changes).
    public static var changeLogEnabled: Bool {
        get { changeLogIsEnabled }
        set { changeLogIsEnabled = newValue }
    }
}

extension Defaults {
    /// The reasons the fleet agent (`defaults sync`) sends with the values it pushes: each key's reason as the
    /// domain's change log gives it for its value in `version` (Docs/Fleet.md, "Reasons are in the history"). The
    /// look the agent makes before each push, for the benchmark of what it costs one.
    ///
    /// - Parameters:
    ///   - values: Each key's value in `version`; nil for a key it does not have.
    ///   - version: The version the values are of (``heldVersion(inDomain:layer:)``).
    ///   - domain: The domain.
    public func fleetPushReasons(
        forValues values: [String: PropertyList?], ofVersion version: DomainVersion, inDomain domain: String
    ) -> [String: String] {
        reasons(forValues: values, ofVersion: version, inDomain: domain)
    }
}

extension Defaults {
    /// Waits until the records the library writes in the background are written: the change log's entries of
    /// versions this process read, and the readers' announcements (Docs/OnDisk.md, "Readers"). A measurement of
    /// what the library keeps (``ProcessResources``) calls it first, so as not to count a record on its way.
    public static func waitUntilRecordsAreWritten() {
        waitForBackgroundRecords()
    }
}
