/// The two path operations the library needs, on `String` directly: `NSString`'s `deletingLastPathComponent`
/// and `lastPathComponent` bridge the string and normalise it first, costly on first use, on the path of
/// every store that opens.
///
/// Same results as `NSString` for the paths the library builds (absolute or relative, repeated and trailing
/// slashes allowed): `/a/b/c` → `/a/b` and `c`; `/a` → `/` and `a`; `/` → `/` and `/`; `a` → `` and `a`;
/// `/a//b/` → `/a` and `b`.
///
/// Both read the string's UTF-8 storage in place: copying it into an array first made a fresh process's first
/// open instantiate `[UInt8]`'s storage type for this alone.
enum PathComponents {
    /// The path without its last component (`/` for a component of the root, empty for a relative name).
    static func directory(of path: String) -> String {
        withBytes(of: path) { bytes in
            var end = trimmedEnd(bytes)
            if end == 0 { return bytes.isEmpty ? "" : "/" }
            // Back over the last component, then over the slashes before it.
            while end > 0 && bytes[end - 1] != UInt8(ascii: "/") { end -= 1 }
            if end == 0 { return "" }
            while end > 1 && bytes[end - 1] == UInt8(ascii: "/") { end -= 1 }
            return compressed(UnsafeBufferPointer(rebasing: bytes[..<end]))
        }
    }

    /// The last component of the path (`/` for the root itself).
    static func name(of path: String) -> String {
        withBytes(of: path) { bytes in
            let end = trimmedEnd(bytes)
            if end == 0 { return bytes.isEmpty ? "" : "/" }
            var start = end
            while start > 0 && bytes[start - 1] != UInt8(ascii: "/") { start -= 1 }
            return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
        }
    }

    /// `path` if it is absolute, else `path` under `workingDirectory` (``CurrentProcess/workingDirectory``): a
    /// path an operator gives (a `_FILE` variable's, a directory of key files) read as a shell would.
    static func absolute(_ path: String, in workingDirectory: String) -> String {
        if path.hasPrefix("/") { return path }
        return workingDirectory.hasSuffix("/") ? workingDirectory + path : workingDirectory + "/" + path
    }

    /// The strings one after another, made in one allocation of the exact size: string interpolation
    /// reserves an estimate and appends piece by piece, and a store's open builds a path for each of its
    /// twelve layers.
    static func joined(_ parts: String...) -> String {
        joined(parts)
    }

    /// ``joined(_:)-(String...)`` of an array.
    static func joined(_ parts: [String]) -> String {
        var count = 0
        for part in parts { count += part.utf8.count }
        return String(unsafeUninitializedCapacity: count) { buffer in
            var offset = 0
            for var part in parts {
                part.withUTF8 { bytes in
                    // `count` is the sum of these lengths: each part fits where the one before it ended.
                    _ = UnsafeMutableBufferPointer(rebasing: buffer[offset..<(offset + bytes.count)])
                        .initialize(fromContentsOf: bytes)
                    offset += bytes.count
                }
            }
            return offset
        }
    }

    /// Runs `body` on the path's UTF-8 bytes where they are (a native string's), else on a contiguous copy.
    private static func withBytes(of path: String, _ body: (UnsafeBufferPointer<UInt8>) -> String) -> String {
        if let result = path.utf8.withContiguousStorageIfAvailable(body) { return result }
        var copy = path
        copy.makeContiguousUTF8()
        return copy.utf8.withContiguousStorageIfAvailable(body) ?? ""
    }

    /// Where the path ends without its trailing slashes (0 for the root, or an empty path).
    private static func trimmedEnd(_ bytes: UnsafeBufferPointer<UInt8>) -> Int {
        var end = bytes.count
        while end > 0 && bytes[end - 1] == UInt8(ascii: "/") { end -= 1 }
        return end
    }

    /// The bytes as a string, each run of slashes made one (as `NSString` normalises).
    private static func compressed(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        String(unsafeUninitializedCapacity: bytes.count) { output in
            var count = 0
            for byte in bytes where !(byte == UInt8(ascii: "/") && count > 0 && output[count - 1] == UInt8(ascii: "/"))
            {
                output[count] = byte
                count += 1
            }
            return count
        }
    }
}
