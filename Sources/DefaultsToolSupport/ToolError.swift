/// A message for a person, printed by the `defaults` command as `defaults: <message>` with exit status 1.
public struct ToolError: Error, CustomStringConvertible, Sendable {
    /// The message, naming the domain, key, file or value involved.
    public var description: String

    /// A message for a person.
    public init(_ description: String) { self.description = description }
}
