@testable import LiveDefaults

// The tests' temporary directories are on the real file system: these read and make what the library keeps
// there as the real process (``StorageContext/system``) does, without naming it at every call.

extension ChangeLog {
    static func read(at path: String, maximumBytes: Int = maximumReadSize) -> ChangeLog {
        read(at: path, maximumBytes: maximumBytes, on: StorageContext.system.fileSystem)
    }

    static func tail(at path: String) -> Tail {
        tail(at: path, on: StorageContext.system.fileSystem)
    }

    @discardableResult
    static func append(
        _ entry: Entry, contents: [String: PropertyList], previous: [String: PropertyList], previousVersion: UInt64,
        at path: String
    ) -> SystemError? {
        append(
            entry, contents: contents, previous: previous, previousVersion: previousVersion, at: path,
            on: StorageContext.system.fileSystem, pid: StorageContext.system.pid)
    }
}

extension DomainFile {
    /// A file of its own for `path` in the real process's context (not the one its stores share: another
    /// reader or writer of the same path, as another process's would be).
    convenience init(path: String) {
        self.init(path: path, context: .system)
    }
}

extension DomainFileRegistry {
    /// The registry's file for `path` on the real file system, as a store of the real process gets it.
    func file(
        atPath path: String, owner: (UserID, GroupID)? = nil, clock: any DefaultsClock = SystemDefaultsClock.shared
    ) -> DomainFile {
        file(atPath: path, owner: owner, clock: clock, fileSystem: StorageContext.system.fileSystem, context: .system)
    }
}

extension FileWatcher {
    /// A watcher of the real file system of its own, for a test's stores that should not share the process's.
    ///
    /// - Parameters:
    ///   - polling: Whether to poll every directory instead of using inotify.
    ///   - pollInterval: How often polled directories are checked (at least a millisecond; any longer
    ///     interval, however long, is taken as it is).
    ///   - clock: The time the polling follows (a `ManualDefaultsClock` lets a test say when polls happen).
    convenience init(
        polling: Bool = false, pollInterval: Duration = .milliseconds(100),
        clock: any DefaultsClock = SystemDefaultsClock.shared
    ) {
        self.init(
            forcePolling: polling, pollInterval: pollInterval, clock: clock, fileSystem: SystemFileSystem.shared,
            remoteFileSystem: RemoteFileSystem.detector(setting: nil, on: SystemFileSystem.shared))
    }
}
