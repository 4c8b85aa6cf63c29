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
