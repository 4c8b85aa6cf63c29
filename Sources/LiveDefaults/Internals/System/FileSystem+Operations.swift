import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// What the core does with files, written once over the calls (each returning or throwing the errno).
extension DefaultsFileSystem {
    func stamp(atPath path: String) throws(SystemError) -> FileStamp? {
        do throws(SystemError) {
            return try status(atPath: path, followingLinks: true).stamp
        } catch  where error.isNotFound {
            return nil
        }
    }

    func stamp(descriptor: Int32) throws(SystemError) -> FileStamp {
        try status(ofDescriptor: descriptor).stamp
    }

    /// Reads a whole file; nil when it does not exist. Also returns the stamp of exactly the version read.
    package func read(atPath path: String) throws(SystemError) -> FileContents? {
        let descriptor: Int32
        do throws(SystemError) {
            descriptor = try open(path, .readOnly, permissions: 0)
        } catch  where error.isNotFound {
            return nil
        }
        defer { close(descriptor) }
        let before = try stamp(descriptor: descriptor)
        // Read into malloc'd memory that the Data then owns: no zero-filling and no second copy (both cost
        // page faults on a large domain, in the process's first milliseconds). One byte more than the size,
        // to see the end of the file in the same loop; grown if the file grew meanwhile.
        var capacity = Int(clamping: max(before.size, 0)) &+ 1
        guard capacity > 0, var buffer = malloc(capacity) else { throw SystemError(errno: ENOMEM, operation: "read") }
        var total = 0
        while true {
            if total == capacity {
                let (doubled, overflow) = capacity.multipliedReportingOverflow(by: 2)
                capacity = overflow ? Int.max : max(4096, doubled)
                guard let grown = realloc(buffer, capacity) else {
                    free(buffer)
                    throw SystemError(errno: ENOMEM, operation: "read")
                }
                buffer = grown
            }
            let count: Int
            do throws(SystemError) {
                count = try read(
                    descriptor, into: UnsafeMutableRawBufferPointer(start: buffer + total, count: capacity - total),
                    at: nil)
            } catch  where error.errno == EINTR {
                continue
            } catch {
                free(buffer)
                throw error
            }
            if count == 0 { break }
            total += count
        }
        let data = Data(bytesNoCopy: buffer, count: total, deallocator: .free)
        return FileContents(data: data, stamp: try stamp(descriptor: descriptor))
    }

    /// A file's size; nil when it does not exist.
    func size(atPath path: String) throws(SystemError) -> Int? {
        try stamp(atPath: path).map { Int(clamping: $0.size) }
    }

    /// Writes all of `buffer` at the descriptor's position, retrying an interrupted or partial write.
    func writeAll(_ descriptor: Int32, _ buffer: UnsafeRawBufferPointer, operation: String)
        throws(SystemError)
    {
        var written = 0
        while written < buffer.count {
            do throws(SystemError) {
                let count = try write(descriptor, from: UnsafeRawBufferPointer(rebasing: buffer[written...]))
                guard count > 0 else { throw SystemError(errno: EIO, operation: operation) }
                written += count
            } catch  where error.errno == EINTR {
                continue
            } catch {
                throw SystemError(errno: error.errno, operation: operation)
            }
        }
    }

    /// Appends `data` to a file in one `write` (created with mode 0600 when absent; `O_APPEND`, so that
    /// appends of processes holding the same lock land whole and in order). Not flushed to the disk. Not
    /// through a symbolic link, nor blocking on a FIFO: the logs appended to are beside files other writers
    /// control.
    func append(_ data: Data, toPath path: String, owner: (UserID, GroupID)? = nil) throws(SystemError) {
        try AppendingFile(path: path, owner: owner, on: self).append(data)
    }

    /// A regular file of at most `maximumBytes` bytes, whole, following symbolic links (a Kubernetes secret is
    /// a link into its volume's current version); opened without blocking, so a FIFO put in its place is
    /// reported, never waited on. Throws what the system said (a loop of links, no permission).
    package func readSmallFile(atPath path: String, maximumBytes: Int) throws(SystemError) -> SmallFile {
        try readSmallFile(atPath: path, maximumBytes: maximumBytes, sizedByStatus: true)
    }

    /// ``readSmallFile(atPath:maximumBytes:)``, into a buffer of the size the file has (`sizedByStatus`) or of
    /// the bound (a file that grew under the first read: the second read is bounded whatever the file does).
    private func readSmallFile(atPath path: String, maximumBytes: Int, sizedByStatus: Bool) throws(SystemError)
        -> SmallFile
    {
        let descriptor: Int32
        do throws(SystemError) {
            descriptor = try open(path, [.readOnly, .nonBlocking], permissions: 0)
        } catch  where error.isNotFound {
            return .absent
        }
        defer { close(descriptor) }
        let status = try status(ofDescriptor: descriptor)
        guard status.kind == .regular else { return .notRegular }
        guard status.stamp.size <= Int64(maximumBytes) else { return .tooLarge(status.stamp.size) }
        // The size it has, and one byte more to see its end (or that it grew): not the bound, which every small
        // file would pay for in zeroed memory.
        let capacity = sizedByStatus ? Int(clamping: max(status.stamp.size, 0)) : maximumBytes
        var data = Data(count: capacity + 1)
        var total = 0
        var failure: SystemError?
        data.withUnsafeMutableBytes { (buffer: UnsafeMutableRawBufferPointer) in
            while total < buffer.count {
                let count: Int
                do throws(SystemError) {
                    count = try read(
                        descriptor, into: UnsafeMutableRawBufferPointer(rebasing: buffer[total..<buffer.count]), at: nil
                    )
                } catch  where error.errno == EINTR {
                    continue
                } catch {
                    failure = error
                    return
                }
                total += count
                // All the bytes its status gave, and fewer than asked for: the end, without a second call that
                // reads nothing (a file that grows since is read again at its change's event, as any file
                // rewritten in place; one short read before that size, as a FUSE file system may give, reads on).
                if count == 0 || (sizedByStatus && total == capacity) { return }
            }
        }
        if let failure { throw failure }
        guard total < data.count else {
            // Grown since the look at its size: read once more, into a buffer of the bound.
            guard sizedByStatus else { return .tooLarge(Int64(total)) }
            return try readSmallFile(atPath: path, maximumBytes: maximumBytes, sizedByStatus: false)
        }
        return .contents(data.prefix(total))
    }

    /// The last `maximumBytes` of a file (all of a smaller one), cut after its first newline when the file is
    /// longer (so that it starts at a whole line); nil when it does not exist or cannot be read.
    func readTail(atPath path: String, maximumBytes: Int) -> Data? {
        guard let descriptor = try? open(path, [.noFollow, .nonBlocking], permissions: 0) else { return nil }
        defer { close(descriptor) }
        guard let size = try? stamp(descriptor: descriptor).size, size >= 0, maximumBytes > 0 else { return nil }
        let length = Int(min(size, Int64(maximumBytes)))
        let offset = size - Int64(length)
        var data = Data(count: length)
        var total = 0
        let failed = data.withUnsafeMutableBytes { (buffer: UnsafeMutableRawBufferPointer) -> Bool in
            while total < length {
                let count: Int
                do throws(SystemError) {
                    count = try read(
                        descriptor, into: UnsafeMutableRawBufferPointer(rebasing: buffer[total..<length]),
                        at: offset + Int64(total))
                } catch  where error.errno == EINTR {
                    continue
                } catch {
                    return true
                }
                if count == 0 { break }
                total += count
            }
            return false
        }
        guard !failed else { return nil }
        data.count = total
        guard offset > 0 else { return data }
        guard let newline = data.firstIndex(of: UInt8(ascii: "\n")) else { return Data() }
        return data[(newline + 1)...]
    }

    /// Creates a directory and its missing parents with mode `permissions` (0700: a domain's directory; less
    /// the umask), existing ones left as they are.
    package func createDirectories(_ path: String, permissions: UInt32 = 0o700) throws(SystemError) {
        let parent = PathComponents.directory(of: path)
        do throws(SystemError) {
            try makeDirectory(path, permissions: permissions)
            // The new entry made durable in its parent, as a file's rename is (replaceAtomically).
            flushDirectory(parent)
            return
        } catch  where error.errno == EEXIST {
            return
        } catch  where error.errno == ENOENT {
            // A parent is missing: made first, below.
        } catch {
            throw SystemError(errno: error.errno, operation: "mkdir")
        }
        guard !parent.isEmpty, parent != path else { throw SystemError(errno: ENOENT, operation: "mkdir") }
        try createDirectories(parent, permissions: permissions)
        do throws(SystemError) {
            try makeDirectory(path, permissions: permissions)
            flushDirectory(parent)
        } catch  where error.errno == EEXIST {
        } catch {
            throw SystemError(errno: error.errno, operation: "mkdir")
        }
    }

    /// Creates one directory with mode `permissions` (less the umask) unless it exists; its parent must.
    func makeDirectoryIfMissing(_ path: String, permissions: UInt32) throws(SystemError) {
        do throws(SystemError) { try makeDirectory(path, permissions: permissions) } catch  where error.errno == EEXIST
        {
        }
    }

    /// Makes a directory's entries durable (`fsync` on the directory): the rename that put a flushed file
    /// under its name, an unlink, a new directory. Without it a power loss may undo a rename whose data was
    /// on the disk (ALICE, OSDI '14, found this in widely used programs; SQLite flushes the directory for it).
    /// Best effort: a file system that cannot flush a directory (EINVAL), or one that fails to, leaves the
    /// entry visible to every reader, which is what a write reports; nothing else can be done about it here.
    package func flushDirectory(_ path: String) {
        guard let descriptor = try? open(path.isEmpty ? "." : path, .directory, permissions: 0) else { return }
        try? synchronize(descriptor, dataOnly: false)
        close(descriptor)
    }

    /// Opens (creating, 0600) a lock file and takes an exclusive `flock` on it; closing the descriptor unlocks.
    func lockExclusively(_ path: String) throws(SystemError) -> Int32 {
        try openAndLock(path, waiting: true)
    }

    /// Takes an exclusive `flock` on a lock file only if no other holder has it now (nil when one does, or when
    /// the lock file cannot be opened); closing the descriptor unlocks.
    func lockExclusivelyIfFree(_ path: String) -> Int32? {
        try? openAndLock(path, waiting: false)
    }

    /// Opens (creating, 0600) the lock file at `path` and takes an exclusive `flock` on it, waiting for another
    /// holder or not (`EWOULDBLOCK`); an interrupted `flock` is taken again.
    private func openAndLock(_ path: String, waiting: Bool) throws(SystemError) -> Int32 {
        let descriptor: Int32
        do throws(SystemError) {
            // Opened for writing although nothing is written: on NFS and SMB `flock` is emulated by a byte-range
            // lock, and an exclusive one needs a descriptor open for writing (flock(2)). Its close is an
            // IN_CLOSE_WRITE for every watcher of the directory; a lock opened read-only would spare them that
            // wake-up and lose the lock on those file systems.
            descriptor = try open(path, [.readWrite, .create], permissions: 0o600)
        } catch {
            throw SystemError(errno: error.errno, operation: "open lock file")
        }
        while true {
            do throws(SystemError) {
                try lock(descriptor, waiting: waiting)
                return descriptor
            } catch  where error.errno == EINTR {
                continue
            } catch {
                close(descriptor)
                throw SystemError(errno: error.errno, operation: "flock")
            }
        }
    }

    /// `path` as a key that tells it from the same path on another file system (in-memory file systems of tests
    /// reuse paths): the path itself on the system's, else prefixed with this file system's identity. What the
    /// process-wide tables keyed by path use (the change log's recorder, the sweeps of temporaries).
    func key(forPath path: String) -> String {
        if self === SystemFileSystem.shared { return path }
        return "\(UInt(bitPattern: ObjectIdentifier(self).hashValue)):\(path)"
    }

    /// Writes `data` to a new temporary file beside `path`, flushes it to the disk, and renames it over
    /// `path`: readers see the old file or the new one, never a mix, even if this process is killed. The one
    /// way the library writes a file (domains and schemas).
    ///
    /// - Parameter readableByOthers: false (a domain's file): mode 0600; true (a published schema, which every
    ///   writer reads): 0666 less the process's umask, as other tools create files.
    ///   - flush: true (a domain, a schema): the data reaches the disk before the rename, and the rename before
    ///     this returns (the directory is flushed); false (a change log, a record whose last lines a crash may
    ///     lose): the rename alone, still all or nothing for readers.
    ///   - pid: The writing process, as the temporary's name says: the library passes its context's
    ///     (``StorageContext/pid``); the running process's when left out (a test's own files).
    func replaceAtomically(
        _ path: String, with data: Data, owner: (UserID, GroupID)? = nil, readableByOthers: Bool = false,
        flush: Bool = true, pid: Int32 = CurrentProcess.id
    ) throws(SystemError) -> FileStamp {
        let directory = PathComponents.directory(of: path)
        let temporary = FileTemporaries.name(for: path, pid: pid)
        let descriptor: Int32
        do throws(SystemError) {
            descriptor = try open(
                temporary, [.writeOnly, .create, .exclusive], permissions: readableByOthers ? 0o666 : 0o600)
        } catch {
            throw SystemError(errno: error.errno, operation: "create temporary file")
        }
        var open = true
        var succeeded = false
        defer {
            if open { close(descriptor) }
            if !succeeded { try? unlink(temporary) }
        }
        var failure: SystemError?
        data.withUnsafeBytes { (buffer: UnsafeRawBufferPointer) in
            do throws(SystemError) { try writeAll(descriptor, buffer, operation: "write") } catch { failure = error }
        }
        if let failure { throw failure }
        if let (uid, gid) = owner { try? changeOwner(descriptor, user: uid, group: gid) }
        // The data must be on the disk before the rename can be (else a crash may leave an empty file under
        // the domain's name); `fdatasync` is enough for that and skips the timestamps `fsync` also writes.
        if flush {
            do throws(SystemError) { try synchronize(descriptor, dataOnly: true) } catch {
                throw SystemError(errno: error.errno, operation: "fdatasync")
            }
        }
        let stamp = try stamp(descriptor: descriptor)
        // Closed before the rename: closed after it, the close is reported by inotify under the domain's name as
        // a write in place (IN_CLOSE_WRITE), and the writer's own watcher, which holds the version's stamp
        // already, read the file back to compare its bytes.
        open = false
        close(descriptor)
        do throws(SystemError) { try rename(temporary, to: path) } catch {
            throw SystemError(errno: error.errno, operation: "rename")
        }
        succeeded = true
        // The rename itself made durable: what `synchronize()` promises across a power loss.
        if flush { flushDirectory(directory) }
        return stamp
    }

    /// Removes the temporary files that `replaceAtomically` left in `directory` in processes that no longer run
    /// (killed between creating the temporary and renaming it); those of live processes are left alone. No
    /// lock is needed: nobody renames a dead process's temporary. One pass over the directory, turning into a
    /// string only the names that look like temporaries (a directory of thousands of domains is listed without
    /// an allocation per name).
    ///
    /// - Returns: the names removed.
    @discardableResult
    func removeStaleTemporaries(inDirectory directory: String, processes: any ProcessTable) -> [String] {
        var candidates: [String] = []
        _ = scanEntries(in: directory) { name in
            if FileTemporaries.mayBeTemporary(name) { candidates.append(String(decoding: name, as: UTF8.self)) }
            return false
        }
        var removed: [String] = []
        for name in candidates {
            guard let pid = FileTemporaries.writer(ofTemporary: name), !processes.isRunning(pid) else { continue }
            if (try? unlink("\(directory)/\(name)")) != nil { removed.append(name) }
        }
        return removed
    }

    /// Removes a file (gone already is fine); with `flush`, the removal is made durable (``flushDirectory(_:)``).
    func remove(_ path: String, flush: Bool = false) throws(SystemError) {
        do throws(SystemError) {
            try unlink(path)
        } catch  where error.errno == ENOENT {
            return
        } catch {
            throw SystemError(errno: error.errno, operation: "unlink")
        }
        if flush { flushDirectory(PathComponents.directory(of: path)) }
    }

    func move(_ source: String, to destination: String) throws(SystemError) {
        do throws(SystemError) { try rename(source, to: destination) } catch {
            throw SystemError(errno: error.errno, operation: "rename")
        }
    }

    /// The names in a directory (not `.` and `..`); empty when it does not exist.
    package func namesInDirectory(_ path: String) -> [String] {
        var names: [String] = []
        _ = scanEntries(in: path) { name in
            names.append(String(decoding: name, as: UTF8.self))
            return false
        }
        return names
    }

    /// Calls `stop` with the bytes of each name in `directory` (not `.` and `..`) until it returns true:
    /// true when it did, false when the names ran out, nil when the directory cannot be listed.
    func scanEntries(in directory: String, until stop: (UnsafeRawBufferPointer) -> Bool) -> Bool? {
        try? scanDirectory(directory, until: stop)
    }

    /// The owner of a path, used so that a store opened for another user (as root) leaves that user's files
    /// owned by that user.
    func owner(ofPath path: String) -> (UserID, GroupID)? {
        guard let status = try? status(atPath: path, followingLinks: true) else { return nil }
        return (status.user, status.group)
    }

    /// Whether `path` names a directory (following links).
    func isDirectory(_ path: String) -> Bool {
        (try? status(atPath: path, followingLinks: true).kind) == .directory
    }

    /// Whether anything exists at `path` (following links).
    func exists(_ path: String) -> Bool {
        (try? status(atPath: path, followingLinks: true)) != nil
    }

    /// Whether `path` itself (not what it points to) is a symbolic link; false when it cannot be told.
    func isSymbolicLink(_ path: String) -> Bool {
        (try? checkedIsSymbolicLink(path)) ?? false
    }

    /// Whether `path` itself is a symbolic link; false when nothing is there. Throws when it cannot be told (an
    /// I/O error, a permission): a writer must not take that for "not a link" and replace the link with a file.
    func checkedIsSymbolicLink(_ path: String) throws(SystemError) -> Bool {
        do throws(SystemError) {
            return try status(atPath: path, followingLinks: false).kind == .symbolicLink
        } catch  where error.isNotFound {
            return false
        } catch {
            throw SystemError(errno: error.errno, operation: "lstat")
        }
    }

    /// Where a link points, as written in it.
    func readLink(_ path: String) throws(SystemError) -> String {
        try withLinkTarget(path) { String(decoding: $0, as: UTF8.self) }
    }

    /// Calls `body` with the bytes of the link's target, as written in it (at most `PATH_MAX` of them: a
    /// target that fills them may have been cut short).
    func withLinkTarget<Result>(_ path: String, _ body: (UnsafeRawBufferPointer) -> Result)
        throws(SystemError) -> Result
    {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Int(PATH_MAX), alignment: 1)
        defer { buffer.deallocate() }
        let count: Int
        do throws(SystemError) { count = try readLink(path, into: buffer) } catch {
            throw SystemError(errno: error.errno, operation: "readlink")
        }
        return body(UnsafeRawBufferPointer(rebasing: buffer[..<min(max(count, 0), buffer.count)]))
    }
}
