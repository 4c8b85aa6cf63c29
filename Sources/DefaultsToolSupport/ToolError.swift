import Foundation

/// A message for a person, printed by the `defaults` command as `defaults: <message>` with exit status 1.
public struct ToolError: Error, CustomStringConvertible, Sendable {
    /// The message, naming the domain, key, file or value involved.
    public var description: String

    /// A message for a person.
    public init(_ description: String) { self.description = description }
}

/// Prints the error as the `defaults` command prints every error (`defaults: <message>` on standard error)
/// and exits with status 1: the one way `defaults` and `defaults-sync` end on an error.
public func fail(_ error: any Error) -> Never {
    FileHandle.standardError.write(Data("defaults: \(error)\n".utf8))
    exit(1)
}

/// Like ``fail(_:)`` for a change that could not be written: ends the process without running its exit
/// handlers, among them the library's, which would write the pending change once more after the command said
/// it was not made (the exit status must say whether the change is on disk).
public func failAbandoningPendingWrites(_ error: any Error) -> Never {
    FileHandle.standardError.write(Data("defaults: \(error)\n".utf8))
    _exit(1)
}
