package import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The file-system calls the core makes, and nothing above them: the seam under the storage layer.
///
/// Every file the core reads, writes, locks, renames or lists goes through one of these, on the file system
/// its store was configured with (``Defaults/Configuration/fileSystem``): the system's (``SystemFileSystem``)
/// unless a test gives another. `LiveDefaultsTesting` has an in-memory file system and one that fails a chosen
/// call, stops the writer after one, or loses what was not flushed as a power loss would; the tests run every
/// write path of the library over them (Docs/Reliability.md, "Faults").
///
/// The calls are the system's own, one for one, so that a fault injected at the Nth call is a fault the kernel
/// could return there: each throws the errno (EINTR included: the helpers below retry it) and never retries.
/// What the core does with them (read a whole file, replace one atomically, append a line) is written once,
/// over this protocol, in the extension below. A class: stores that share a file system share their files
/// (``DomainFileRegistry`` tells file systems apart by identity, as it does clocks).
package protocol DefaultsFileSystem: AnyObject, Sendable {
    /// `open(2)`: a descriptor (always close-on-exec). `permissions` apply when `options` create the file.
    func open(_ path: String, _ options: FileOpenOptions, permissions: UInt32) throws(SystemError) -> Int32
    /// `close(2)`; closing releases the descriptor's `flock`.
    func close(_ descriptor: Int32)
    /// `read(2)` (`offset` nil) or `pread(2)`: how many bytes were read, 0 at the end of the file.
    func read(_ descriptor: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64?)
        throws(SystemError) -> Int
    /// `write(2)`: how many bytes were written (at the end of the file when opened with ``FileOpenOptions/append``).
    func write(_ descriptor: Int32, from buffer: UnsafeRawBufferPointer) throws(SystemError) -> Int
    /// `fstat(2)`.
    func status(ofDescriptor descriptor: Int32) throws(SystemError) -> FileStatus
    /// `stat(2)`, or `lstat(2)` when not `followingLinks`.
    func status(atPath path: String, followingLinks: Bool) throws(SystemError) -> FileStatus
    /// `fdatasync(2)` (`dataOnly`) or `fsync(2)`: a file's data, or a directory's entries, made durable.
    func synchronize(_ descriptor: Int32, dataOnly: Bool) throws(SystemError)
    /// `rename(2)`: replaces `destination` atomically.
    func rename(_ source: String, to destination: String) throws(SystemError)
    /// `unlink(2)`.
    func unlink(_ path: String) throws(SystemError)
    /// `mkdir(2)`.
    func makeDirectory(_ path: String, permissions: UInt32) throws(SystemError)
    /// `flock(2)` with `LOCK_EX` (and `LOCK_NB` unless `waiting`): `EWOULDBLOCK` when another holds it.
    func lock(_ descriptor: Int32, waiting: Bool) throws(SystemError)
    /// `readlink(2)`: how many bytes of the link's target were put in `buffer`.
    func readLink(_ path: String, into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> Int
    /// `opendir(3)` and `readdir(3)`: calls `stop` with each name (not `.` and `..`) until it returns true;
    /// true when it did, false when the names ran out.
    func scanDirectory(_ path: String, until stop: (UnsafeRawBufferPointer) -> Bool) throws(SystemError) -> Bool
    /// `fchown(2)`.
    func changeOwner(_ descriptor: Int32, user: UserID, group: GroupID) throws(SystemError)
    /// `access(2)` with `R_OK | X_OK`: whether this process may list and enter the directory.
    func canSearch(_ path: String) -> Bool
    /// `statfs(2)`'s `f_type`: the magic number of the file system that holds `path` (which tells a network
    /// file system, whose other hosts' writes inotify cannot see).
    func fileSystemType(atPath path: String) throws(SystemError) -> UInt
}

/// How a file is opened (`open(2)`'s flags the core uses; close-on-exec always).
package struct FileOpenOptions: OptionSet, Sendable, Hashable {
    package let rawValue: UInt16
    package init(rawValue: UInt16) { self.rawValue = rawValue }

    /// Read only: no access option given.
    package static let readOnly: FileOpenOptions = []
    package static let writeOnly = FileOpenOptions(rawValue: 1 << 0)
    package static let readWrite = FileOpenOptions(rawValue: 1 << 1)
    package static let create = FileOpenOptions(rawValue: 1 << 2)
    /// With ``create``: fails with `EEXIST` when the name exists.
    package static let exclusive = FileOpenOptions(rawValue: 1 << 3)
    package static let append = FileOpenOptions(rawValue: 1 << 4)
    /// Fails with `ELOOP` when the last component is a symbolic link.
    package static let noFollow = FileOpenOptions(rawValue: 1 << 5)
    /// Never blocks (on a FIFO put where a file was expected).
    package static let nonBlocking = FileOpenOptions(rawValue: 1 << 6)
    /// Fails with `ENOTDIR` unless it is a directory.
    package static let directory = FileOpenOptions(rawValue: 1 << 7)
}

/// What `stat(2)` tells of a file that the core uses.
package struct FileStatus: Sendable, Hashable {
    package enum Kind: Sendable, Hashable {
        case regular, directory, symbolicLink, other
    }

    package var kind: Kind
    package var stamp: FileStamp
    package var user: UserID
    package var group: GroupID

    package init(kind: Kind, stamp: FileStamp, user: UserID, group: GroupID) {
        self.kind = kind
        self.stamp = stamp
        self.user = user
        self.group = group
    }
}

/// A file's bytes and the stamp of exactly the version read. A class, neither a tuple nor a struct: `Data` is
/// laid out at run time (Foundation is built for library evolution), so an optional tuple or struct holding it
/// is a type the runtime instantiates on first use, in a fresh process's first open; an optional reference is
/// not.
package final class FileContents {
    package let data: Data
    package let stamp: FileStamp

    init(data: Data, stamp: FileStamp) {
        self.data = data
        self.stamp = stamp
    }
}

/// What a small file holds, for a value kept in a file of its own (a secret): ``DefaultsFileSystem/readSmallFile(atPath:maximumBytes:)``.
package enum SmallFile: Sendable, Equatable {
    case absent
    case contents(Data)
    /// Not a regular file (a directory, a FIFO, a device): not opened for reading, which could block or
    /// never end.
    case notRegular
    /// Larger than the bound: its size.
    case tooLarge(Int64)
}
