import Foundation

/// A file opened once for appending and kept open for several appends: a write's intent and, once its version
/// landed, its entry in the change log (``WriteLogging``).
///
/// One `open` and one `close` for both: every close of a file opened for writing is an inotify event that each
/// process watching the directory wakes for, the writer's own watcher too, and the size comes from the
/// descriptor rather than from a `stat` of the path. Opened as ``DefaultsFileSystem/append(_:toPath:owner:)``
/// opens a log (created with mode 0600, never through a symbolic link, never blocking on a FIFO), which appends
/// through one of these.
final class AppendingFile {
    private let fileSystem: any DefaultsFileSystem
    private let descriptor: Int32
    /// The file's size when opened, grown by each append; nil until first asked for (one `fstat` then).
    private var knownSize: Int?

    /// Opens (creating it when absent) the file at `path` for appending; `owner`, when given, becomes its owner.
    /// Anything but a regular file is refused before a byte is written: a FIFO put where the file goes opens
    /// without blocking whenever any reader holds it — this process's own look at the log's end, on another
    /// thread — and a write into it after that reader closed it raises SIGPIPE, which ends the process.
    init(path: String, owner: (UserID, GroupID)?, on fileSystem: any DefaultsFileSystem) throws(SystemError) {
        self.fileSystem = fileSystem
        let opened: Int32
        do throws(SystemError) {
            opened = try fileSystem.open(
                path, [.writeOnly, .append, .create, .noFollow, .nonBlocking], permissions: 0o600)
        } catch {
            throw SystemError(errno: error.errno, operation: "open for appending")
        }
        do throws(SystemError) {
            let status = try fileSystem.status(ofDescriptor: opened)
            guard status.kind == .regular else {
                throw SystemError(errno: EINVAL, operation: "append to a file that is not a regular file")
            }
            knownSize = Int(clamping: status.stamp.size)
        } catch {
            fileSystem.close(opened)
            throw error
        }
        descriptor = opened
        if let (uid, gid) = owner { try? fileSystem.changeOwner(descriptor, user: uid, group: gid) }
    }

    deinit {
        fileSystem.close(descriptor)
    }

    /// The file's size now (0 for one this opened, or found, empty).
    func size() throws(SystemError) -> Int {
        if let knownSize { return knownSize }
        let size = Int(clamping: try fileSystem.stamp(descriptor: descriptor).size)
        knownSize = size
        return size
    }

    /// Appends `data` in one `write` (`O_APPEND`: appends of processes holding the same lock land whole and in
    /// order); not flushed to the disk.
    func append(_ data: Data) throws(SystemError) {
        var failure: SystemError?
        data.withUnsafeBytes { (buffer: UnsafeRawBufferPointer) in
            do throws(SystemError) { try fileSystem.writeAll(descriptor, buffer, operation: "append") } catch {
                failure = error
            }
        }
        if let failure {
            knownSize = nil  // part of it may have landed
            throw failure
        }
        if let size = knownSize { knownSize = size + data.count }
    }
}
