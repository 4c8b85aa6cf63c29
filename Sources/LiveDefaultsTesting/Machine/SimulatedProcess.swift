public import Foundation
public import LiveDefaults

/// A process of a ``SimulatedMachine``: its stores are the real `Defaults` running the real code, on a context of
/// their own (the machine's file system through this process's descriptors, the machine's time, its watcher fed by
/// the machine's file-system events, its background work run by the machine's scheduler).
///
/// Made by ``SimulatedMachine/process(_:)``; ends with ``crash()`` (or the machine's ``SimulatedMachine/powerLoss()``).
public final class SimulatedProcess: Sendable {
    /// The name it was made with (what the trace calls it).
    public let name: String
    /// Its process id on the machine: what its readers' announcements and temporaries are named by.
    public let pid: Int32
    /// The user directory its stores' files live in (`/home/<user>/.config`): the machine's.
    public var userDirectory: String { machine.userDirectory }

    let index: Int
    let context: ProcessContext
    let fileSystem: FaultInjectingFileSystem
    private let machine: SimulatedMachine

    init(
        name: String, pid: Int32, index: Int, context: ProcessContext, fileSystem: FaultInjectingFileSystem,
        machine: SimulatedMachine
    ) {
        self.name = name
        self.pid = pid
        self.index = index
        self.context = context
        self.fileSystem = fileSystem
        self.machine = machine
    }

    /// The process's store for a suite, as `Defaults(suiteName:)` gives it: nil for `NSGlobalDomain` and for a name
    /// that is not a domain name; `nil` suite: the process's own domain (its name).
    public func defaults(suiteName: String?) -> Defaults? {
        if suiteName == "NSGlobalDomain" { return nil }
        return try? defaults(configuration: configuration(applicationDomain: suiteName ?? name))
    }

    /// The process's store for `configuration` (see ``configuration(applicationDomain:)``): on this process's
    /// context, whatever context the configuration named.
    public func defaults(configuration: Defaults.Configuration) throws(DefaultsError) -> Defaults {
        var configuration = configuration
        configuration.context = context
        return try Defaults(configuration: configuration)
    }

    /// A configuration for a store of this process: the machine's user's files, no arguments, no languages, this
    /// process's time.
    public func configuration(applicationDomain: String) -> Defaults.Configuration {
        var configuration = Defaults.Configuration(
            locations: DefaultsLocations(
                userDirectory: machine.userDirectory,
                managedDirectory: "/etc/livedefaults/managed", userName: "user",
                schemaDirectories: ["/usr/share/livedefaults/schemas"]),
            applicationDomain: applicationDomain, arguments: [], languages: [])
        configuration.context = context
        return configuration
    }

    /// Runs `body` with the `call`th file-system call this process makes from now (from 1) failing with `errno` and
    /// doing nothing, as the kernel's error there would (a full disk: `ENOSPC`; a failing one: `EIO`); the calls
    /// before and after it go through, and the fault is gone when `body` returns (reached or not). Only the calls
    /// `body` makes on this process's thread can meet it: the machine's steps run in ``SimulatedMachine/settle()``.
    public func failingFileSystemCall<Result>(
        _ call: Int, errno: Int32 = EIO, _ body: () throws -> Result
    ) rethrows -> Result {
        fileSystem.arm(.fail(errno: errno), atCall: call)
        defer { fileSystem.resetCount() }
        return try body()
    }

    /// Runs `body` and kills the process at its `call`th file-system call from now (from 1): that call and every one
    /// after it fail without reaching the disk, as when a process is killed just before making it; once `body`
    /// returns, the process has crashed (``crash()``), whether the call was reached or not. What the disk then holds
    /// is what such a kill leaves: a write stopped between its rename and its log's entry, a lock file left behind.
    public func crash<Result>(atFileSystemCall call: Int, during body: () throws -> Result) rethrows -> Result {
        fileSystem.arm(.stop, atCall: call)
        defer { crash() }
        return try body()
    }

    /// The process's watcher (every store of it that watches uses it), for a test of the library's own.
    package var watcher: FileWatcher { context.watcher }

    /// Whether it runs (it has not crashed, nor lost its machine's power).
    public var isRunning: Bool { machine.isRunning(self) }

    /// Stops the process where it stands, between two steps of the machine: what it had not written is gone
    /// (edits its writer held, records not made, events not read), its descriptors are closed (its file locks
    /// released) and its id no longer runs. Its `Defaults` objects stay in memory and answer from what they held;
    /// nothing they do reaches the disk again.
    public func crash() {
        machine.crash(self)
    }
}
