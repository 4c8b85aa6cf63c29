import Foundation

/// One fast, non-cryptographic 64-bit hash for the two places that need more speed than `Hasher` (SipHash)
/// gives and face no adversary: the missing-key filter's key names (`Store/MissingKeyFilter.swift`) and the
/// digest of a file's version (`Storage/Read/DomainFile+Reload.swift`, where the file's stamp must match too before the
/// digest is asked, and the change log's version numbers and value digests, `Storage/Records/ChangeLog.swift`).
///
/// FNV-1a's prime eight bytes a step, each word folded with a multiply and a shift (wyhash style), the tail
/// of up to seven bytes as one more word, then a final mix (splitmix64's) so that every output bit depends
/// on every input bit: the filter takes its two bit indexes from different parts of the result. Not SipHash,
/// `Hasher`'s: its cost showed in both opening a large domain and reading a missing key
/// (Docs/Decisions/ReadPaths.md).
enum FastHash {
    static func hash(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        let prime: UInt64 = 0x0000_0100_0000_01B3
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325 ^ UInt64(bytes.count)
        var offset = 0
        while offset + 8 <= bytes.count {
            let word = bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            hash = ((hash ^ word) &* prime) &* 0x9E37_79B9_7F4A_7C15
            hash ^= hash >> 29
            offset += 8
        }
        // The last up to seven bytes as one word, assembled from at most three loads (a setting's name is
        // usually shorter than eight bytes: this is most of its hash).
        let remaining = bytes.count - offset
        if remaining > 0 {
            var tail: UInt64 = 0
            var shift: UInt64 = 0
            if remaining & 4 != 0 {
                tail = UInt64(bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
                offset += 4
                shift = 32
            }
            if remaining & 2 != 0 {
                tail |= UInt64(bytes.loadUnaligned(fromByteOffset: offset, as: UInt16.self)) << shift
                offset += 2
                shift += 16
            }
            if remaining & 1 != 0 { tail |= UInt64(bytes[offset]) << shift }
            hash = ((hash ^ tail) &* prime) &* 0x9E37_79B9_7F4A_7C15
        }
        hash ^= hash >> 29
        hash = hash &* 0xBF58_476D_1CE4_E5B9
        return hash ^ (hash >> 32)
    }

    /// The hash of a string's UTF-8 bytes.
    /// The hash of `data`'s bytes: the one digest of a file's version (the change log's version numbers, a
    /// file's comparison with the version held) and of a logged value's encoding.
    static func hash(_ data: Data) -> UInt64 {
        data.withUnsafeBytes { hash($0) }
    }

    static func hash(_ string: String) -> UInt64 {
        if let hash = string.utf8.withContiguousStorageIfAvailable({ hash(UnsafeRawBufferPointer($0)) }) {
            return hash
        }
        var contiguous = string
        return contiguous.withUTF8 { hash(UnsafeRawBufferPointer($0)) }
    }
}
