import CLiveDefaultsSystem
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The system's file system: each call of ``DefaultsFileSystem`` is the system call of its name, with its errno.
/// What every store uses unless its configuration gives another.
package final class SystemFileSystem: DefaultsFileSystem {
    package static let shared = SystemFileSystem()

    private init() {}

    package func open(_ path: String, _ options: FileOpenOptions, permissions: UInt32) throws(SystemError) -> Int32 {
        var flags: Int32 = O_CLOEXEC
        if options.contains(.readWrite) {
            flags |= O_RDWR
        } else if options.contains(.writeOnly) {
            flags |= O_WRONLY
        } else {
            flags |= O_RDONLY
        }
        if options.contains(.create) { flags |= O_CREAT }
        if options.contains(.exclusive) { flags |= O_EXCL }
        if options.contains(.append) { flags |= O_APPEND }
        if options.contains(.noFollow) { flags |= O_NOFOLLOW }
        if options.contains(.nonBlocking) { flags |= O_NONBLOCK }
        if options.contains(.directory) { flags |= O_DIRECTORY }
        let descriptor = systemOpen(path, flags, permissions)
        guard descriptor >= 0 else { throw SystemError(errno: errno, operation: "open") }
        return descriptor
    }

    package func close(_ descriptor: Int32) {
        _ = systemClose(descriptor)
    }

    package func read(_ descriptor: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64?)
        throws(SystemError) -> Int
    {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return 0 }
        let count =
            if let offset { pread(descriptor, base, buffer.count, off_t(offset)) } else {
                systemRead(descriptor, base, buffer.count)
            }
        guard count >= 0 else { throw SystemError(errno: errno, operation: "read") }
        return count
    }

    package func write(_ descriptor: Int32, from buffer: UnsafeRawBufferPointer) throws(SystemError) -> Int {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return 0 }
        let count = systemWrite(descriptor, base, buffer.count)
        guard count >= 0 else { throw SystemError(errno: errno, operation: "write") }
        return count
    }

    package func status(ofDescriptor descriptor: Int32) throws(SystemError) -> FileStatus {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw SystemError(errno: errno, operation: "fstat") }
        return FileStatus(info)
    }

    package func status(atPath path: String, followingLinks: Bool) throws(SystemError) -> FileStatus {
        var info = stat()
        let result = followingLinks ? stat(path, &info) : lstat(path, &info)
        guard result == 0 else { throw SystemError(errno: errno, operation: followingLinks ? "stat" : "lstat") }
        return FileStatus(info)
    }

    package func synchronize(_ descriptor: Int32, dataOnly: Bool) throws(SystemError) {
        let result = dataOnly ? fdatasync(descriptor) : fsync(descriptor)
        guard result == 0 else { throw SystemError(errno: errno, operation: dataOnly ? "fdatasync" : "fsync") }
    }

    package func rename(_ source: String, to destination: String) throws(SystemError) {
        guard systemRename(source, destination) == 0 else { throw SystemError(errno: errno, operation: "rename") }
    }

    package func unlink(_ path: String) throws(SystemError) {
        guard systemUnlink(path) == 0 else { throw SystemError(errno: errno, operation: "unlink") }
    }

    package func makeDirectory(_ path: String, permissions: UInt32) throws(SystemError) {
        guard mkdir(path, mode_t(permissions)) == 0 else { throw SystemError(errno: errno, operation: "mkdir") }
    }

    package func lock(_ descriptor: Int32, waiting: Bool) throws(SystemError) {
        guard flock(descriptor, waiting ? LOCK_EX : LOCK_EX | LOCK_NB) == 0 else {
            throw SystemError(errno: errno, operation: "flock")
        }
    }

    package func readLink(_ path: String, into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> Int {
        guard let base = buffer.baseAddress else { return 0 }
        let count = readlink(path, base.assumingMemoryBound(to: CChar.self), buffer.count)
        guard count >= 0 else { throw SystemError(errno: errno, operation: "readlink") }
        return count
    }

    package func scanDirectory(_ path: String, until stop: (UnsafeRawBufferPointer) -> Bool) throws(SystemError)
        -> Bool
    {
        guard let stream = opendir(path) else { throw SystemError(errno: errno, operation: "opendir") }
        defer { closedir(stream) }
        let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name) ?? 19
        let nameCapacity = MemoryLayout<dirent>.size - nameOffset
        while true {
            errno = 0
            guard let entry = readdir(stream) else {
                if errno == 0 { return false }
                throw SystemError(errno: errno, operation: "readdir")
            }
            let name = UnsafeRawPointer(entry) + nameOffset
            let length = strnlen(name.assumingMemoryBound(to: CChar.self), nameCapacity)
            let bytes = UnsafeRawBufferPointer(start: name, count: length)
            let dot = UInt8(ascii: ".")
            if length <= 2 && bytes.allSatisfy({ $0 == dot }) { continue }
            if stop(bytes) { return true }
        }
    }

    package func changeOwner(_ descriptor: Int32, user: UserID, group: GroupID) throws(SystemError) {
        guard fchown(descriptor, user, group) == 0 else { throw SystemError(errno: errno, operation: "fchown") }
    }

    package func canSearch(_ path: String) -> Bool {
        access(path, R_OK | X_OK) == 0
    }

    package func fileSystemType(atPath path: String) throws(SystemError) -> UInt {
        // Through a C shim: Glibc's `struct statfs` field types differ between architectures.
        var type: UInt64 = 0
        guard livedefaults_file_system_type(path, &type) == 0 else {
            throw SystemError(errno: errno, operation: "statfs")
        }
        return UInt(truncatingIfNeeded: type)
    }
}

extension FileStatus {
    init(_ info: stat) {
        let kind: Kind =
            switch info.st_mode & S_IFMT {
            case S_IFREG: .regular
            case S_IFDIR: .directory
            case S_IFLNK: .symbolicLink
            default: .other
            }
        self.init(kind: kind, stamp: FileStamp(info), user: info.st_uid, group: info.st_gid)
    }
}
