/// The two path operations the library needs, on `String` directly: `NSString`'s `deletingLastPathComponent`
/// and `lastPathComponent` bridge the string and normalise it first, costly on first use, on the path of
/// every store that opens.
///
/// Same results as `NSString` for the paths the library builds (absolute or relative, repeated and trailing
/// slashes allowed): `/a/b/c` → `/a/b` and `c`; `/a` → `/` and `a`; `/` → `/` and `/`; `a` → `` and `a`;
/// `/a//b/` → `/a` and `b`.
enum PathComponents {
    /// The path without its last component (`/` for a component of the root, empty for a relative name).
    static func directory(of path: String) -> String {
        let bytes = Array(path.utf8)
        var end = trimmedEnd(bytes)
        if end == 0 { return bytes.isEmpty ? "" : "/" }
        // Back over the last component, then over the slashes before it.
        while end > 0 && bytes[end - 1] != UInt8(ascii: "/") { end -= 1 }
        if end == 0 { return "" }
        while end > 1 && bytes[end - 1] == UInt8(ascii: "/") { end -= 1 }
        return compressed(bytes[..<end])
    }

    /// The last component of the path (`/` for the root itself).
    static func name(of path: String) -> String {
        let bytes = Array(path.utf8)
        let end = trimmedEnd(bytes)
        if end == 0 { return bytes.isEmpty ? "" : "/" }
        var start = end
        while start > 0 && bytes[start - 1] != UInt8(ascii: "/") { start -= 1 }
        return String(decoding: bytes[start..<end], as: UTF8.self)
    }

    /// Where the path ends without its trailing slashes (0 for the root, or an empty path).
    private static func trimmedEnd(_ bytes: [UInt8]) -> Int {
        var end = bytes.count
        while end > 0 && bytes[end - 1] == UInt8(ascii: "/") { end -= 1 }
        return end
    }

    /// The bytes as a string, each run of slashes made one (as `NSString` normalises).
    private static func compressed(_ bytes: ArraySlice<UInt8>) -> String {
        var result: [UInt8] = []
        result.reserveCapacity(bytes.count)
        for byte in bytes where !(byte == UInt8(ascii: "/") && result.last == UInt8(ascii: "/")) {
            result.append(byte)
        }
        return String(decoding: result, as: UTF8.self)
    }
}
