/// A property backed by a typed key, read through the live store and written through to it.
///
/// ```swift
/// struct RequestHandler {                        // a struct: reads and writes need no `mutating`
///     @Default(.rateLimit) var rateLimit
/// }
///
/// final class Server {                           // a class
///     @Default(.maintenance) var maintenance
/// }
///
/// final class Shared: Sendable {                  // a Sendable class: wrapped properties are always `var`
///     let maintenance = Default(.maintenance)    // storage, so hold the wrapper itself as a `let`
///     var isDown: Bool { maintenance.wrappedValue }
/// }
///
/// actor Limiter {                                // an actor: the property is isolated like any other
///     @Default(.rateLimit) var rateLimit
///     func watch() async {
///         for await limit in $rateLimit.updates { apply(limit) }
///     }
/// }
/// ```
///
/// Every read returns the current effective value (another process's write included), every assignment
/// is visible at once and on disk within milliseconds. The projected value (`$rateLimit`) gives the typed
/// update stream, ``reset()`` and the key.
@propertyWrapper
public struct Default<Value: DefaultsSerializable>: Sendable {
    /// The key behind the property.
    public let key: DefaultsKey<Value>
    /// The store the property reads and writes.
    public let store: Defaults

    /// A property backed by a key, in ``Defaults/standard`` unless another store is given.
    public init(_ key: DefaultsKey<Value>, store: Defaults = .standard) {
        self.key = key
        self.store = store
    }

    /// The key's value in the store (its default when no domain has it); setting it writes the store.
    public var wrappedValue: Value {
        get { store[key] }
        nonmutating set { store[key] = newValue }
    }

    /// `$property`: the stream, the reset, the key.
    public var projectedValue: Default<Value> { self }

    /// The property's value now and after every change (see ``Defaults/updates(_:emitCurrentValue:)``).
    public var updates: DefaultsStream<Value> { store.updates(key) }

    /// The property's values after every change, with its value now first unless `emitCurrentValue` is false
    /// (see ``Defaults/updates(_:emitCurrentValue:)``).
    public func updates(emitCurrentValue: Bool) -> DefaultsStream<Value> {
        store.updates(key, emitCurrentValue: emitCurrentValue)
    }

    /// The property's values after every change, without the current value first. A stream of values, where the
    /// library's `changes` streams are of ``KeyChange``s: use `updates(emitCurrentValue: false)`.
    @available(*, deprecated, message: "use updates(emitCurrentValue: false): `changes` streams are of KeyChange")
    public var changes: DefaultsStream<Value> { updates(emitCurrentValue: false) }

    /// Removes the stored value, so the property reads a lower domain's value or the key's default.
    public func reset() { store.reset(key) }

    /// Whether nothing is stored for the key in the search list (the default applies).
    public var isDefault: Bool { store.isDefault(key) }
}
