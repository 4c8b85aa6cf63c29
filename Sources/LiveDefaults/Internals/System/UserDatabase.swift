import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A user account from the system's user database (`/etc/passwd`, or NSS).
///
/// Looked up with `getpwnam_r`, which writes into a buffer of ours: `getpwnam` returns a static record that
/// another thread's lookup (ours or any library's) may overwrite while it is read.
struct UserAccount: Sendable, Equatable {
    var name: String
    var home: String
    var uid: UserID
    var gid: GroupID

    /// The largest buffer a lookup grows to (`ERANGE` doubles it from `sysconf(_SC_GETPW_R_SIZE_MAX)`).
    static let bufferLimit = 1 << 20

    /// The account named `name`; nil when there is none, the name holds a NUL, or the lookup failed.
    init?(named name: String) {
        guard !name.isEmpty, !name.utf8.contains(0) else { return nil }
        let suggested = sysconf(Int32(_SC_GETPW_R_SIZE_MAX))
        var size = suggested > 0 ? min(Int(suggested), Self.bufferLimit) : 1024
        while true {
            var record = passwd()
            var result: UnsafeMutablePointer<passwd>?
            var found: (home: String, uid: UserID, gid: GroupID)?
            let status = withUnsafeTemporaryAllocation(of: CChar.self, capacity: size) { buffer -> Int32 in
                guard let base = buffer.baseAddress else { return ENOMEM }
                let status = getpwnam_r(name, &record, base, size, &result)
                if status == 0, result != nil, let directory = record.pw_dir {
                    found = (String(cString: directory), record.pw_uid, record.pw_gid)
                }
                return status
            }
            if let found {
                self.name = name
                home = found.home
                uid = found.uid
                gid = found.gid
                return
            }
            guard status == ERANGE, size < Self.bufferLimit else { return nil }
            size = min(size * 2, Self.bufferLimit)
        }
    }
}

/// The current user's name read from the user database's files, where NSS could not answer otherwise.
///
/// The managed per-user layer lives in a directory named after the user (``DefaultsLocations/userName``):
/// `$USER` when it is set, else the user database. `NSUserName()` asks NSS (`getpwuid_r`), which is costly in a
/// fresh process before the first store is open (it tries nscd's socket twice, then reads
/// `/etc/nsswitch.conf` and `/etc/passwd` through glibc's module machinery): much of a cold open in an
/// environment without `USER`, which is where servers run (containers, systemd units, CI). Reading the two
/// files directly costs a few system calls.
///
/// The answer is only taken from the files when NSS would give the same one: `/etc/nsswitch.conf` has one
/// `passwd:` line whose first source is `files` with no action after it (so a found entry ends the
/// search), and every line of `/etc/passwd` is one the files module reads the same way (a name, then a
/// user id of plain digits in the third field; comments skipped; no NIS `+`/`-` lines). The first line
/// with the user's id wins, as in glibc, and must have a group id of plain digits (glibc skips a line whose
/// group id it cannot read). That line also gives the home directory (its sixth field), for
/// ``DefaultsLocations/currentHomeDirectory``. In every other case (another source first, `compat`, an
/// unusual line, a file too large or unreadable, no entry for the id) the caller asks NSS.
enum UserDatabaseFiles {
    /// Files larger than this are left to NSS.
    static let largestFile = 4 << 20

    /// A user's line in the files: the name, and the home directory when the line has that field.
    struct Entry: Sendable, Equatable {
        var name: String
        var home: String?
    }

    /// The name of user `uid` according to the files, or nil when NSS must be asked (see the type).
    static func userName(
        ofUser uid: UInt32, nsswitch: String = "/etc/nsswitch.conf", passwd: String = "/etc/passwd"
    ) -> String? {
        entry(ofUser: uid, nsswitch: nsswitch, passwd: passwd)?.name
    }

    /// The line of user `uid` according to the files, or nil when NSS must be asked (see the type).
    static func entry(
        ofUser uid: UInt32, nsswitch: String = "/etc/nsswitch.conf", passwd: String = "/etc/passwd"
    ) -> Entry? {
        guard let switchBytes = smallFile(nsswitch) else { return nil }
        defer { switchBytes.deallocate() }
        guard consultsFilesFirst(UnsafeRawBufferPointer(switchBytes)), let passwdBytes = smallFile(passwd) else {
            return nil
        }
        defer { passwdBytes.deallocate() }
        return entry(ofUser: uid, inPasswd: UnsafeRawBufferPointer(passwdBytes))
    }

    // The scans below walk a raw buffer by index rather than `split` arrays or validate with generic
    // `String(validating:as:)`: on a fresh process's first open those cost more than the reading (their
    // code's first run and the runtime's first instantiation of their types).

    /// Whether `passwd` lookups consult the files first and stop at an entry found there.
    static func consultsFilesFirst(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { consultsFilesFirst($0) }
    }

    /// The name on the first line of a `passwd` file with user id `uid`; nil when there is none, or when
    /// any line is one glibc might read differently from this.
    static func name(ofUser uid: UInt32, inPasswd bytes: [UInt8]) -> String? {
        bytes.withUnsafeBytes { entry(ofUser: uid, inPasswd: $0) }?.name
    }

    /// The home directory (sixth field) on the first line of a `passwd` file with user id `uid`; nil as for
    /// ``name(ofUser:inPasswd:)``, or when that line has no sixth field or it is not valid UTF-8.
    static func home(ofUser uid: UInt32, inPasswd bytes: [UInt8]) -> String? {
        bytes.withUnsafeBytes { entry(ofUser: uid, inPasswd: $0) }?.home
    }

    /// Calls `body` with each line's range (without its newline), until `body` returns false.
    private static func forEachLine(_ bytes: UnsafeRawBufferPointer, _ body: (Range<Int>) -> Bool) {
        var start = 0
        while start < bytes.count {
            var end = start
            while end < bytes.count && bytes[end] != UInt8(ascii: "\n") { end += 1 }
            if !body(start..<end) { return }
            start = end + 1
        }
    }

    /// Whether the bytes in `range` spell `word`.
    private static func bytes(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>, equal word: StaticString) -> Bool {
        guard range.count == word.utf8CodeUnitCount else { return false }
        let expected = word.utf8Start
        var index = 0
        for position in range {
            if bytes[position] != expected[index] { return false }
            index += 1
        }
        return true
    }

    private static func consultsFilesFirst(_ bytes: UnsafeRawBufferPointer) -> Bool {
        func isBlank(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        var passwdLines = 0
        var verdict = false
        forEachLine(bytes) { line in
            // The line up to a comment, as words.
            var end = line.lowerBound
            while end < line.upperBound && bytes[end] != UInt8(ascii: "#") { end += 1 }
            var position = line.lowerBound
            func nextWord() -> Range<Int>? {
                while position < end && isBlank(bytes[position]) { position += 1 }
                let start = position
                while position < end && !isBlank(bytes[position]) { position += 1 }
                return start < position ? start..<position : nil
            }
            guard var first = nextWord() else { return true }
            let label = 7  // "passwd:"
            guard first.count >= label,
                Self.bytes(bytes, first.lowerBound..<(first.lowerBound + label), equal: "passwd:")
            else { return true }
            passwdLines += 1
            // `passwd:files`, with no blank after the colon, names its first source in the same word.
            first = (first.lowerBound + label)..<first.upperBound
            guard let source = first.isEmpty ? nextWord() : first else {
                verdict = false
                return true
            }
            // An action (`[SUCCESS=continue]`, `[NOTFOUND=return]`) after `files` could change what a found
            // entry means: left to NSS.
            let next = nextWord()
            verdict =
                Self.bytes(bytes, source, equal: "files")
                && next.map { bytes[$0.lowerBound] != UInt8(ascii: "[") } ?? true
            return true
        }
        // Two lines: which one counts is left to glibc.
        return passwdLines == 1 && verdict
    }

    private static func entry(ofUser uid: UInt32, inPasswd bytes: UnsafeRawBufferPointer) -> Entry? {
        var found: Range<Int>?
        var foundHome: Range<Int>?
        var plain = true
        forEachLine(bytes) { line in
            guard !line.isEmpty else { return true }
            let first = bytes[line.lowerBound]
            if first == UInt8(ascii: "#") { return true }
            // A NIS line: glibc's files module gives one an id of 0 when its field is empty.
            if first == UInt8(ascii: "+") || first == UInt8(ascii: "-") {
                plain = false
                return false
            }
            // The fields: name, password, user id (up to the third colon, or the line's end), group id, gecos,
            // home directory (after the fifth colon, up to the sixth or the line's end), shell.
            var nameEnd = -1
            var idStart = -1
            var idEnd = line.upperBound
            var groupStart = -1
            var groupEnd = line.upperBound
            var homeStart = -1
            var homeEnd = line.upperBound
            var colons = 0
            for position in line where bytes[position] == UInt8(ascii: ":") {
                colons += 1
                if colons == 1 { nameEnd = position }
                if colons == 2 { idStart = position + 1 }
                if colons == 3 {
                    idEnd = position
                    groupStart = position + 1
                }
                if colons == 4 { groupEnd = position }
                if colons == 5 { homeStart = position + 1 }
                if colons == 6 {
                    homeEnd = position
                    break
                }
            }
            guard colons >= 2, nameEnd > line.lowerBound, let id = plainNumber(bytes, idStart..<idEnd) else {
                plain = false
                return false
            }
            if found == nil && id == uid {
                // glibc skips a line whose group id it cannot read, and would look further: left to NSS.
                guard groupStart >= 0, plainNumber(bytes, groupStart..<groupEnd) != nil else {
                    plain = false
                    return false
                }
                found = line.lowerBound..<nameEnd
                if homeStart >= 0 { foundHome = homeStart..<homeEnd }
            }
            return true
        }
        guard plain, let found, let name = validUTF8Text(bytes, found) else { return nil }
        return Entry(name: name, home: foundHome.flatMap { validUTF8Text(bytes, $0) })
    }

    /// The user id written in `range` as plain decimal digits that fits in 32 bits; nil for anything else.
    private static func plainNumber(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> UInt32? {
        guard !range.isEmpty, range.count <= 10 else { return nil }
        var value: UInt64 = 0
        for position in range {
            let byte = bytes[position]
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + UInt64(byte - UInt8(ascii: "0"))  // at most 10 digits: cannot overflow 64 bits
        }
        return UInt32(exactly: value)
    }

    /// The bytes of a file smaller than ``largestFile``, for the caller to deallocate; nil when it is not,
    /// or is absent or unreadable.
    private static func smallFile(_ path: String) -> UnsafeMutableRawBufferPointer? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { _ = systemClose(descriptor) }
        var capacity = 4096
        var total = 0
        var buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: capacity, alignment: 1)
        while true {
            if total == capacity {
                guard capacity < largestFile else {
                    buffer.deallocate()
                    return nil
                }
                let grown = UnsafeMutableRawBufferPointer.allocate(byteCount: capacity * 2, alignment: 1)
                grown.copyMemory(from: UnsafeRawBufferPointer(buffer))
                buffer.deallocate()
                buffer = grown
                capacity *= 2
            }
            let count = systemRead(descriptor, buffer.baseAddress! + total, capacity - total)
            if count < 0 {
                if errno == EINTR { continue }
                buffer.deallocate()
                return nil
            }
            if count == 0 { break }
            total += count
        }
        return UnsafeMutableRawBufferPointer(rebasing: buffer[0..<total])
    }
}
