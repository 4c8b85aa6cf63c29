import Foundation
import Glibc

/// The floors of the write + flush rows: the least work that puts the same bytes on disk.
enum DurableWrite {
    /// Truncates and rewrites one file, then `fdatasync`: the cheapest durable write of the bytes, and not
    /// crash-safe (a crash in the middle leaves a torn file). Returns the bytes written (so the work is used).
    static func inPlace(_ path: String, _ bytes: Data) -> Int {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return 0 }
        defer { close(descriptor) }
        let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        fdatasync(descriptor)
        return written
    }

    /// A temporary file beside the target, `fdatasync`, `rename` over the target: the least a crash-safe
    /// replace costs (the reader sees the old or the new file, never a torn one).
    static func replacing(_ path: String, _ bytes: Data) -> Int {
        let temporary = path + ".tmp"
        let written = inPlace(temporary, bytes)
        rename(temporary, path)
        return written
    }

    /// ``replacing(_:_:)``, then `fsync` of the directory, so that the rename survives a power loss too: the
    /// floor of what LiveDefaults promises when `synchronize()` returns.
    static func replacingDurably(_ path: String, _ bytes: Data) -> Int {
        let written = replacing(path, bytes)
        let directory = open((path as NSString).deletingLastPathComponent, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard directory >= 0 else { return 0 }
        fsync(directory)
        close(directory)
        return written
    }

    /// ``replacingDurably(_:_:)`` under an exclusive `flock` of a lock file beside the target (opened for
    /// writing each time, as the library's writes take it) and after a `stat` of the target: the least any write
    /// costs that takes turns with writers in other processes and checks the version on disk before replacing
    /// it (so that it never writes over another process's version unseen), before encoding anything.
    static func replacingDurablyUnderLock(_ path: String, _ bytes: Data) -> Int {
        underLock(path) {
            var status = stat()
            guard stat(path, &status) == 0 || errno == ENOENT else { return 0 }
            return replacingDurably(path, bytes) &+ Int(status.st_size)
        }
    }

    /// ``replacing(_:_:)`` with `fsync` in place of `fdatasync` (which skips the timestamps' metadata).
    static func replacingWithFsync(_ path: String, _ bytes: Data) -> Int {
        let temporary = path + ".tmp"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return 0 }
        let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        fsync(descriptor)
        close(descriptor)
        rename(temporary, path)
        return written
    }

    /// An unnamed file (`O_TMPFILE`), `fdatasync`, then given a name with `linkat` and renamed over the
    /// target: `linkat` cannot replace an existing name, so it takes a link and a rename where the named
    /// temporary takes only the rename; it saves the directory entry of the creation instead.
    static func replacingUnnamed(_ path: String, _ bytes: Data) -> Int {
        let directory = (path as NSString).deletingLastPathComponent
        // Glibc's module does not export these two (Linux x86_64 and aarch64 values).
        let unnamed: Int32 = 0o20_000_000 | O_DIRECTORY  // O_TMPFILE
        let emptyPath: Int32 = 0x1000  // AT_EMPTY_PATH
        let descriptor = open(directory, unnamed | O_WRONLY | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return 0 }
        defer { close(descriptor) }
        let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        fdatasync(descriptor)
        let temporary = path + ".tmp"
        unlink(temporary)
        guard
            linkat(descriptor, "", AT_FDCWD, temporary, emptyPath) == 0
                || linkat(AT_FDCWD, "/proc/self/fd/\(descriptor)", AT_FDCWD, temporary, AT_SYMLINK_FOLLOW) == 0
        else { return 0 }
        rename(temporary, path)
        return written
    }

    /// ``replacing(_:_:)`` under an exclusive `flock` of a lock file beside the target, opened each time (as
    /// every LiveDefaults write does, so that writers in other processes take turns).
    static func replacingUnderLock(_ path: String, _ bytes: Data) -> Int {
        underLock(path) { replacing(path, bytes) }
    }

    /// `body` under an exclusive `flock` of a lock file beside `path`, opened for writing each time as the
    /// library's writes take it; 0 when the lock file cannot be opened.
    private static func underLock(_ path: String, _ body: () -> Int) -> Int {
        let lock = open(path + ".lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard lock >= 0 else { return 0 }
        defer { close(lock) }
        flock(lock, LOCK_EX)
        return body()
    }
}
