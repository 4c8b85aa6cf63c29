/// Where a watcher's events come from: the kernel's inotify in a real process; a simulated machine's file system
/// for its processes (LiveDefaultsTesting's `SimulatedMachine`). The calls are inotify's, on an instance's
/// descriptor.
package protocol FileEventSource: Sendable {
    /// A new instance, or why there is none.
    func open() -> Result<Int32, SystemError>
    /// Ends an instance (its watches go with it).
    func close(_ instance: Int32)
    /// Watches the directory at `path` for every change a watcher follows; adding a watch for a directory already
    /// watched gives its watch again.
    func addWatch(_ instance: Int32, directory path: String) -> Result<Int32, SystemError>
    func removeWatch(_ instance: Int32, _ watch: Int32)
    /// Hands every event queued on the instance to `body`, in order, until none is left.
    func readEvents(_ instance: Int32, _ body: (Inotify.Event) -> Void)
}

/// Where a watcher's work runs, one job at a time in the order given, and where it waits for its events: its
/// own thread in a real process (``WatcherThread``); a simulated machine's scheduler for its processes.
package protocol WatcherRunLoop: AnyObject, Sendable {
    /// The instance read for events (-1: none, or not opened yet).
    var descriptor: Int32 { get }
    /// What runs, in the loop, when the instance has events to read.
    func setReadHandler(_ handler: @escaping @Sendable () -> Void)
    /// Runs `job` in the loop after the jobs given before it.
    func enqueue(_ job: @escaping @Sendable () -> Void)
    /// Returns when every job given before the call has run.
    func sync()
    /// Stops or resumes reading events.
    func pauseReading(_ paused: Bool)
    /// Ends the loop after the job under way, dropping jobs not started, and closes the instance.
    func stop()
}

/// The two together: what a context's watchers are made on (``ProcessContext``).
package struct WatcherPlatform: Sendable {
    /// Where events come from.
    package var events: any FileEventSource
    /// Makes a watcher's loop; `opening` (nil: a watcher that only polls) opens the instance the loop reads, in
    /// the loop, before its first job.
    package var makeRunLoop: @Sendable (_ opening: (@Sendable () -> Int32)?) -> any WatcherRunLoop

    package init(
        events: any FileEventSource,
        makeRunLoop: @escaping @Sendable (_ opening: (@Sendable () -> Int32)?) -> any WatcherRunLoop
    ) {
        self.events = events
        self.makeRunLoop = makeRunLoop
    }

    /// The real process's: inotify, read by a thread of the watcher's own.
    static let system = WatcherPlatform(events: SystemFileEvents()) { opening in
        opening.map { WatcherThread(opening: $0) } ?? WatcherThread(descriptor: -1)
    }
}

/// The kernel's inotify as a ``FileEventSource``.
struct SystemFileEvents: FileEventSource {
    func open() -> Result<Int32, SystemError> { Inotify.open() }
    func close(_ instance: Int32) { Inotify.close(instance) }
    func addWatch(_ instance: Int32, directory path: String) -> Result<Int32, SystemError> {
        Inotify.addWatch(instance, directory: path)
    }
    func removeWatch(_ instance: Int32, _ watch: Int32) { Inotify.removeWatch(instance, watch) }
    func readEvents(_ instance: Int32, _ body: (Inotify.Event) -> Void) { Inotify.readEvents(instance, body) }
}
