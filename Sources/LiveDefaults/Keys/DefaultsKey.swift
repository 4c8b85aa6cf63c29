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
/// `DefaultsKey` is a subclass, so `.rateLimit` is found wherever a `DefaultsKey<Int>` is expected. Where a key
/// of any value type is meant (a list of keys of different types), the API names this class ``AnyDefaultsKey``.
public class DefaultsKeys: @unchecked Sendable {
    // @unchecked: every stored property is an immutable `let` of a Sendable type, in this class and in its
    // only subclass, which is final; the class is open to extension only, never to mutation.

    /// The key's name in the domain file.
    public let name: String
    /// The suite (a domain) the key lives in, or nil for the store's application domain.
    public let suite: String?
    /// What the key declares — type, default, range or choices, summary, secrecy — as published by
    /// ``Defaults/publishSchema(for:)`` and honoured by every writer.
    public let schema: KeySchema

    /// The key's slot in each store's lock-free read table (``ScalarReadSlots``): unique in the process, or
    /// -1 once ``ScalarReadSlots/capacity`` keys have been made (such keys read through the locked path).
    /// Declare keys once, as `static let`s, rather than making them per read.
    @usableFromInline let slot: Int

    /// Why a stored value is no valid value of the key (its type cannot read it, or it is out of range or
    /// not a choice), or nil: what typed writes refuse and typed reads never return.
    @usableFromInline let validate: @Sendable (PropertyList) -> SchemaViolation?

    /// The stored type every value of which the key accepts, when there is one: a key of `Int`, `Double`,
    /// `String`, `Bool`, `Date` or `Data` with no range or choices. A value of that type needs no call of
    /// ``validate`` (a generic closure, which costs more than a whole typed write's bookkeeping otherwise).
    let acceptsEveryValueOfType: PropertyListType?

    init(
        name: String, suite: String?, schema: KeySchema, slot: Int? = nil, valueType: Any.Type,
        validate: @escaping @Sendable (PropertyList) -> SchemaViolation?
    ) {
        self.name = name
        self.suite = suite
        self.schema = schema
        self.validate = validate
        let unconstrained = schema.minimum == nil && schema.maximum == nil && schema.choices == nil
        acceptsEveryValueOfType =
            unconstrained && StoredForm.readsEveryValueOfItsType(valueType) ? schema.type : nil
        let next = slot ?? DefaultsKeys.nextSlot.add(1, ordering: .relaxed).oldValue
        self.slot = next < ScalarReadSlots.capacity ? next : -1
    }

    private static let nextSlot = Atomic<Int>(0)

    /// Why the key refuses a stored value — its type cannot read it, it is out of range, not one of the
    /// choices — or nil when a typed read would return it. What a typed write checks; for code that handles
    /// keys of any type alike (a settings form, an import), with ``Defaults/trySet(propertyList:for:)``.
    public func violation(for value: PropertyList) -> SchemaViolation? {
        violation(value)
    }

    /// ``validate``, skipped for a value of the type the key accepts whole.
    @usableFromInline
    func violation(_ stored: PropertyList) -> SchemaViolation? {
        if let type = acceptsEveryValueOfType, PropertyListType(of: stored) == type { return nil }
        return validate(stored)
    }
}

/// A typed key of any value type: what a parameter that takes keys of different types takes
/// (``Defaults/snapshot(of:)-(AnyDefaultsKey...)``, ``Defaults/publishSchema(for:)``). The class
/// ``DefaultsKeys`` under the name of this role; `DefaultsKeys` is the namespace a program's keys are declared in.
public typealias AnyDefaultsKey = DefaultsKeys

/// A typed key: a name, a default value and, optionally, the suite that holds it, what it means, the range
/// or choices it accepts, and whether it is a secret.
///
/// The default is what a read returns when no domain in the search list has the key (registered
/// defaults included). A stored value the key cannot accept — of a type it cannot read, out of its range,
/// not one of an enumeration's cases — never reaches a typed reader: the read returns the last valid value
/// the store saw for the key (else the default) and the value is reported once. With an optional `Value`,
/// assigning nil removes the key.
///
/// ```swift
/// static let rateLimit = DefaultsKey<Int>(
///     "RateLimit", default: 100, summary: "Requests per minute per client.", range: 1...100_000)
/// static let theme = DefaultsKey<Theme>("Theme", default: .system)   // choices: Theme.allCases
/// static let token = DefaultsKey<String>("APIToken", default: "", isSecret: true)
/// ```
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
    ///   - summary: What the key means, in a sentence (`defaults describe`, the published schema).
    ///   - isSecret: Whether the value is a secret: never printed by the `defaults` command, logged, or
    ///     shown by the example server unless asked to show secrets.
    public init(
        _ name: String, default defaultValue: Value, suite: String? = nil, summary: String? = nil,
        isSecret: Bool = false
    ) {
        self.defaultValue = defaultValue
        let schema = Self.makeSchema(name, defaultValue, summary: summary, isSecret: isSecret, bounds: nil)
        super.init(
            name: name, suite: suite, schema: schema, valueType: Value.self,
            validate: Self.validator(schema, range: nil))
    }

    /// A key whose values must lie in `range`; a `nil` range accepts any.
    ///
    /// - Parameters:
    ///   - name: The key's name in the domain file.
    ///   - defaultValue: What reads return when no domain has a valid value.
    ///   - suite: A domain to read and write instead of the store's application domain.
    ///   - summary: What the key means, in a sentence.
    ///   - range: The values accepted; typed writes of others are refused, stored others read as the last
    ///     valid value.
    ///   - isSecret: Whether the value is a secret.
    public init(
        _ name: String, default defaultValue: Value, suite: String? = nil, summary: String? = nil,
        range: ClosedRange<Value>?, isSecret: Bool = false
    ) where Value: Comparable {
        self.defaultValue = defaultValue
        var bounds: (PropertyList?, PropertyList?)?
        var check: (@Sendable (Value) -> Bool)?
        if let range {
            let lower: PropertyList? = (try? range.lowerBound.propertyList()) ?? nil
            let upper: PropertyList? = (try? range.upperBound.propertyList()) ?? nil
            bounds = (lower, upper)
            check = { @Sendable (value: Value) -> Bool in range.contains(value) }
        }
        let schema = Self.makeSchema(name, defaultValue, summary: summary, isSecret: isSecret, bounds: bounds)
        super.init(
            name: name, suite: suite, schema: schema, valueType: Value.self,
            validate: Self.validator(schema, range: check)
        )
    }

    /// A key with a given read slot (tests: -1 is a key past ``ScalarReadSlots/capacity``).
    init(_ name: String, default defaultValue: Value, suite: String? = nil, slot: Int) {
        self.defaultValue = defaultValue
        let schema = Self.makeSchema(name, defaultValue, summary: nil, isSecret: false, bounds: nil)
        super.init(
            name: name, suite: suite, schema: schema, slot: slot, valueType: Value.self,
            validate: Self.validator(schema, range: nil))
    }

    /// The key's schema: its type from its default's stored form or from `Value` itself, an enumeration's
    /// cases as choices.
    private static func makeSchema(
        _ name: String, _ defaultValue: Value, summary: String?, isSecret: Bool,
        bounds: (PropertyList?, PropertyList?)?
    ) -> KeySchema {
        let stored = (try? defaultValue.propertyList()) ?? nil
        let choices = StoredForm.choices(of: Value.self)
        let type =
            StoredForm.type(of: Value.self) ?? stored.map(PropertyListType.init(of:))
            ?? choices?.first.map(PropertyListType.init(of:))
        return KeySchema(
            name: name, type: type, defaultValue: stored, summary: summary, minimum: bounds?.0,
            maximum: bounds?.1, choices: choices, isSecret: isSecret)
    }

    /// What the key accepts: what `Value` can read, within `range`.
    private static func validator(_ schema: KeySchema, range: (@Sendable (Value) -> Bool)?)
        -> @Sendable (PropertyList) -> SchemaViolation?
    {
        { stored in
            let value: Value
            if let exact = exactScalar(stored, as: Value.self) {
                value = exact
            } else if let converted = try? Value(propertyList: stored) {
                value = converted
            } else {
                let reason: SchemaViolation.Reason =
                    schema.choices != nil && schema.type?.accepts(stored) != false
                    ? .notAChoice : schema.type?.accepts(stored) == false ? .wrongType : .unreadable
                return SchemaViolation(
                    key: schema.name, value: stored, reason: reason, accepted: schema.accepted,
                    isSecret: schema.isSecret)
            }
            if let range, !range(value) {
                return SchemaViolation(
                    key: schema.name, value: stored, reason: .outOfRange, accepted: schema.accepted,
                    isSecret: schema.isSecret)
            }
            return nil
        }
    }
}

extension DefaultsKey where Value: ExpressibleByNilLiteral {
    /// An optional key whose default is nil.
    public convenience init(_ name: String, suite: String? = nil, summary: String? = nil, isSecret: Bool = false) {
        self.init(name, default: nil, suite: suite, summary: summary, isSecret: isSecret)
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
