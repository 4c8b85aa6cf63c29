/// One change of a key's value, as change streams report it.
///
/// A store's stream (``Defaults/changes()``) reports changes of the *effective* value, the one
/// ``Defaults/value(forKey:)`` returns: a write shadowed by a domain earlier in the search list is not a
/// change, and removing the shadowing value is one (to the value that shows through). A domain's stream
/// (``Defaults/changes(inDomain:)``) reports changes of that domain's own value, whatever the search list.
public struct KeyChange: Sendable, Hashable, CustomStringConvertible {
    /// Who made a change: the same type as the change log's (``ChangeOrigin``).
    @available(*, deprecated, renamed: "ChangeOrigin")
    public typealias Origin = ChangeOrigin

    /// The domain whose contents changed (for a volatile change, the volatile domain's name).
    public var domain: String
    /// The key.
    public var key: String
    /// The value before the change; nil when the key had none.
    public var oldValue: PropertyList?
    /// The value after the change; nil when the key has none now.
    public var newValue: PropertyList?
    /// Who made the change: ``ChangeOrigin/local`` for this process (``ChangeOrigin/fleet`` when it is the fleet
    /// agent applying etcd's change), ``ChangeOrigin/external`` for another process or a person editing the file.
    public var origin: ChangeOrigin
    /// Which changes came together: every change a store applied at once — one transaction
    /// (``Defaults/transaction(inDomain:layer:reason:_:)``), one version of a file that another process wrote, one new
    /// search list — carries the same number, and numbers grow in the order the store applied them. A change
    /// that a slow consumer's stream coalesced with a later one (same key) carries the later one's number.
    ///
    /// Not part of equality: two changes are equal when they change the same key the same way.
    public var batch: UInt64

    /// A change of `key` in `domain` from `oldValue` to `newValue` (nil: no value), made by `origin`, in `batch`.
    init(
        domain: String, key: String, oldValue: PropertyList?, newValue: PropertyList?, origin: ChangeOrigin,
        batch: UInt64 = 0
    ) {
        self.domain = domain
        self.key = key
        self.oldValue = oldValue
        self.newValue = newValue
        self.origin = origin
        self.batch = batch
    }

    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    public static func == (lhs: KeyChange, rhs: KeyChange) -> Bool {
        lhs.domain == rhs.domain && lhs.key == rhs.key && lhs.oldValue == rhs.oldValue
            && lhs.newValue == rhs.newValue && lhs.origin == rhs.origin
    }

    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    public func hash(into hasher: inout Hasher) {
        hasher.combine(domain)
        hasher.combine(key)
        hasher.combine(oldValue)
        hasher.combine(newValue)
        hasher.combine(origin)
    }

    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    public var description: String {
        "\(domain) \(key): \(oldValue.map { "\($0)" } ?? "(none)") → \(newValue.map { "\($0)" } ?? "(none)") [\(origin.rawValue)]"
    }
}
