import Foundation

/// The names of the temporary files ``DefaultsFileSystem/replaceAtomically(_:with:owner:readableByOthers:flush:)``
/// writes beside a file: `.NAME.tmp-PID-RANDOM`, so that a later writer can tell a dead process's from a live
/// one's.
enum FileTemporaries {
    /// A new temporary's path beside `path`, named for the writing process `pid`.
    static func name(for path: String, pid: Int32) -> String {
        let directory = PathComponents.directory(of: path)
        return "\(directory)/.\(PathComponents.name(of: path)).tmp-\(pid)-\(UInt32.random(in: 0...UInt32.max))"
    }

    /// The process that wrote `name`, when it names a temporary (`.<file>.tmp-<pid>-<number>`).
    static func writer(ofTemporary name: String) -> Int32? {
        guard name.hasPrefix("."), let marker = name.range(of: ".tmp-", options: .backwards),
            marker.lowerBound > name.index(after: name.startIndex)
        else { return nil }
        let rest = name[marker.upperBound...].split(separator: "-", omittingEmptySubsequences: false)
        guard rest.count == 2, let pid = Int32(rest[0]), pid > 0, !rest[1].isEmpty,
            rest[1].allSatisfy({ $0.isASCII && $0.isNumber })
        else { return nil }
        return pid
    }

    /// Whether a directory entry's bytes may name a temporary: a leading dot and `.tmp-` after it (the cheap test
    /// before ``writer(ofTemporary:)``).
    static func mayBeTemporary(_ name: UnsafeRawBufferPointer) -> Bool {
        // ".tmp-" is 0x2E 0x74 0x6D 0x70 0x2D.
        guard name.count > 6, name[0] == 0x2E else { return false }
        var index = 1
        while index + 5 <= name.count {
            if name[index] == 0x2E, name[index + 1] == 0x74, name[index + 2] == 0x6D, name[index + 3] == 0x70,
                name[index + 4] == 0x2D
            {
                return true
            }
            index += 1
        }
        return false
    }
}
