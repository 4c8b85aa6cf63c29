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
}
