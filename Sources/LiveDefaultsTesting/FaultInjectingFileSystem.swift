import Foundation
package import LiveDefaults

/// A file system that passes every call to another one (an ``InMemoryFileSystem``, usually) and, when armed,
/// fails one of them or stops the writer after one: what the fault suite runs every write path of the library
/// over (Tests/LiveDefaultsTests/FaultSuiteTests.swift).
///
/// - ``Fault/fail(errno:)``: the Nth call fails with that errno and does nothing; the calls before and after
///   it go through. An `EINTR` is what a signal does to a call: the library retries it.
/// - ``Fault/stop``: the Nth call and every one after it fail with `EIO` without reaching the file system,
///   and every descriptor opened through this one is closed there (releasing its `flock`), as when the writer's
///   process is killed just before that call. What the file system then holds is what the kill left; give it
///   to a fresh store to see what the next process finds, or take its ``InMemoryFileSystem/powerLossOutcomes(limit:)``.
///
/// Calls are counted from 1 since the last ``arm(_:atCall:)`` (or creation); ``calls`` names each one made.
package final class FaultInjectingFileSystem: DefaultsFileSystem, @unchecked Sendable {
    // @unchecked: the mutable state is read and written only with `lock` held.

    package enum Fault: Sendable, Hashable, CustomStringConvertible {
        case fail(errno: Int32)
        case stop

        package var description: String {
            switch self {
            case .fail(let code): "fail with \(Self.name(of: code))"
            case .stop: "stop"
            }
        }

        /// The errno's symbolic name, for test names and messages.
        package static func name(of code: Int32) -> String {
            switch code {
            case EIO: "EIO"
            case ENOSPC: "ENOSPC"
            case EINTR: "EINTR"
            case EACCES: "EACCES"
            case EROFS: "EROFS"
            default: "errno \(code)"
            }
        }
    }

    /// The file system the calls go to.
    package let base: any DefaultsFileSystem

    private let lock = NSLock()
    private var count = 0
    private var armed: (fault: Fault, call: Int)?
    private var stopped = false
    private var log: [String] = []
    private var open: Set<Int32> = []

    /// What runs before each call passes (outside the lock, never for a failed or stopped one): a simulated
    /// machine's turn for another writer's step between two calls of a process (``SimulatedMachine``).
    private let beforeCall: (@Sendable (_ name: String, _ subject: String) -> Void)?

    /// Whether ``calls`` keeps the calls' names (a long simulation counts them only).
    private let recordsCalls: Bool

    package init(
        wrapping base: any DefaultsFileSystem, recordsCalls: Bool = true,
        beforeCall: (@Sendable (_ name: String, _ subject: String) -> Void)? = nil
    ) {
        self.base = base
        self.recordsCalls = recordsCalls
        self.beforeCall = beforeCall
    }

    /// Stops the file system now, as ``Fault/stop`` does at its call: every descriptor opened through it is closed
    /// (its `flock` released) and every later call fails with `EIO`. A process killed between two calls.
    package func stopNow() {
        let descriptors = lock.withLock {
            stopped = true
            defer { open = [] }
            return Array(open)
        }
        for descriptor in descriptors { base.close(descriptor) }
    }

    /// Arms `fault` at the `call`th call from now (from 1), and starts counting again.
    package func arm(_ fault: Fault, atCall call: Int) {
        lock.withLock {
            count = 0
            log = []
            armed = (fault, call)
        }
    }

    /// Counts calls from now, with no fault armed.
    package func resetCount() {
        lock.withLock {
            count = 0
            log = []
            armed = nil
        }
    }

    /// The calls made since the count began, each as `name path` (or `name #descriptor`).
    package var calls: [String] { lock.withLock { log } }

    /// Whether a ``Fault/stop`` has happened: every call since failed without reaching ``base``.
    package var hasStopped: Bool { lock.withLock { stopped } }

    /// Whether the armed fault was reached.
    package var fired: Bool { lock.withLock { armed.map { count >= $0.call } ?? false } }

    /// Counts one call and says what to do with it: nil to pass it on, else the error to fail it with.
    private func admit(_ name: String, _ subject: String) -> SystemError? {
        let descriptorsToClose: [Int32]
        let failure: SystemError?
        lock.lock()
        if stopped {
            lock.unlock()
            return SystemError(errno: EIO, operation: name)
        }
        count += 1
        if recordsCalls { log.append("\(name) \(subject)") }
        guard let armed, count == armed.call else {
            lock.unlock()
            return nil
        }
        switch armed.fault {
        case .fail(let code):
            failure = SystemError(errno: code, operation: name)
            descriptorsToClose = []
        case .stop:
            stopped = true
            failure = SystemError(errno: EIO, operation: name)
            descriptorsToClose = Array(open)
            open = []
        }
        lock.unlock()
        // The process is gone: the kernel closes what it held (and so releases its locks).
        for descriptor in descriptorsToClose { base.close(descriptor) }
        return failure
    }

    private func pass<Result>(_ name: String, _ subject: String, _ call: () throws(SystemError) -> Result)
        throws(SystemError) -> Result
    {
        if let failure = admit(name, subject) { throw failure }
        beforeCall?(name, subject)
        return try call()
    }

    package func open(_ path: String, _ options: FileOpenOptions, permissions: UInt32) throws(SystemError) -> Int32 {
        let descriptor = try pass("open", path) { () throws(SystemError) in
            try base.open(path, options, permissions: permissions)
        }
        lock.withLock { _ = open.insert(descriptor) }
        return descriptor
    }

    package func close(_ descriptor: Int32) {
        // Not a fault point: `close` cannot fail in a way the library acts on. A stopped writer's descriptors were
        // closed when it stopped.
        let mine = lock.withLock { open.remove(descriptor) != nil }
        if mine { base.close(descriptor) }
    }

    package func read(_ descriptor: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64?)
        throws(SystemError) -> Int
    {
        try pass("read", "#\(descriptor)") { () throws(SystemError) in
            try base.read(descriptor, into: buffer, at: offset)
        }
    }

    package func write(_ descriptor: Int32, from buffer: UnsafeRawBufferPointer) throws(SystemError) -> Int {
        try pass("write", "#\(descriptor)") { () throws(SystemError) in try base.write(descriptor, from: buffer) }
    }

    package func status(ofDescriptor descriptor: Int32) throws(SystemError) -> FileStatus {
        try pass("fstat", "#\(descriptor)") { () throws(SystemError) in try base.status(ofDescriptor: descriptor) }
    }

    package func status(atPath path: String, followingLinks: Bool) throws(SystemError) -> FileStatus {
        try pass(followingLinks ? "stat" : "lstat", path) { () throws(SystemError) in
            try base.status(atPath: path, followingLinks: followingLinks)
        }
    }

    package func synchronize(_ descriptor: Int32, dataOnly: Bool) throws(SystemError) {
        try pass(dataOnly ? "fdatasync" : "fsync", "#\(descriptor)") { () throws(SystemError) in
            try base.synchronize(descriptor, dataOnly: dataOnly)
        }
    }

    package func rename(_ source: String, to destination: String) throws(SystemError) {
        try pass("rename", "\(source) \(destination)") { () throws(SystemError) in
            try base.rename(source, to: destination)
        }
    }

    package func unlink(_ path: String) throws(SystemError) {
        try pass("unlink", path) { () throws(SystemError) in try base.unlink(path) }
    }

    package func makeDirectory(_ path: String, permissions: UInt32) throws(SystemError) {
        try pass("mkdir", path) { () throws(SystemError) in try base.makeDirectory(path, permissions: permissions) }
    }

    package func lock(_ descriptor: Int32, waiting: Bool) throws(SystemError) {
        try pass("flock", "#\(descriptor)") { () throws(SystemError) in try base.lock(descriptor, waiting: waiting) }
    }

    package func readLink(_ path: String, into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> Int {
        try pass("readlink", path) { () throws(SystemError) in try base.readLink(path, into: buffer) }
    }

    package func scanDirectory(_ path: String, until stop: (UnsafeRawBufferPointer) -> Bool) throws(SystemError)
        -> Bool
    {
        try pass("readdir", path) { () throws(SystemError) in try base.scanDirectory(path, until: stop) }
    }

    package func changeOwner(_ descriptor: Int32, user: UInt32, group: UInt32) throws(SystemError) {
        try pass("fchown", "#\(descriptor)") { () throws(SystemError) in
            try base.changeOwner(descriptor, user: user, group: group)
        }
    }

    package func canSearch(_ path: String) -> Bool {
        admit("access", path) == nil && base.canSearch(path)
    }

    package func fileSystemType(atPath path: String) throws(SystemError) -> UInt {
        try pass("statfs", path) { () throws(SystemError) in try base.fileSystemType(atPath: path) }
    }
}
