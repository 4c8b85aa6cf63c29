public import Foundation
public import LiveDefaults

/// The input libFuzzer hands a target, as `Data` (a copy: a target may keep it).
public func fuzzInput(_ start: UnsafePointer<UInt8>?, _ count: Int) -> Data {
    guard let start, count > 0 else { return Data() }
    return Data(bytes: start, count: count)
}

/// Stops the run with a message when a property the target checks does not hold; libFuzzer records the
/// input as a crash.
public func require(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError("fuzz property failed: \(message())") }
}

/// How closely two dates must agree after a round trip.
public enum DatePrecision: Sendable {
    /// The same `Double` (binary files keep it), NaN equal to NaN.
    case exact
    /// The same whole second (XML keeps whole seconds, rounded down).
    case wholeSeconds
}

/// Whether two values are the same property list, with NaN equal to NaN (the synthesised `==` says no) and
/// dates compared at `precision`.
public func equivalent(_ a: PropertyList, _ b: PropertyList, dates precision: DatePrecision) -> Bool {
    switch (a, b) {
    case (.real(let x), .real(let y)):
        return x == y || (x.isNaN && y.isNaN)
    case (.date(let x), .date(let y)):
        let (u, v) = (x.timeIntervalSinceReferenceDate, y.timeIntervalSinceReferenceDate)
        if u.isNaN || v.isNaN { return u.isNaN && v.isNaN }
        switch precision {
        case .exact: return u == v
        case .wholeSeconds:
            return x.timeIntervalSince1970.rounded(.down) == y.timeIntervalSince1970.rounded(.down)
        }
    case (.array(let x), .array(let y)):
        return x.count == y.count && zip(x, y).allSatisfy { equivalent($0, $1, dates: precision) }
    case (.dictionary(let x), .dictionary(let y)):
        return x.count == y.count
            && x.allSatisfy { key, value in y[key].map { equivalent(value, $0, dates: precision) } ?? false }
    default:
        return a == b
    }
}

/// What old-style text makes of a value: it has no numbers, Booleans or dates, so those come back as the
/// strings the writer printed for them.
public func openStepProjection(_ value: PropertyList) -> PropertyList {
    switch value {
    case .string, .data: value
    case .integer, .real, .bool, .date: .string(value.openStepText().unquotedOpenStepScalar)
    case .array(let elements): .array(elements.map(openStepProjection))
    case .dictionary(let entries): .dictionary(entries.mapValues(openStepProjection))
    }
}

extension String {
    /// A scalar printed by the old-style writer with any quotes taken off (dates print quoted).
    fileprivate var unquotedOpenStepScalar: String {
        hasPrefix("\"") && hasSuffix("\"") && count >= 2 ? String(dropFirst().dropLast()) : self
    }
}

/// Whether any date in the value lies outside what XML can hold (years 0000–9999, finite).
public func hasDateBeyondXML(_ value: PropertyList) -> Bool {
    switch value {
    case .date(let date):
        let seconds = date.timeIntervalSince1970
        // 0000-01-01T00:00:00Z and 10000-01-01T00:00:00Z in seconds since 1970.
        return !(seconds >= -62_167_219_200 && seconds < 253_402_300_800)
    case .array(let elements): return elements.contains(where: hasDateBeyondXML)
    case .dictionary(let entries): return entries.values.contains(where: hasDateBeyondXML)
    default: return false
    }
}
