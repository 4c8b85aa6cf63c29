extension Defaults {
    /// Whether this build of the library has inotify; without it (another platform, or a build with
    /// `LIVEDEFAULTS_POLLING_ONLY`) every directory is polled.
    public static var inotifyIsCompiledIn: Bool { Inotify.isCompiledIn }

    /// How the process's watcher follows the file at `path`, which a store of this process that watches with
    /// ``Configuration/Watching/automatic`` has opened (its registration takes effect on the watcher's thread;
    /// this waits for it).
    public static func watchStatus(ofPath path: String) -> FileWatchStatus {
        FileWatcher.shared.status(ofPath: path)
    }
}
