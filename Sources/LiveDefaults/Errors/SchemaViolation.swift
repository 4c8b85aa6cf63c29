/// A value that a key's schema refuses, with what the key accepts.
public struct SchemaViolation: Error, Sendable, Hashable, CustomStringConvertible {
    /// Why the value was refused.
    public enum Reason: String, Sendable, Hashable {
        /// Of another type than the key's.
        case wrongType
        /// Outside the key's range.
        case outOfRange
        /// Not one of the key's choices.
        case notAChoice
        /// The key's type cannot read it (a typed key only: a dictionary that does not decode, say).
        case unreadable
    }

    /// The key.
    public var key: String
    /// The value refused.
    public var value: PropertyList
    /// Why.
    public var reason: Reason
    /// What the key accepts, in words (``KeySchema/accepted``).
    public var accepted: String
    /// Whether the value is a secret, so that messages leave it out.
    public var isSecret = false

    /// A violation.
    init(key: String, value: PropertyList, reason: Reason, accepted: String, isSecret: Bool = false) {
        self.key = key
        self.value = value
        self.reason = reason
        self.accepted = accepted
        self.isSecret = isSecret
    }

    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    public var description: String {
        let shown = isSecret ? "<secret>" : "\(value.typeName) \(value.plainText)"
        let why =
            switch reason {
            case .wrongType: "is of another type"
            case .outOfRange: "is out of range"
            case .notAChoice: "is not one of the choices"
            case .unreadable: "cannot be read as the key's type"
            }
        return "key \"\(PropertyList.printable(key))\" accepts \(accepted); the value (\(shown)) \(why)"
    }
}
