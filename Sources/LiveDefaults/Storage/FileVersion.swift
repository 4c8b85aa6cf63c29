import Foundation

/// One version of a domain file that this process read or wrote: the stamp the file had then and the digest
/// of its bytes. The stamp tells cheaply whether the file changed since (one `stat`); the digest names the
/// version where a stamp cannot: a rewrite that kept inode, size and modification time (timestamps are coarse,
/// inode numbers reused), and the change log, whose entries every process must name alike.
///
/// A file that does not exist has no version (`nil`); the change log numbers that state 0 (``logNumber``).
struct FileVersion: Hashable, Sendable {
    var stamp: FileStamp
    var digest: UInt64

    init(stamp: FileStamp, digest: UInt64) {
        self.stamp = stamp
        self.digest = digest
    }

    /// The version whose bytes are `bytes`, read or written with `stamp`.
    init(stamp: FileStamp, bytes: Data) {
        self.init(stamp: stamp, digest: Self.digest(of: bytes))
    }

    /// The digest of a version's bytes: the one function every reader, writer and the change log use, so that
    /// a version read in one process and written in another has one name.
    static func digest(of bytes: Data) -> UInt64 { FastHash.hash(bytes) }

    /// The change log's number for `version`: its digest, 0 for a file that does not exist.
    static func logNumber(_ version: FileVersion?) -> UInt64 { version?.digest ?? 0 }

    /// A digest as the change log, the readers' announcements and ``ReadingProcess`` spell it: 16 hexadecimal
    /// digits.
    static func hex(_ digest: UInt64) -> String {
        // Sixteen digits written in place: a write's change log lines spell two or three digests each.
        String(unsafeUninitializedCapacity: 16) { buffer in
            for index in 0..<16 {
                buffer[index] = ASCIIDigits.hex(UInt8(truncatingIfNeeded: digest >> UInt64(60 - 4 * index)))
            }
            return 16
        }
    }

    /// The digest that ``hex(_:)`` spells as `text`; nil for any other text.
    static func number(hex text: String) -> UInt64? {
        // Digits only (`UInt64(_:radix:)` also takes a sign, which no spelling of a digest has), read in one pass.
        guard text.utf8.count == 16 else { return nil }
        var number: UInt64 = 0
        for byte in text.utf8 {
            guard let digit = ASCIIDigits.hexValue(byte) else { return nil }
            number = number << 4 | UInt64(digit)
        }
        return number
    }
}
