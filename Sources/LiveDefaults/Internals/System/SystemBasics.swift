import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// The operating system as the library uses it. The files of this folder are the only ones of the module
// that call the C library (Scripts/check-platform checks, in CI), each for one job: this one the types and
// helpers they share, FileSystem.swift the file system calls, Process.swift the process and its environment,
// UserDatabase.swift the user database, Threads.swift the mutex, threads and the wake pipe, Inotify.swift
// inotify. The library is built and tested on Linux only; inotify is compiled in on Linux unless
// LIVEDEFAULTS_POLLING_ONLY is defined, which is what another platform gets: the watcher then polls (CI builds
// and runs the whole suite that way too).

/// A user id and a group id, as the system gives them.
package typealias UserID = UInt32  // uid_t on Linux
package typealias GroupID = UInt32  // gid_t on Linux

/// What identifies one version of a file: if none of these changed, the contents did not either (every
/// writer here replaces files by rename, which changes the inode; Foundation's in-place writes change the
/// size or the nanosecond mtime).
package struct FileStamp: Sendable, Hashable {
    package var device: UInt64
    package var inode: UInt64
    package var size: Int64
    package var modifiedSeconds: Int
    package var modifiedNanoseconds: Int

    package init(device: UInt64, inode: UInt64, size: Int64, modifiedSeconds: Int, modifiedNanoseconds: Int) {
        self.device = device
        self.inode = inode
        self.size = size
        self.modifiedSeconds = modifiedSeconds
        self.modifiedNanoseconds = modifiedNanoseconds
    }
}

/// A system call that failed, with its errno.
package struct SystemError: Error, Sendable {
    package var errno: Int32
    package var operation: String

    package init(errno: Int32, operation: String) {
        self.errno = errno
        self.operation = operation
    }

    package var message: String { "\(operation): \(systemErrorText(errno))" }

    /// Whether the path (or a directory on it) does not exist: `ENOENT`, `ENOTDIR`.
    var isNotFound: Bool { errno == ENOENT || errno == ENOTDIR }

    /// Whether it was `ENOENT` alone: no such file or directory.
    var isNoSuchFile: Bool { errno == ENOENT }

    /// Whether `errno` says this process may not do it (`EACCES`, `EPERM`, `EROFS`), where another may.
    static func isDenial(_ errno: Int32) -> Bool { errno == EACCES || errno == EPERM || errno == EROFS }

    /// A value the operation cannot take (`EINVAL`).
    static func invalid(_ operation: String) -> SystemError { SystemError(errno: EINVAL, operation: operation) }
}

/// The bytes in `range` as a string when they are valid UTF-8; nil otherwise. Decoding repairs bad bytes,
/// so a repaired string would name something other than the bytes the system handed out.
func validUTF8Text(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> String? {
    let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[range]), as: UTF8.self)
    var position = range.lowerBound
    for unit in text.utf8 {
        guard position < range.upperBound, bytes[position] == unit else { return nil }
        position += 1
    }
    return position == range.upperBound ? text : nil
}

/// The text of an errno value.
func systemErrorText(_ code: Int32) -> String {
    String(cString: strerror(code))
}

/// `open(2)`, `read(2)`, `write(2)`, `close(2)`, `rename(2)` and `unlink(2)` under names that the wrappers' own `read` and `close` do not shadow.
func systemRead(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int {
    read(descriptor, buffer, count)
}

func systemOpen(_ path: String, _ flags: Int32, _ mode: UInt32) -> Int32 {
    open(path, flags, mode_t(mode))
}

func systemRename(_ source: String, _ destination: String) -> Int32 {
    rename(source, destination)
}

func systemUnlink(_ path: String) -> Int32 {
    unlink(path)
}

func systemClose(_ descriptor: Int32) -> Int32 {
    close(descriptor)
}

func systemWrite(_ descriptor: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
    write(descriptor, buffer, count)
}

extension FileStamp {
    init(_ info: stat) {
        self.init(
            device: UInt64(info.st_dev), inode: UInt64(info.st_ino), size: Int64(info.st_size),
            modifiedSeconds: Int(info.st_mtim.tv_sec), modifiedNanoseconds: Int(info.st_mtim.tv_nsec))
    }
}
