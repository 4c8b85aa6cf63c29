import Foundation
import Glibc

/// Writes a file the way other programs write domain files: a temporary file beside it renamed over it
/// (LiveDefaults, editors, plistlib-based tools), or, `inPlace`, truncated and rewritten (Foundation on
/// Linux). No flush to disk: the benchmarks time what an observer sees, not durability.
///
/// - Returns: nil, or what failed.
@discardableResult
public func writeFile(_ path: String, _ data: Data, inPlace: Bool) -> String? {
    let target = inPlace ? path : path + ".bench-tmp"
    let descriptor = open(target, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    guard descriptor >= 0 else { return "open \(target): \(String(cString: strerror(errno)))" }
    _ = data.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
    close(descriptor)
    if !inPlace, rename(target, path) != 0 { return "rename: \(String(cString: strerror(errno)))" }
    return nil
}
