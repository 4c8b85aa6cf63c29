import Glibc

/// One environment variable, read with `getenv`.
///
/// `ProcessInfo.processInfo.environment` builds a dictionary of the whole environment on every access;
/// opening a store asked it three times, a measurable part of opening a domain in a new process.
enum Environment {
    static func value(_ name: String) -> String? {
        guard let value = getenv(name) else { return nil }
        return String(cString: value)
    }
}
