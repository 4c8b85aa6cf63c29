import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The running process.
enum CurrentProcess {
    static var id: Int32 { getpid() }
    /// The effective user id (0 for root).
    static var effectiveUserID: UserID { geteuid() }
    /// The real user id.
    static var realUserID: UserID { getuid() }

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
}
