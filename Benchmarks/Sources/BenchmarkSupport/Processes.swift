import Foundation
import Glibc

/// Runs this executable again and returns its exit status.
@discardableResult
public func spawnSelf(_ arguments: [String], environment extra: [String: String]) -> Int32 {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    process.arguments = arguments
    process.environment = ProcessInfo.processInfo.environment.merging(extra) { $1 }
    do { try process.run() } catch { fatalError("cannot run myself: \(error)") }
    process.waitUntilExit()
    return process.terminationStatus
}

/// Runs this executable again and returns what it printed.
public func spawnSelfOutput(_ arguments: [String], addingEnvironment extra: [String: String] = [:]) -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    process.arguments = arguments
    if !extra.isEmpty {
        process.environment = ProcessInfo.processInfo.environment.merging(extra) { _, new in new }
    }
    let pipe = Pipe()
    process.standardOutput = pipe
    do { try process.run() } catch { fatalError("cannot run myself: \(error)") }
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return String(decoding: data, as: UTF8.self)
}

/// The temporary directory this benchmark runs in, as its `XDG_CONFIG_HOME`.
///
/// Foundation.UserDefaults reads `XDG_CONFIG_HOME` once, at start-up, so setting it later would send its
/// files into the real home. So the first call, in a process whose environment does not name the
/// directory yet (`variable` unset), creates one, runs this executable again with both variables pointing
/// at it, removes it when that child ends, and exits with the child's status; in the child (or when a script
/// already set both), it returns the directory.
public func temporaryConfigHome(variable: String, prefix: String) -> String {
    guard let directory = ProcessInfo.processInfo.environment[variable] else {
        let directory = NSTemporaryDirectory() + "\(prefix)-\(getpid())"
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            fatalError("cannot create \(directory): \(error)")
        }
        let status = spawnSelf(
            Array(CommandLine.arguments.dropFirst()), environment: ["XDG_CONFIG_HOME": directory, variable: directory])
        try? FileManager.default.removeItem(atPath: directory)
        exit(status)
    }
    guard ProcessInfo.processInfo.environment["XDG_CONFIG_HOME"] == directory else {
        fatalError("\(variable) is set but XDG_CONFIG_HOME is not the same directory")
    }
    return directory
}
