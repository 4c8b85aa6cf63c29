public import Foundation
import Logging

/// Foundation's getters and setters, with Foundation's names and conversions.
extension Defaults {
    /// The effective value as a Foundation object (`String`, `Int`, `Double`, `Bool`, `Date`, `Data`,
    /// `[Any]`, `[String: Any]`), or nil when no domain in the search list has the key.
    public func object(forKey key: String) -> Any? {
        value(forKey: key)?.foundationValue
    }

    /// The string; for a number or a Boolean its string value, as today's Foundation returns it (`"42"`,
    /// `"12.34"`, `"1e+20"`, `"1"` for true, `"0"` for false); nil when the key is missing or holds anything
    /// else.
    ///
    /// The older class reference in Apple's archive says nil for numbers; Foundation on Apple platforms and on
    /// Linux has long returned the number's `stringValue`, and code ported from it expects that. Reals print as
    /// Swift prints a `Double` (a value stored from a `Float` prints with the `Double`'s digits).
    public func string(forKey key: String) -> String? {
        switch value(forKey: key) {
        case .string(let string): string
        case .integer(let integer): String(integer)
        case .real(let real): Coercion.string(real)
        case .bool(let bool): bool ? "1" : "0"
        default: nil
        }
    }

    /// The array, or nil when the key is missing or its value is not an array.
    public func array(forKey key: String) -> [Any]? {
        value(forKey: key)?.arrayValue?.map(\.foundationValue)
    }

    /// The dictionary, or nil when the key is missing or its value is not a dictionary.
    public func dictionary(forKey key: String) -> [String: Any]? {
        value(forKey: key)?.dictionaryValue?.mapValues(\.foundationValue)
    }

    /// The data, or nil when the key is missing or its value is not data.
    public func data(forKey key: String) -> Data? {
        value(forKey: key)?.dataValue
    }

    /// The array of strings, or nil when the key is missing, its value is not an array, or an element is
    /// not a string.
    public func stringArray(forKey key: String) -> [String]? {
        guard let elements = value(forKey: key)?.arrayValue else { return nil }
        var strings: [String] = []
        strings.reserveCapacity(elements.count)
        for element in elements {
            guard case .string(let string) = element else { return nil }
            strings.append(string)
        }
        return strings
    }

    /// The integer: an integer as is, a real truncated, a Boolean as 1 or 0, a string by its leading
    /// decimal digits (`"42"` is 42, `"42abc"` is 42, `"abc"` is 0); 0 when the key is missing or holds
    /// anything else.
    public func integer(forKey key: String) -> Int {
        switch scalarRead(forKey: key) {
        case .scalar(.integer, let payload): Int(Int64(bitPattern: payload))
        case .scalar(let tag, let payload): Coercion.integer(ScalarReadSlots.value(tag, payload))
        case .absent: Coercion.integer(nil)
        case .value(let value): Coercion.integer(value)
        }
    }

    /// The number as a `Float`; the conversions of ``double(forKey:)``.
    public func float(forKey key: String) -> Float {
        Float(double(forKey: key))
    }

    /// The number: a real as is, an integer converted, a Boolean as 1 or 0, a string by its leading decimal
    /// number (`"2.5"` is 2.5); 0 when the key is missing or holds anything else.
    public func double(forKey key: String) -> Double {
        switch scalarRead(forKey: key) {
        case .scalar(.real, let payload): Double(bitPattern: payload)
        case .scalar(let tag, let payload): Coercion.double(ScalarReadSlots.value(tag, payload))
        case .absent: Coercion.double(nil)
        case .value(let value): Coercion.double(value)
        }
    }

    /// The Boolean: a Boolean as is, a number when non-zero, a string that starts (after white space, a
    /// sign and zeros) with `Y`, `y`, `T`, `t` or a digit 1–9 (`"YES"`, `"true"`, `"1"`); false when the
    /// key is missing or holds anything else.
    public func bool(forKey key: String) -> Bool {
        switch scalarRead(forKey: key) {
        case .scalar(.bool, let payload): payload != 0
        case .scalar(let tag, let payload): Coercion.bool(ScalarReadSlots.value(tag, payload))
        case .absent: Coercion.bool(nil)
        case .value(let value): Coercion.bool(value)
        }
    }

    /// What the scalar getters convert: a cached scalar (or missing) key as its bucket holds it, so that a
    /// value of the getter's own type is taken without a `PropertyList` made; a key the missing-key filter
    /// rules out, which the getter answers with its default as a constant (`Coercion.integer(nil)` folded
    /// to 0: passing a nil through `.value` made a missing key's read a third slower); else the value itself —
    /// a box's, or the view's under the lock.
    private enum ScalarRead {
        case scalar(ScalarReadSlots.Tag, UInt64)
        case absent
        case value(PropertyList?)
    }

    /// One probe of the value cache, then the filter, then the lock (``value(forKey:)``'s order, under the same
    /// ``ViewGate``).
    @inline(__always)
    private func scalarRead(forKey key: String) -> ScalarRead {
        let hash = FastHash.hash(key)
        let fast: ScalarRead? = viewGate.read {
            switch valueCache.raw(key, hash: hash) {
            case .scalar(let tag, let payload): return .scalar(tag, payload)
            case .boxed(let value): return .value(value)
            case .unknown: return missingKeys.mayContain(hash: hash) ? nil : .absent
            }
        }.flatMap { $0 }
        return fast ?? .value(lockedValue(forKey: key, hash: hash))
    }

    /// The URL: a string is a file path (`~` expanded; a string with a scheme, `https://…`, is that URL);
    /// data is a keyed archive of a URL, as ``set(_:forKey:)-(URL?,_)`` writes non-file URLs.
    public func url(forKey key: String) -> URL? {
        Coercion.url(value(forKey: key))
    }

    // MARK: Setters

    /// Stores a property-list value, or removes the key when `value` is nil. A forced key is not changed
    /// (the refusal is logged; use ``trySet(_:forKey:)-(PropertyList?,_)`` to get the error).
    public func set(_ value: PropertyList?, forKey key: String) {
        report { () throws(DefaultsError) in try trySet(value, forKey: key) }
    }

    /// Stores any property-list value (`String`, numbers, `Bool`, `Date`, `Data`, arrays and dictionaries of
    /// them, `URL`), or removes the key for nil. Other values are refused and logged, where Foundation would
    /// trap; use ``trySet(_:forKey:)-(Any?,_)`` to get the error. A `Date` or `Data` is stored as such.
    public func set(_ value: Any?, forKey key: String) {
        report { () throws(DefaultsError) in try trySet(value, forKey: key) }
    }

    /// Stores an integer.
    public func set(_ value: Int, forKey key: String) { set(PropertyList.integer(value), forKey: key) }
    /// Stores a `Float` as a real holding the `Float`'s exact value, and reads back as Foundation's does:
    /// `Float(12.34)` gives the string "12.34" and the double 12.34000015258789 (`Double(Float(12.34))`).
    public func set(_ value: Float, forKey key: String) { set(PropertyList.real(Double(value)), forKey: key) }
    /// Stores a `Double`.
    public func set(_ value: Double, forKey key: String) { set(PropertyList.real(value), forKey: key) }
    /// Stores a Boolean.
    public func set(_ value: Bool, forKey key: String) { set(PropertyList.bool(value), forKey: key) }
    /// Stores a string.
    public func set(_ value: String, forKey key: String) { set(PropertyList.string(value), forKey: key) }

    /// Stores a URL as Foundation does: a file URL as its path, abbreviated with `~` when it lies in the home
    /// directory; any other URL as a keyed archive. nil removes the key.
    public func set(_ url: URL?, forKey key: String) {
        guard let url else { return set(PropertyList?.none, forKey: key) }
        set(Coercion.storedValue(for: url), forKey: key)
    }

    /// Removes a key from the application domain. A value for the key in another domain of the search list
    /// (arguments, global, registration) then shows through.
    public func removeObject(forKey key: String) {
        set(PropertyList?.none, forKey: key)
    }

    @usableFromInline
    func report(_ body: () throws(DefaultsError) -> Void) {
        do {
            try body()
        } catch {
            record(error)
        }
    }
}
