/// Whether Foundation could find a bundle identifier for this process, answered without asking Foundation.
///
/// The default application domain is the main bundle's identifier, else the executable's name, as Foundation
/// chooses it. `Bundle.main` costs a fresh process 100–150 µs on its first use (CoreFoundation's bundle, URL
/// and string machinery, and two listings of the executable's directory): as much as the rest of opening a
/// domain, for an answer that is "none" for nearly every program on Linux, which is not in a bundle.
///
/// CoreFoundation on Linux (`CFBundleGetMainBundle`) takes the executable's directory as the main bundle —
/// or two levels up when that directory is named `Linux`, a bundle's folder of platform executables — and
/// takes an identifier only from an `Info.plist` that it finds by listing that directory (the name compared
/// in any case), or its `Contents`, `Resources`, `Support Files` or wrapper subdirectory. This check lists the
/// directory once and answers that there is certainly no identifier only when none of those names is there,
/// in any case, and the directory is not named `Linux`. In every other case, and when the directory cannot
/// be listed, the caller asks `Bundle.main`.
enum MainBundleLayout {
    /// Whether the executable at `executablePath` (absolute, as `/proc/self/exe` gives it) is certainly not
    /// in a bundle with an `Info.plist`.
    static func certainlyHasNoInfo(executablePath: String) -> Bool {
        // Bytes, not Characters or String indices: no grapheme breaking on a fresh process's first open.
        let path = Array(executablePath.utf8)
        guard path.first == UInt8(ascii: "/"), let slash = path.lastIndex(of: UInt8(ascii: "/")) else { return false }
        let directory = path[..<slash]
        let directoryName = directory[((directory.lastIndex(of: UInt8(ascii: "/")) ?? -1) + 1)...]
        if lowercasedASCII(directoryName).elementsEqual("linux".utf8) { return false }
        let found = DirectoryEntries.contain(in: slash == 0 ? "/" : String(decoding: directory, as: UTF8.self)) {
            mayHoldInfo($0)
        }
        return found == false
    }

    /// The executable's file name: the last component of its path, which is what Foundation's
    /// `ProcessInfo.processName` gives on Linux. Nil for a path that is not absolute or ends in a slash.
    static func executableName(of executablePath: String) -> String? {
        let path = Array(executablePath.utf8)
        guard path.first == UInt8(ascii: "/"), path.last != UInt8(ascii: "/"),
            let slash = path.lastIndex(of: UInt8(ascii: "/"))
        else { return nil }
        return String(decoding: path[(slash + 1)...], as: UTF8.self)
    }

    /// Whether an entry with this name could make CoreFoundation find an `Info.plist`: a file named like
    /// `Info.plist` (or a platform's `Info-….plist`), or one of the bundle folders, in any case.
    static func mayHoldInfo(_ name: UnsafeRawBufferPointer) -> Bool {
        // Most names start with another letter: those are passed over without copying them.
        guard let first = name.first, "cirswCIRSW".utf8.contains(first) else { return false }
        let lowered = lowercasedASCII(name)
        if lowered.starts(with: "info".utf8) && lowered.reversed().starts(with: "tsilp.".utf8) { return true }
        for folder in ["contents", "resources", "support files", "wrapper", "wrappedbundle"]
        where lowered.elementsEqual(folder.utf8) {
            return true
        }
        return false
    }

    private static func lowercasedASCII(_ bytes: some Sequence<UInt8>) -> [UInt8] {
        bytes.map { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") ? $0 + 32 : $0 }
    }
}
