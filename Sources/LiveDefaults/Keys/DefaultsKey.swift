import Synchronization

/// The namespace for typed keys: declare yours as static members in an extension.
///
/// ```swift
/// extension DefaultsKeys {
///     static let rateLimit = DefaultsKey<Int>("RateLimit", default: 100)
///     static let theme = DefaultsKey<Theme>("Theme", default: .system)
///     static let lastSync = DefaultsKey<Date?>("LastSync", default: nil)
///     static let team = DefaultsKey<String>("Team", default: "core", suite: "com.example.shared")
/// }
///
/// defaults[.rateLimit] = 200
/// ```
///
/// `DefaultsKey` is a subclass, so `.rateLimit` is found wherever a `DefaultsKey<Int>` is expected.
public class DefaultsKeys: @unchecked Sendable {
    // @unchecked: every stored property is an immutable `let` of a Sendable type, in this class and in its
    // only subclass, which is final; the class is open to extension only, never to mutation.

    /// The key's name in the domain file.
    public let name: String
    /// The suite (a domain) the key lives in, or nil for the store's application domain.
    public let suite: String?

    /// The key's slot in each store's lock-free read table (``ScalarReadSlots``): unique in the process, or
    /// -1 once ``ScalarReadSlots/capacity`` keys have been made (such keys read through the locked path).
    /// Declare keys once, as `static let`s, rather than making them per read.
    @usableFromInline let slot: Int

    init(name: String, suite: String?, slot: Int? = nil) {
        self.name = name
        self.suite = suite
        let next = slot ?? DefaultsKeys.nextSlot.add(1, ordering: .relaxed).oldValue
        self.slot = next < ScalarReadSlots.capacity ? next : -1
    }

    private static let nextSlot = Atomic<Int>(0)
}

/// A typed key: a name, a default value and, optionally, the suite that holds it.
///
/// The default is what a read returns when no domain in the search list has the key (registered
/// defaults included) and when the stored value cannot be read as `Value` (which is logged). With an
/// optional `Value`, assigning nil removes the key.
public final class DefaultsKey<Value: DefaultsSerializable>: DefaultsKeys, @unchecked Sendable {
    /// What a read returns when nothing usable is stored.
    public let defaultValue: Value

    /// A key.
    ///
    /// - Parameters:
    ///   - name: The key's name in the domain file (`defaults read <domain> <name>`).
    ///   - defaultValue: What reads return when no domain has a usable value.
    ///   - suite: A domain to read and write instead of the store's application domain, for settings
    ///     shared between programs (`Defaults(suiteName:)` semantics).
    public init(_ name: String, default defaultValue: Value, suite: String? = nil) {
        self.defaultValue = defaultValue
        super.init(name: name, suite: suite)
    }

    /// A key with a given read slot (tests: -1 is a key past ``ScalarReadSlots/capacity``).
    init(_ name: String, default defaultValue: Value, suite: String? = nil, slot: Int) {
        self.defaultValue = defaultValue
        super.init(name: name, suite: suite, slot: slot)
    }
}

extension DefaultsKey where Value: ExpressibleByNilLiteral {
    /// An optional key whose default is nil.
    public convenience init(_ name: String, suite: String? = nil) {
        self.init(name, default: nil, suite: suite)
    }
}

extension DefaultsKeys: Hashable {
    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    public static func == (lhs: DefaultsKeys, rhs: DefaultsKeys) -> Bool {
        lhs.name == rhs.name && lhs.suite == rhs.suite && type(of: lhs) == type(of: rhs)
    }

    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    public func hash(into hasher: inout Hasher) {
        hasher.combine(name)
        hasher.combine(suite)
    }
}

extension DefaultsKeys: CustomStringConvertible {
    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    public var description: String { suite.map { "\($0) \(name)" } ?? name }
}
