/// What went wrong between a domain and etcd: a code to switch on and a message a person can act on.
///
/// The type is a struct so that new codes can be added without breaking callers (as swift-system's `Errno`).
public struct FleetError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of failure.
    public enum Code: String, Sendable, Hashable {
        /// An option is missing or malformed (an endpoint, a TLS file, `--user`).
        case invalidOption
        /// No endpoint could be reached, or none answered in time.
        case unreachable
        /// etcd answered with an error (its gRPC status and message are in the description).
        case etcdError
        /// etcd refused the credentials, or a request that needs them.
        case authenticationFailed
        /// An answer of etcd could not be understood.
        case malformedResponse
        /// A revision asked for (a watch's start, a read of the past) was compacted away.
        case compacted
        /// The sync state file of a domain could not be read or written, or another agent holds it.
        case stateUnavailable
    }

    /// The kind of failure.
    public var code: Code
    /// What happened, naming the endpoint, file or key involved.
    public var message: String
    /// With ``Code-swift.enum/compacted``, when etcd said: the oldest revision it still holds (revisions
    /// before it were compacted away).
    public var compactRevision: Int64?

    /// An error of the given kind.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    public var description: String { message }
}
