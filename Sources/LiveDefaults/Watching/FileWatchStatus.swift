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
