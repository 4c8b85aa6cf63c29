public import Configuration
public import LiveDefaults

/// One consistent view of a store's effective values (the whole search list at one moment), read as
/// configuration with ``LiveDefaultsConfigMapping``.
public struct LiveDefaultsSnapshot: ConfigSnapshot, CustomStringConvertible {
    /// The effective value of every top-level key when the snapshot was taken.
    public let values: [String: PropertyList]
    /// The provider's name, for swift-configuration's access reports.
    public let providerName: String
    let secretsSpecifier: SecretsSpecifier<String, any Sendable>

    /// A snapshot of `values`, with the provider's secrets rule.
    public init(
        values: [String: PropertyList], providerName: String,
        secretsSpecifier: SecretsSpecifier<String, any Sendable> = .none
    ) {
        self.values = values
        self.providerName = providerName
        self.secretsSpecifier = secretsSpecifier
    }

    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    public func value(forKey key: AbsoluteConfigKey, type: ConfigType) throws -> LookupResult {
        try LiveDefaultsProvider.lookup(key, type: type, secrets: secretsSpecifier) { values[$0] }
    }

    /// The provider's name and the number of top-level keys.
    public var description: String { "\(providerName)[\(values.count) values]" }
}
