import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Thin wrappers over the system calls the storage layer needs, each returning or throwing the errno.
enum FileSystem {
    static func stamp(atPath path: String) throws(SystemError) -> FileStamp? {
        var info = stat()
        guard stat(path, &info) == 0 else {
            if errno == ENOENT || errno == ENOTDIR { return nil }
            throw SystemError(errno: errno, operation: "stat")
        }
        return FileStamp(info)
    }

    static func stamp(descriptor: Int32) throws(SystemError) -> FileStamp {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw SystemError(errno: errno, operation: "fstat") }
        return FileStamp(info)
    }

    /// A file's bytes and the stamp of exactly the version read. A class, neither a tuple nor a struct:
    /// `Data` is laid out at run time (Foundation is built for library evolution), so an optional tuple or
    /// struct holding it is a type the runtime instantiates on first use, in a fresh process's first open;
    /// an optional reference is not.
    final class Contents {
        let data: Data
        let stamp: FileStamp

        init(data: Data, stamp: FileStamp) {
            self.data = data
            self.stamp = stamp
        }
    }

    /// Reads a whole file; nil when it does not exist. Also returns the stamp of exactly the version read.
    static func read(atPath path: String) throws(SystemError) -> Contents? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            if errno == ENOENT || errno == ENOTDIR { return nil }
            throw SystemError(errno: errno, operation: "open")
        }
        defer { close(descriptor) }
        let before = try stamp(descriptor: descriptor)
        // Read into malloc'd memory that the Data then owns: no zero-filling and no second copy (both cost
        // page faults on a large domain, in the process's first milliseconds). One byte more than the size,
        // to see the end of the file in the same loop; grown if the file grew meanwhile.
        var capacity = Int(max(before.size, 0)) + 1
        guard var buffer = malloc(capacity) else { throw SystemError(errno: ENOMEM, operation: "read") }
        var total = 0
        while true {
            if total == capacity {
                capacity = max(4096, capacity * 2)
                guard let grown = realloc(buffer, capacity) else {
                    free(buffer)
                    throw SystemError(errno: ENOMEM, operation: "read")
                }
                buffer = grown
            }
            let count = systemRead(descriptor, buffer + total, capacity - total)
            if count < 0 {
                if errno == EINTR { continue }
                let code = errno
                free(buffer)
                throw SystemError(errno: code, operation: "read")
            }
            if count == 0 { break }
            total += count
        }
        let data = Data(bytesNoCopy: buffer, count: total, deallocator: .free)
        return Contents(data: data, stamp: try stamp(descriptor: descriptor))
    }

    /// A file's size; nil when it does not exist.
    static func size(atPath path: String) throws(SystemError) -> Int? {
        try stamp(atPath: path).map { Int(clamping: $0.size) }
    }

    /// Appends `data` to a file in one `write` (created with mode 0600 when absent; `O_APPEND`, so that
    /// appends of processes holding the same lock land whole and in order). Not flushed to the disk.
    static func append(_ data: Data, toPath path: String, owner: (UserID, GroupID)? = nil) throws(SystemError) {
        // Not through a symbolic link, nor blocking on a FIFO: the logs appended to are beside files other
        // writers control.
        let descriptor = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0o600)
        guard descriptor >= 0 else { throw SystemError(errno: errno, operation: "open for appending") }
        defer { close(descriptor) }
        if let (uid, gid) = owner { _ = fchown(descriptor, uid, gid) }
        let writeError: Int32 = data.withUnsafeBytes { (buffer: UnsafeRawBufferPointer) -> Int32 in
            guard let base = buffer.baseAddress else { return 0 }
            var written = 0
            while written < buffer.count {
                let count = write(descriptor, base + written, buffer.count - written)
                if count < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                written += count
            }
            return 0
        }
        if writeError != 0 { throw SystemError(errno: writeError, operation: "append") }
    }

    /// The last `maximumBytes` of a file (all of a smaller one), cut after its first newline when the file is
    /// longer (so that it starts at a whole line); nil when it does not exist or cannot be read.
    static func readTail(atPath path: String, maximumBytes: Int) -> Data? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        guard let size = try? stamp(descriptor: descriptor).size, size >= 0, maximumBytes > 0 else { return nil }
        let length = Int(min(size, Int64(maximumBytes)))
        let offset = size - Int64(length)
        var data = Data(count: length)
        var total = 0
        let failed = data.withUnsafeMutableBytes { (buffer: UnsafeMutableRawBufferPointer) -> Bool in
            guard let base = buffer.baseAddress else { return false }
            while total < length {
                let count = pread(descriptor, base + total, length - total, off_t(offset) + off_t(total))
                if count < 0 {
                    if errno == EINTR { continue }
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

    /// Creates a directory and its missing parents with mode 0700 (existing ones are left as they are).
    static func createDirectory(_ path: String) throws(SystemError) {
        let parent = PathComponents.directory(of: path)
        if mkdir(path, 0o700) == 0 {
            // The new entry made durable in its parent, as a file's rename is (replaceAtomically).
            flushDirectory(parent)
            return
        }
        if errno == EEXIST { return }
        guard errno == ENOENT else { throw SystemError(errno: errno, operation: "mkdir") }
        guard !parent.isEmpty, parent != path else { throw SystemError(errno: ENOENT, operation: "mkdir") }
        try createDirectory(parent)
        if mkdir(path, 0o700) == 0 {
            flushDirectory(parent)
        } else if errno != EEXIST {
            throw SystemError(errno: errno, operation: "mkdir")
        }
    }

    /// Makes a directory's entries durable (`fsync` on the directory): the rename that put a flushed file
    /// under its name, an unlink, a new directory. Without it a power loss may undo a rename whose data was
    /// on the disk (ALICE, OSDI '14, found this in widely used programs; SQLite flushes the directory for it).
    /// Best effort: a file system that cannot flush a directory (EINVAL), or one that fails to, leaves the
    /// entry visible to every reader, which is what a write reports; nothing else can be done about it here.
    static func flushDirectory(_ path: String) {
        let descriptor = open(path.isEmpty ? "." : path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        _ = fsync(descriptor)
        close(descriptor)
    }

    /// Opens (creating, 0600) a lock file and takes an exclusive `flock` on it; closing the descriptor unlocks.
    static func lockExclusively(_ path: String) throws(SystemError) -> Int32 {
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw SystemError(errno: errno, operation: "open lock file") }
        while flock(descriptor, LOCK_EX) != 0 {
            if errno == EINTR { continue }
            let code = errno
            close(descriptor)
            throw SystemError(errno: code, operation: "flock")
        }
        return descriptor
    }

    /// Takes an exclusive `flock` on a lock file only if no other holder has it now (nil when one does, or when
    /// the lock file cannot be opened); closing the descriptor unlocks.
    static func lockExclusivelyIfFree(_ path: String) -> Int32? {
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return nil }
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            if errno == EINTR { continue }
            close(descriptor)
            return nil
        }
        return descriptor
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
    static func replaceAtomically(
        _ path: String, with data: Data, owner: (UserID, GroupID)? = nil, readableByOthers: Bool = false,
        flush: Bool = true
    ) throws(SystemError) -> FileStamp {
        let directory = PathComponents.directory(of: path)
        let name = PathComponents.name(of: path)
        let temporary = "\(directory)/.\(name).tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, readableByOthers ? 0o666 : 0o600)
        guard descriptor >= 0 else { throw SystemError(errno: errno, operation: "create temporary file") }
        var succeeded = false
        defer {
            if !succeeded {
                close(descriptor)
                unlink(temporary)
            }
        }
        let writeError: Int32 = data.withUnsafeBytes { (buffer: UnsafeRawBufferPointer) -> Int32 in
            var written = 0
            while written < buffer.count {
                let count = write(descriptor, buffer.baseAddress! + written, buffer.count - written)
                if count < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                written += count
            }
            return 0
        }
        if writeError != 0 { throw SystemError(errno: writeError, operation: "write") }
        if let (uid, gid) = owner { _ = fchown(descriptor, uid, gid) }
        // The data must be on the disk before the rename can be (else a crash may leave an empty file under
        // the domain's name); `fdatasync` is enough for that and skips the timestamps `fsync` also writes.
        guard !flush || fdatasync(descriptor) == 0 else { throw SystemError(errno: errno, operation: "fdatasync") }
        let stamp = try stamp(descriptor: descriptor)
        guard rename(temporary, path) == 0 else { throw SystemError(errno: errno, operation: "rename") }
        succeeded = true
        close(descriptor)
        // The rename itself made durable: what `synchronize()` promises across a power loss.
        if flush { flushDirectory(directory) }
        return stamp
    }

    /// Removes temporary files that `replaceAtomically` left beside `path` in processes that no longer run
    /// (killed between creating the temporary and renaming it). Call it with the file's lock held; files of
    /// live processes are left alone.
    ///
    /// - Returns: the names removed.
    @discardableResult
    static func removeStaleTemporaries(of path: String) -> [String] {
        let directory = PathComponents.directory(of: path)
        let prefix = ".\(PathComponents.name(of: path)).tmp-"
        var removed: [String] = []
        for name in contentsOfDirectory(directory) where name.hasPrefix(prefix) {
            guard let pid = Int32(name.dropFirst(prefix.count).prefix(while: { $0 != "-" })), pid > 0 else { continue }
            if kill(pid, 0) != 0 && errno == ESRCH, unlink("\(directory)/\(name)") == 0 { removed.append(name) }
        }
        return removed
    }

    /// Removes a file (gone already is fine); with `flush`, the removal is made durable (``flushDirectory(_:)``).
    static func remove(_ path: String, flush: Bool = false) throws(SystemError) {
        if unlink(path) != 0 {
            guard errno == ENOENT else { throw SystemError(errno: errno, operation: "unlink") }
            return
        }
        if flush { flushDirectory(PathComponents.directory(of: path)) }
    }

    static func move(_ source: String, to destination: String) throws(SystemError) {
        guard rename(source, destination) == 0 else { throw SystemError(errno: errno, operation: "rename") }
    }

    /// The names in a directory (not `.` and `..`); empty when it does not exist.
    static func contentsOfDirectory(_ path: String) -> [String] {
        var names: [String] = []
        _ = scanEntries(in: path) { name in
            names.append(String(decoding: name, as: UTF8.self))
            return false
        }
        return names
    }

    /// Calls `stop` with the bytes of each name in `directory` (not `.` and `..`) until it returns true:
    /// true when it did, false when the names ran out, nil when the directory cannot be listed.
    static func scanEntries(in directory: String, until stop: (UnsafeRawBufferPointer) -> Bool) -> Bool? {
        guard let stream = opendir(directory) else { return nil }
        defer { closedir(stream) }
        let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name) ?? 19
        let nameCapacity = MemoryLayout<dirent>.size - nameOffset
        while true {
            errno = 0
            guard let entry = readdir(stream) else { return errno == 0 ? false : nil }
            let name = UnsafeRawPointer(entry) + nameOffset
            let length = strnlen(name.assumingMemoryBound(to: CChar.self), nameCapacity)
            let bytes = UnsafeRawBufferPointer(start: name, count: length)
            let dot = UInt8(ascii: ".")
            if length <= 2 && bytes.allSatisfy({ $0 == dot }) { continue }
            if stop(bytes) { return true }
        }
    }

    /// The owner of a path, used so that a store opened for another user (as root) leaves that user's files
    /// owned by that user.
    static func owner(ofPath path: String) -> (UserID, GroupID)? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return (info.st_uid, info.st_gid)
    }

    /// Closes a descriptor this module opened.
    static func close(_ descriptor: Int32) {
        _ = systemClose(descriptor)
    }

    /// Whether `path` names a directory (following links).
    static func isDirectory(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
    }

    /// Whether anything exists at `path` (following links).
    static func exists(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0
    }

    /// Whether `path` itself (not what it points to) is a symbolic link; false when it cannot be told.
    static func isSymbolicLink(_ path: String) -> Bool {
        (try? checkedIsSymbolicLink(path)) ?? false
    }

    /// Whether `path` itself is a symbolic link; false when nothing is there. Throws when it cannot be told (an
    /// I/O error, a permission): a writer must not take that for "not a link" and replace the link with a file.
    static func checkedIsSymbolicLink(_ path: String) throws(SystemError) -> Bool {
        var info = stat()
        if lstat(path, &info) == 0 { return (info.st_mode & S_IFMT) == S_IFLNK }
        if errno == ENOENT || errno == ENOTDIR { return false }
        throw SystemError(errno: errno, operation: "lstat")
    }

    /// Where a link points, as written in it.
    static func readLink(_ path: String) throws(SystemError) -> String {
        try withLinkTarget(path) { String(decoding: $0, as: UTF8.self) }
    }

    /// Calls `body` with the bytes of the link's target, as written in it (at most `PATH_MAX` of them: a
    /// target that fills them may have been cut short).
    static func withLinkTarget<Result>(_ path: String, _ body: (UnsafeRawBufferPointer) -> Result)
        throws(SystemError) -> Result
    {
        let capacity = Int(PATH_MAX)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: capacity, alignment: 1)
        defer { buffer.deallocate() }
        let count = readlink(path, buffer.baseAddress!.assumingMemoryBound(to: CChar.self), capacity)
        guard count >= 0 else { throw SystemError(errno: errno, operation: "readlink") }
        return body(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
    }

    /// Whether this process may list and enter the directory at `path`.
    static func canSearch(_ path: String) -> Bool {
        access(path, R_OK | X_OK) == 0
    }
}
