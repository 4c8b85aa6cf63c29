extension Defaults {
    /// Whether this build of the library has inotify; without it (another platform, or a build with
    /// `LIVEDEFAULTS_POLLING_ONLY`) every directory is polled.
    public static var inotifyIsCompiledIn: Bool { Inotify.isCompiledIn }

    /// How the process's watcher follows the file at `path`, which a store of this process that watches with
    /// ``Configuration/Watching/automatic`` has opened (its registration takes effect on the watcher's thread;
    /// this waits for it).
    public static func watchStatus(ofPath path: String) -> FileWatchStatus {
        ProcessContext.system.watcher.status(ofPath: path)
    }
}

extension Defaults {
    /// Waits until the library's records made in the background so far are written: the change log's entries of
    /// versions this process read, and the readers' announcements. For a measurement of what the library keeps
    /// (the test helper's `hygiene`), which must not count a record still on its way.
    package static func waitForBackgroundRecords() {
        ProcessContext.system.waitForRecords()
    }
}
