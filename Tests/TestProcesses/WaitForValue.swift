public import LiveDefaults

/// Waits until a key's effective value satisfies `predicate`, following `updates(forKey:)`.
public func waitForValue(
    _ defaults: Defaults, _ key: String, timeout: Duration = .seconds(30),
    _ predicate: @escaping @Sendable (PropertyList?) -> Bool
) async -> Bool {
    await withTimeout(timeout) {
        for await value in defaults.updates(forKey: key) where predicate(value) { return true }
        return false
    } ?? false
}
