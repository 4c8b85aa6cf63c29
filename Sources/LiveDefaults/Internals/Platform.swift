import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// What the library asks of the operating system, all in this one file: the file system calls, the lock and
// thread-local primitives, the environment, the user database, and inotify. No other file of the module
// imports the C library or calls it (Scripts/check-platform checks, in CI). The library is built and tested
// on Linux only; inotify is compiled in on Linux unless LIVEDEFAULTS_POLLING_ONLY is defined, which is what
// another platform gets: the watcher then polls (CI builds and runs the whole suite that way too).

/// A user id and a group id, as the system gives them.
typealias UserID = uid_t
typealias GroupID = gid_t

/// What identifies one version of a file: if none of these changed, the contents did not either (every
/// writer here replaces files by rename, which changes the inode; Foundation's in-place writes change the
/// size or the nanosecond mtime).
struct FileStamp: Sendable, Hashable {
    var device: UInt64
    var inode: UInt64
    var size: Int64
    var modifiedSeconds: Int
    var modifiedNanoseconds: Int
}

/// A system call that failed, with its errno.
struct SystemError: Error, Sendable {
    var errno: Int32
    var operation: String

    var message: String { "\(operation): \(systemErrorText(errno))" }

    /// Whether the path (or a directory on it) does not exist: `ENOENT`, `ENOTDIR`.
    var isNotFound: Bool { errno == ENOENT || errno == ENOTDIR }

    /// Whether it was `ENOENT` alone: no such file or directory.
    var isNoSuchFile: Bool { errno == ENOENT }
}

/// Thin wrappers over the system calls the storage layer needs, each returning or throwing the errno.
enum FileSystem {
    static func stamp(atPath path: String) throws(SystemError) -> FileStamp? {
        var info = stat()
        guard stat(path, &info) == 0 else {
            if errno == ENOENT || errno == ENOTDIR { return nil }
            throw SystemError(errno: errno, operation: "stat")
        }
        return FileStamp(info)
    }

    static func stamp(descriptor: Int32) throws(SystemError) -> FileStamp {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw SystemError(errno: errno, operation: "fstat") }
        return FileStamp(info)
    }

    /// A file's bytes and the stamp of exactly the version read. A class, neither a tuple nor a struct:
    /// `Data` is laid out at run time (Foundation is built for library evolution), so an optional tuple or
    /// struct holding it is a type the runtime instantiates on first use, in a fresh process's first open;
    /// an optional reference is not.
    final class Contents {
        let data: Data
        let stamp: FileStamp

        init(data: Data, stamp: FileStamp) {
            self.data = data
            self.stamp = stamp
        }
    }

    /// Reads a whole file; nil when it does not exist. Also returns the stamp of exactly the version read.
    static func read(atPath path: String) throws(SystemError) -> Contents? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            if errno == ENOENT || errno == ENOTDIR { return nil }
            throw SystemError(errno: errno, operation: "open")
        }
        defer { close(descriptor) }
        let before = try stamp(descriptor: descriptor)
        // Read into malloc'd memory that the Data then owns: no zero-filling and no second copy (both cost
        // page faults on a large domain, in the process's first milliseconds). One byte more than the size,
        // to see the end of the file in the same loop; grown if the file grew meanwhile.
        var capacity = Int(max(before.size, 0)) + 1
        guard var buffer = malloc(capacity) else { throw SystemError(errno: ENOMEM, operation: "read") }
        var total = 0
        while true {
            if total == capacity {
                capacity = max(4096, capacity * 2)
                guard let grown = realloc(buffer, capacity) else {
                    free(buffer)
                    throw SystemError(errno: ENOMEM, operation: "read")
                }
                buffer = grown
            }
            let count = systemRead(descriptor, buffer + total, capacity - total)
            if count < 0 {
                if errno == EINTR { continue }
                let code = errno
                free(buffer)
                throw SystemError(errno: code, operation: "read")
            }
            if count == 0 { break }
            total += count
        }
        let data = Data(bytesNoCopy: buffer, count: total, deallocator: .free)
        return Contents(data: data, stamp: try stamp(descriptor: descriptor))
    }

    /// Creates a directory and its missing parents with mode 0700 (existing ones are left as they are).
    static func createDirectory(_ path: String) throws(SystemError) {
        if mkdir(path, 0o700) == 0 || errno == EEXIST { return }
        guard errno == ENOENT else { throw SystemError(errno: errno, operation: "mkdir") }
        let parent = PathComponents.directory(of: path)
        guard !parent.isEmpty, parent != path else { throw SystemError(errno: ENOENT, operation: "mkdir") }
        try createDirectory(parent)
        if mkdir(path, 0o700) != 0 && errno != EEXIST { throw SystemError(errno: errno, operation: "mkdir") }
    }

    /// Opens (creating, 0600) a lock file and takes an exclusive `flock` on it; closing the descriptor unlocks.
    static func lockExclusively(_ path: String) throws(SystemError) -> Int32 {
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw SystemError(errno: errno, operation: "open lock file") }
        while flock(descriptor, LOCK_EX) != 0 {
            if errno == EINTR { continue }
            let code = errno
            close(descriptor)
            throw SystemError(errno: code, operation: "flock")
        }
        return descriptor
    }

    /// Writes `data` to a new temporary file beside `path` (mode 0600), flushes it to the disk, and renames it
    /// over `path`: readers see the old file or the new one, never a mix, even if this process is killed.
    static func replaceAtomically(_ path: String, with data: Data, owner: (UserID, GroupID)? = nil) throws(SystemError)
        -> FileStamp
    {
        let directory = PathComponents.directory(of: path)
        let name = PathComponents.name(of: path)
        let temporary = "\(directory)/.\(name).tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw SystemError(errno: errno, operation: "create temporary file") }
        var succeeded = false
        defer {
            if !succeeded {
                close(descriptor)
                unlink(temporary)
            }
        }
        let writeError: Int32 = data.withUnsafeBytes { (buffer: UnsafeRawBufferPointer) -> Int32 in
            var written = 0
            while written < buffer.count {
                let count = write(descriptor, buffer.baseAddress! + written, buffer.count - written)
                if count < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                written += count
            }
            return 0
        }
        if writeError != 0 { throw SystemError(errno: writeError, operation: "write") }
        if let (uid, gid) = owner { _ = fchown(descriptor, uid, gid) }
        // The data must be on the disk before the rename can be (else a crash may leave an empty file under
        // the domain's name); `fdatasync` is enough for that and skips the timestamps `fsync` also writes.
        guard fdatasync(descriptor) == 0 else { throw SystemError(errno: errno, operation: "fdatasync") }
        let stamp = try stamp(descriptor: descriptor)
        guard rename(temporary, path) == 0 else { throw SystemError(errno: errno, operation: "rename") }
        succeeded = true
        close(descriptor)
        return stamp
    }

    /// Removes temporary files that `replaceAtomically` left beside `path` in processes that no longer run
    /// (killed between creating the temporary and renaming it). Call it with the file's lock held; files of
    /// live processes are left alone.
    ///
    /// - Returns: the names removed.
    @discardableResult
    static func removeStaleTemporaries(of path: String) -> [String] {
        let directory = PathComponents.directory(of: path)
        let prefix = ".\(PathComponents.name(of: path)).tmp-"
        var removed: [String] = []
        for name in contentsOfDirectory(directory) where name.hasPrefix(prefix) {
            guard let pid = Int32(name.dropFirst(prefix.count).prefix(while: { $0 != "-" })), pid > 0 else { continue }
            if kill(pid, 0) != 0 && errno == ESRCH, unlink("\(directory)/\(name)") == 0 { removed.append(name) }
        }
        return removed
    }

    static func remove(_ path: String) throws(SystemError) {
        if unlink(path) != 0 && errno != ENOENT { throw SystemError(errno: errno, operation: "unlink") }
    }

    static func move(_ source: String, to destination: String) throws(SystemError) {
        guard rename(source, destination) == 0 else { throw SystemError(errno: errno, operation: "rename") }
    }

    /// The names in a directory (not `.` and `..`); empty when it does not exist.
    static func contentsOfDirectory(_ path: String) -> [String] {
        var names: [String] = []
        _ = scanEntries(in: path) { name in
            names.append(String(decoding: name, as: UTF8.self))
            return false
        }
        return names
    }

    /// Calls `stop` with the bytes of each name in `directory` (not `.` and `..`) until it returns true:
    /// true when it did, false when the names ran out, nil when the directory cannot be listed.
    static func scanEntries(in directory: String, until stop: (UnsafeRawBufferPointer) -> Bool) -> Bool? {
        guard let stream = opendir(directory) else { return nil }
        defer { closedir(stream) }
        let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name) ?? 19
        let nameCapacity = MemoryLayout<dirent>.size - nameOffset
        while true {
            errno = 0
            guard let entry = readdir(stream) else { return errno == 0 ? false : nil }
            let name = UnsafeRawPointer(entry) + nameOffset
            let length = strnlen(name.assumingMemoryBound(to: CChar.self), nameCapacity)
            let bytes = UnsafeRawBufferPointer(start: name, count: length)
            let dot = UInt8(ascii: ".")
            if length <= 2 && bytes.allSatisfy({ $0 == dot }) { continue }
            if stop(bytes) { return true }
        }
    }

    /// The owner of a path, used so that a store opened for another user (as root) leaves that user's files
    /// owned by that user.
    static func owner(ofPath path: String) -> (UserID, GroupID)? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return (info.st_uid, info.st_gid)
    }

    /// Closes a descriptor this module opened.
    static func close(_ descriptor: Int32) {
        _ = systemClose(descriptor)
    }

    /// Whether `path` names a directory (following links).
    static func isDirectory(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
    }

    /// Whether anything exists at `path` (following links).
    static func exists(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0
    }

    /// Whether `path` itself (not what it points to) is a symbolic link.
    static func isSymbolicLink(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFLNK
    }

    /// Where a link points, as written in it.
    static func readLink(_ path: String) throws(SystemError) -> String {
        try withLinkTarget(path) { String(decoding: $0, as: UTF8.self) }
    }

    /// Calls `body` with the bytes of the link's target, as written in it (at most `PATH_MAX` of them: a
    /// target that fills them may have been cut short).
    static func withLinkTarget<Result>(_ path: String, _ body: (UnsafeRawBufferPointer) -> Result)
        throws(SystemError) -> Result
    {
        let capacity = Int(PATH_MAX)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: capacity, alignment: 1)
        defer { buffer.deallocate() }
        let count = readlink(path, buffer.baseAddress!.assumingMemoryBound(to: CChar.self), capacity)
        guard count >= 0 else { throw SystemError(errno: errno, operation: "readlink") }
        return body(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
    }

    /// Whether this process may list and enter the directory at `path`.
    static func canSearch(_ path: String) -> Bool {
        access(path, R_OK | X_OK) == 0
    }
}

/// The running process.
enum CurrentProcess {
    static var id: Int32 { getpid() }
    /// The effective user id (0 for root).
    static var effectiveUserID: UserID { geteuid() }
    /// The real user id.
    static var realUserID: UserID { getuid() }

    /// The executable's path as the kernel reports it (`/proc/self/exe`), where Foundation finds the
    /// process's name and its main bundle; nil when it cannot be read, is longer than `PATH_MAX`, or is not
    /// valid UTF-8.
    static var executablePath: String? {
        let target = try? FileSystem.withLinkTarget("/proc/self/exe") { target -> String? in
            // A target that fills the buffer may have been cut short.
            guard target.count > 0, target.count < Int(PATH_MAX) else { return nil }
            return validUTF8Text(target, 0..<target.count)
        }
        return target ?? nil
    }
}

/// The bytes in `range` as a string when they are valid UTF-8; nil otherwise. Decoding repairs bad bytes,
/// so a repaired string would name something other than the bytes the system handed out.
func validUTF8Text(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> String? {
    let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[range]), as: UTF8.self)
    var position = range.lowerBound
    for unit in text.utf8 {
        guard position < range.upperBound, bytes[position] == unit else { return nil }
        position += 1
    }
    return position == range.upperBound ? text : nil
}

/// The text of an errno value.
func systemErrorText(_ code: Int32) -> String {
    String(cString: strerror(code))
}

/// `read(2)`, `write(2)` and `close(2)` under names that the wrappers' own `read` and `close` do not shadow.
private func systemRead(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int {
    read(descriptor, buffer, count)
}

private func systemClose(_ descriptor: Int32) -> Int32 {
    close(descriptor)
}

private func systemWrite(_ descriptor: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
    write(descriptor, buffer, count)
}

extension FileStamp {
    init(_ info: stat) {
        self.init(
            device: UInt64(info.st_dev), inode: UInt64(info.st_ino), size: Int64(info.st_size),
            modifiedSeconds: Int(info.st_mtim.tv_sec), modifiedNanoseconds: Int(info.st_mtim.tv_nsec))
    }
}

// MARK: Environment

/// One environment variable, read with `getenv`.
///
/// `ProcessInfo.processInfo.environment` builds a dictionary of the whole environment on every access;
/// opening a store asked it three times, a measurable part of opening a domain in a new process.
///
/// Names are `StaticString`s: a literal's bytes end in a NUL already, so `getenv` is given them as they are. A
/// `String` name of up to 15 bytes is stored inline and has no NUL after it: passing it to C copies it into a
/// new array first, and in a fresh process the first such copy costs the array type's metadata and code paged
/// in.
enum Environment {
    static func value(_ name: StaticString) -> String? {
        let value: UnsafeMutablePointer<CChar>?
        if name.hasPointerRepresentation {
            let count = name.utf8CodeUnitCount + 1
            value = UnsafeRawPointer(name.utf8Start).withMemoryRebound(to: CChar.self, capacity: count) { getenv($0) }
        } else {
            value = getenv(name.description)
        }
        guard let value else { return nil }
        return String(cString: value)
    }
}

// MARK: Users

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

// MARK: Threads

/// The mutex ``Lock`` and ``CriticalSection`` are built on: `pthread_mutex_t`, which ThreadSanitizer sees.
typealias SystemMutex = pthread_mutex_t

extension UnsafeMutablePointer where Pointee == SystemMutex {
    /// Initialises the (allocated, uninitialised) mutex.
    func initializeMutex() {
        initialize(to: pthread_mutex_t())
        pthread_mutex_init(self, nil)
    }

    func lockMutex() { pthread_mutex_lock(self) }
    func unlockMutex() { pthread_mutex_unlock(self) }

    /// Destroys the mutex and deinitialises the memory.
    func destroyMutex() {
        pthread_mutex_destroy(self)
        deinitialize(count: 1)
    }
}

/// A word of storage per thread, zero until a thread sets it.
struct ThreadLocalWord: @unchecked Sendable {
    // @unchecked: a pthread key is an index, the same for every thread; each thread's value is its own.
    private let key: pthread_key_t

    init() {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        self.key = key
    }

    var value: Int {
        get { Int(bitPattern: pthread_getspecific(key)) }
        nonmutating set { pthread_setspecific(key, UnsafeRawPointer(bitPattern: newValue)) }
    }
}

// MARK: Threads and waking

/// Runs `body` on a new detached thread (`name` is for platforms where Foundation's `Thread` makes it; Glibc's
/// module does not offer `pthread_setname_np`). False when the system made no thread (`EAGAIN`: a thread or memory limit); `body` then never runs.
///
/// The one thread the library makes itself, for the file watcher (see ``WatcherThread`` for why not
/// libdispatch). `pthread_create` is intercepted by ThreadSanitizer, so what the caller did before is seen
/// as happening before `body`.
func startDetachedThread(named name: String, _ body: @escaping @Sendable () -> Void) -> Bool {
    final class Start {
        let name: String
        let body: @Sendable () -> Void
        init(name: String, body: @escaping @Sendable () -> Void) {
            self.name = name
            self.body = body
        }
    }
    let start = Unmanaged.passRetained(Start(name: name, body: body))
    #if canImport(Glibc)
        var thread: pthread_t = 0
        let result = pthread_create(
            &thread, nil,
            { context in
                guard let context else { return nil }
                let start = Unmanaged<Start>.fromOpaque(context).takeRetainedValue()
                start.body()
                return nil
            }, start.toOpaque())
        if result != 0 {
            start.release()
            return false
        }
        pthread_detach(thread)
        return true
    #else
        let thread = Thread { start.takeRetainedValue().body() }
        thread.name = name
        thread.start()
        return true
    #endif
}

/// A pipe through which one thread wakes another that waits in ``waitForInput(on:wake:block:)``: both ends
/// non-blocking and closed on `exec`.
struct WakePipe: Sendable {
    let readEnd: Int32
    let writeEnd: Int32

    /// A new pipe; nil when the process has no descriptors left.
    static func make() -> WakePipe? {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { return nil }
        for end in ends {
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
        }
        return WakePipe(readEnd: ends[0], writeEnd: ends[1])
    }

    /// Wakes the waiting thread. A full pipe (never, with one byte per wait) is a pending wake-up already.
    func wake() {
        var byte: UInt8 = 1
        _ = systemWrite(writeEnd, &byte, 1)
    }

    /// Empties the pipe after a wake-up.
    func drain() {
        var bytes: (UInt64, UInt64) = (0, 0)
        while withUnsafeMutableBytes(of: &bytes, { systemRead(readEnd, $0.baseAddress!, $0.count) }) > 0 {}
    }

    func close() {
        _ = systemClose(readEnd)
        _ = systemClose(writeEnd)
    }
}

/// Waits until `descriptor` has input or `wake` is written to, and empties `wake`; with `block` false, only
/// looks. A negative `descriptor` is not waited on; without a `wake` pipe the wait ends every 10 ms, so that
/// the caller looks for new work. Returns whether `descriptor` has input.
func waitForInput(on descriptor: Int32, wake: WakePipe?, block: Bool) -> Bool {
    var descriptors = [
        pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0),
        pollfd(fd: wake?.readEnd ?? -1, events: Int16(POLLIN), revents: 0),
    ]
    let timeout: Int32 = block ? (wake == nil ? 10 : -1) : 0
    while poll(&descriptors, 2, timeout) < 0 {
        if errno != EINTR { return false }
    }
    if descriptors[1].revents != 0 { wake?.drain() }
    return descriptor >= 0 && descriptors[0].revents != 0
}

/// Sleeps the calling thread for `nanoseconds`, resuming the sleep when a signal interrupts it.
func sleepThread(nanoseconds total: Int) {
    var request = timespec(tv_sec: total / 1_000_000_000, tv_nsec: total % 1_000_000_000)
    var remaining = timespec()
    while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
}

// MARK: inotify

/// The kernel's notification of changes in watched directories: inotify, where it is compiled in (Linux,
/// unless LIVEDEFAULTS_POLLING_ONLY is defined). Without it, ``open()`` says why and the watcher polls.
package enum Inotify {
    #if os(Linux) && !LIVEDEFAULTS_POLLING_ONLY
        /// Whether inotify is compiled in (the `defaults doctor` command says so).
        package static let isCompiledIn = true
    #else
        package static let isCompiledIn = false
    #endif

    /// What happened to a name in a watched directory (or to the directory itself).
    struct Event {
        struct Kind: OptionSet {
            let rawValue: UInt32
            #if os(Linux) && !LIVEDEFAULTS_POLLING_ONLY
                static let closedAfterWriting = Kind(rawValue: UInt32(IN_CLOSE_WRITE))
                static let movedTo = Kind(rawValue: UInt32(IN_MOVED_TO))
                static let movedFrom = Kind(rawValue: UInt32(IN_MOVED_FROM))
                static let created = Kind(rawValue: UInt32(IN_CREATE))
                static let deleted = Kind(rawValue: UInt32(IN_DELETE))
                /// The watched directory itself was deleted or moved, or its watch removed.
                static let watchEnded = Kind(rawValue: UInt32(IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED))
                static let isDirectory = Kind(rawValue: UInt32(IN_ISDIR))
                /// The kernel's queue overflowed: events were lost.
                static let overflow = Kind(rawValue: UInt32(IN_Q_OVERFLOW))
            #else
                static let closedAfterWriting = Kind(rawValue: 1 << 0)
                static let movedTo = Kind(rawValue: 1 << 1)
                static let movedFrom = Kind(rawValue: 1 << 2)
                static let created = Kind(rawValue: 1 << 3)
                static let deleted = Kind(rawValue: 1 << 4)
                static let watchEnded = Kind(rawValue: 1 << 5)
                static let isDirectory = Kind(rawValue: 1 << 6)
                static let overflow = Kind(rawValue: 1 << 7)
            #endif
        }

        var watch: Int32
        var kind: Kind
        /// The name in the directory; empty for events of the directory itself.
        var name: String
    }

    /// A new non-blocking, close-on-exec instance, or why there is none.
    static func open() -> Result<Int32, SystemError> {
        #if os(Linux) && !LIVEDEFAULTS_POLLING_ONLY
            let descriptor = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
            return descriptor >= 0
                ? .success(descriptor) : .failure(SystemError(errno: errno, operation: "inotify_init1"))
        #else
            return .failure(SystemError(errno: ENOSYS, operation: "inotify (not compiled in)"))
        #endif
    }

    /// Watches a directory for every change the watcher follows (one mask for all watches: adding a watch
    /// for a path already watched replaces its mask).
    static func addWatch(_ descriptor: Int32, directory path: String) -> Result<Int32, SystemError> {
        #if os(Linux) && !LIVEDEFAULTS_POLLING_ONLY
            let mask = UInt32(
                IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | IN_DELETE_SELF
                    | IN_MOVE_SELF | IN_ONLYDIR)
            let watch = inotify_add_watch(descriptor, path, mask)
            return watch >= 0 ? .success(watch) : .failure(SystemError(errno: errno, operation: "inotify_add_watch"))
        #else
            return .failure(SystemError(errno: ENOSYS, operation: "inotify (not compiled in)"))
        #endif
    }

    static func removeWatch(_ descriptor: Int32, _ watch: Int32) {
        #if os(Linux) && !LIVEDEFAULTS_POLLING_ONLY
            inotify_rm_watch(descriptor, watch)
        #endif
    }

    /// Reads every event queued on the descriptor, in order, until none is left.
    ///
    /// The buffer is not zero-filled: only the bytes `read` returns are looked at (zeroing 64 KiB per batch
    /// cost more than the rest of handling it). An event whose name would run past what was read ends the
    /// batch (the kernel never splits an event), never a trap.
    static func readEvents(_ descriptor: Int32, _ body: (Event) -> Void) {
        #if os(Linux) && !LIVEDEFAULTS_POLLING_ONLY
            let bufferSize = 64 * 1024
            let header = MemoryLayout<inotify_event>.size
            let buffer = UnsafeMutableRawBufferPointer.allocate(
                byteCount: bufferSize, alignment: MemoryLayout<inotify_event>.alignment)
            defer { buffer.deallocate() }
            while true {
                let count = read(descriptor, buffer.baseAddress, bufferSize)
                if count <= 0 { break }
                var offset = 0
                while offset + header <= count {
                    let event = buffer.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
                    let nameStart = offset + header
                    let nameLength = Int(event.len)
                    guard nameLength <= count - nameStart else { break }
                    let name = String(
                        decoding: UnsafeRawBufferPointer(rebasing: buffer[nameStart..<(nameStart + nameLength)])
                            .prefix { $0 != 0 }, as: UTF8.self)
                    offset = nameStart + nameLength
                    body(Event(watch: event.wd, kind: Event.Kind(rawValue: event.mask), name: name))
                }
            }
        #endif
    }
}
