import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The processes of a machine, as the records that name one ask of them: whether it runs, and since when. What
/// a dead process left (a temporary file, a reader's announcement) is swept or skipped by this answer, so it is
/// a context's (``StorageContext/processes``): the system's for the real process, a test's own for the
/// processes a test stands for.
package protocol ProcessTable: Sendable {
    /// Whether a process with this id runs (or may: one of another user's answers `EPERM`, which is not "gone").
    func isRunning(_ pid: Int32) -> Bool
    /// When the process with this id started, in the kernel's clock ticks since boot (with the id, one process
    /// for good); nil when none runs.
    func startTime(of pid: Int32) -> UInt64?
}

/// The system's processes: `kill(pid, 0)` and `/proc/<pid>/stat`.
package struct SystemProcessTable: ProcessTable {
    /// The system's table.
    package init() {}

    package func isRunning(_ pid: Int32) -> Bool { CurrentProcess.isRunning(pid) }
    package func startTime(of pid: Int32) -> UInt64? { CurrentProcess.startTime(of: pid) }
}

/// The running process.
enum CurrentProcess {
    static var id: Int32 { getpid() }
    /// The effective user id (0 for root).
    static var effectiveUserID: UserID { geteuid() }
    /// The real user id.
    static var realUserID: UserID { getuid() }

    /// The working directory (`getcwd`), against which relative paths an operator gives are read; "/" when
    /// it cannot be had (removed, or longer than a path may be).
    static var workingDirectory: String {
        var buffer = [CChar](repeating: 0, count: 4097)
        guard getcwd(&buffer, buffer.count) != nil else { return "/" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Whether a process with this id runs (or may: one of another user's answers `EPERM`, which is not "gone").
    static func isRunning(_ pid: Int32) -> Bool {
        kill(pid, 0) == 0 || errno != ESRCH
    }

    /// The executable's path as the kernel reports it (`/proc/self/exe`), where Foundation finds the
    /// process's name and its main bundle; nil when it cannot be read, is longer than `PATH_MAX`, or is not
    /// valid UTF-8.
    static var executablePath: String? {
        let target = try? SystemFileSystem.shared.withLinkTarget("/proc/self/exe") { target -> String? in
            // A target that fills the buffer may have been cut short.
            guard target.count > 0, target.count < Int(PATH_MAX) else { return nil }
            return validUTF8Text(target, 0..<target.count)
        }
        return target ?? nil
    }

    /// When process `pid` started, in clock ticks since the machine booted (field 22 of `/proc/<pid>/stat`); nil
    /// when no such process runs (or its file cannot be read). With the id, it names one process for good: an id
    /// is reused, an id and a start time are not.
    static func startTime(of pid: Int32) -> UInt64? {
        guard pid > 0, let contents = try? SystemFileSystem.shared.read(atPath: "/proc/\(pid)/stat") else { return nil }
        return startTime(inStat: contents.data)
    }

    /// This process's start time (``startTime(of:)``), read once.
    static let startTime: UInt64 = startTime(of: getpid()) ?? 0

    /// The start time in the text of a `/proc/<pid>/stat` file; nil when it does not read as one. The command's
    /// name (field 2) is in parentheses and may hold spaces and parentheses itself: the fields are counted from
    /// the last `)`.
    static func startTime(inStat data: Data) -> UInt64? {
        guard data.count <= 4096, let close = data.lastIndex(of: UInt8(ascii: ")")) else { return nil }
        let fields = data[(close + 1)...].split(separator: UInt8(ascii: " "), omittingEmptySubsequences: true)
        // After the name: field 3 (the state) is the first; field 22 (the start time) the twentieth.
        guard fields.count >= 20 else { return nil }
        let field = fields[19]
        guard !field.isEmpty, field.count <= 20,
            field.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
        else { return nil }
        return UInt64(String(decoding: field, as: UTF8.self))
    }
}

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

    /// The variables whose names start with `prefix` and go on after it, by name without the prefix
    /// (`MYSERVER_RATE_LIMIT` → `RATE_LIMIT`), read from `environ` (not through `ProcessInfo`, whose first use
    /// costs a fresh process more than opening a store; nor a dictionary of the whole environment): a prefix's
    /// few variables cost a scan of the names.
    static func variables(withPrefix prefix: String) -> [String: String] {
        let prefixBytes = Array(prefix.utf8)
        var found: [String: String] = [:]
        guard !prefixBytes.isEmpty else { return found }
        // Optional on some C libraries, not on glibc's declaration.
        let table: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = environ
        guard var entry = table else { return found }
        while let pointer = entry.pointee {
            defer { entry += 1 }
            let matches = prefixBytes.indices.allSatisfy { UInt8(bitPattern: pointer[$0]) == prefixBytes[$0] }
            guard matches else { continue }
            // The rest of the entry: `NAME=value` less the prefix.
            let text = String(cString: pointer + prefixBytes.count)
            guard let equals = text.utf8.firstIndex(of: UInt8(ascii: "=")), equals != text.startIndex else { continue }
            found[String(text[..<equals])] = String(text[text.index(after: equals)...])
        }
        return found
    }
}
