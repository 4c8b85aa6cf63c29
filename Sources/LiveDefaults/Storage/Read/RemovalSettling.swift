import Dispatch

/// Removal settling: the rule by which a domain file the watcher found gone is not taken as removed at once.
///
/// Tools that replace a file by unlinking it and creating a new one (`install`, `cp --remove-destination`,
/// `git checkout`) leave no file for a moment, and some then create the new file empty and fill it. Read at
/// that moment, every key would be reported removed and then back: a transient default. So a reload the watcher
/// asked for (``DomainFile/reload(verifyContents:deferringRemoval:recordingExternal:)``) that finds a held
/// version gone, or created again and still empty, schedules a look ``interval`` later on the file's clock
/// instead. The new file's own event reads it meanwhile as one change from the old version (only the keys that
/// differ). A file still gone at that look is removed (its keys reported); one still empty gets up to
/// ``looks`` looks before it is read as an empty domain. Explicit reads (`synchronize()`, a transaction) take
/// the disk as it is.
///
/// The value lives in the file's state, under its lock, beside the stamp of the version held; the file runs the
/// looks on its clock (``queue``) and follows ``next(afterLook:scheduledFor:held:current:)``.
struct RemovalSettling: Sendable {
    /// How long a file found gone may stay gone before its keys are removed: far longer than a replacement by
    /// unlink and create leaves no file, even on a loaded machine (measured in Docs/Reliability.md, "The reload
    /// contract"), and short enough for a real removal to arrive promptly.
    static let interval: Duration = .milliseconds(50)
    /// How many times a file created again but still empty is looked at, ``interval`` apart, before it is read
    /// as an empty domain.
    static let looks = 4
    /// Where the looks run (a thread only while one is due).
    static let queue = DispatchQueue(label: "LiveDefaults.removals")

    /// The stamp of the version held when the scheduled look was asked for; nil when no look is scheduled.
    private(set) var scheduledFor: FileStamp?

    /// Whether a watcher's reload that finds the file at `current` (nil: gone) while `held` is the version in
    /// memory defers: gone, or created again and still empty while the held version was not.
    static func defers(held: FileStamp, current: FileStamp?) -> Bool {
        guard let current else { return true }
        return current.size == 0 && held.size != 0
    }

    /// Asks for a look at the file while `held` is the version in memory; false when one is scheduled already
    /// (it covers this disappearance too) or when nothing is held (nothing to settle).
    mutating func schedule(holding held: FileStamp?) -> Bool {
        guard scheduledFor == nil, let held else { return false }
        scheduledFor = held
        return true
    }

    /// The scheduled look is due: no look is scheduled from now on, and the stamp it was asked for is returned.
    mutating func takeDue() -> FileStamp? {
        defer { scheduledFor = nil }
        return scheduledFor
    }

    /// What a look decides.
    enum Next: Equatable {
        /// Look again, ``interval`` later: this is the look's number.
        case look(Int)
        /// Read the file as it is (a removal, an empty domain, or the version that replaced it).
        case reload
    }

    /// What the look numbered `look` decides, having found the file at `current` (nil: gone), when it was
    /// scheduled while `scheduledFor` was held and `held` is held now.
    ///
    /// A file that came back and went again since the look was asked for (the next replacement) gets looks of
    /// its own, from the first; one still empty is looked at again until ``looks``; anything else is read.
    static func next(afterLook look: Int, scheduledFor: FileStamp?, held: FileStamp?, current: FileStamp?) -> Next {
        guard current == nil || current?.size == 0 else { return .reload }
        if held != scheduledFor { return .look(1) }
        if current != nil, look < looks { return .look(look + 1) }
        return .reload
    }
}
