/// Whether Foundation could find a bundle identifier for this process, answered without asking Foundation.
///
/// The default application domain is the main bundle's identifier, else the executable's name, as Foundation
/// chooses it. `Bundle.main` is costly in a fresh process on its first use (CoreFoundation's bundle, URL
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
    static func certainlyHasNoInfo(executablePath: String, on fileSystem: any DefaultsFileSystem) -> Bool {
        guard executablePath.utf8.first == UInt8(ascii: "/") else { return false }
        let directory = PathComponents.directory(of: executablePath)
        if lowercasedASCII(PathComponents.name(of: directory).utf8).elementsEqual("linux".utf8) { return false }
        return fileSystem.scanEntries(in: directory, until: mayHoldInfo) == false
    }

    /// The executable's file name: the last component of its path, which is what Foundation's
    /// `ProcessInfo.processName` gives on Linux. Nil for a path that is not absolute or ends in a slash.
    static func executableName(of executablePath: String) -> String? {
        guard executablePath.utf8.first == UInt8(ascii: "/"), executablePath.utf8.last != UInt8(ascii: "/") else {
            return nil
        }
        return PathComponents.name(of: executablePath)
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
