/// How this process follows a file's changes: what `defaults doctor` reports, for any tool that explains a
/// store's behaviour.
public struct FileWatchStatus: Sendable, Hashable {
    /// Whether the file's changes are found by polling its directory rather than through inotify.
    public var isPolled: Bool
    /// Why the directory is polled, when it is (no inotify in this build, a network file system, the
    /// watch limit, `LIVEDEFAULTS_WATCHER=poll`).
    public var pollReason: String?
    /// The symbolic links followed to reach the file (empty for a plain path), each watched for a swap.
    public var links: [String]
}

extension Defaults {
    /// Whether this build of the library has inotify; without it (another platform, or a build with
    /// `LIVEDEFAULTS_POLLING_ONLY`) every directory is polled.
    public static var inotifyIsCompiledIn: Bool { Inotify.isCompiledIn }

    /// How the process's watcher follows the file at `path`, which a store of this process that watches with
    /// ``Configuration/Watching/automatic`` has opened (its registration takes effect on the watcher's thread;
    /// this waits for it).
    public static func watchStatus(ofPath path: String) -> FileWatchStatus {
        let status = FileWatcher.shared.status(ofPath: path)
        return FileWatchStatus(isPolled: status.isPolled, pollReason: status.reason, links: status.links)
    }
}
