import Foundation
import FuzzSupport
import LiveDefaults

/// The Codable decoder from any value a reader accepts into representative types; a value it accepts must
/// encode again to one that decodes to the same thing.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard let (value, _) = try? PropertyList.decode(fuzzInput(start, count)) else { return 0 }
    // The whole value, and each entry of a dictionary (how typed keys meet stored values).
    var candidates = [value]
    if case .dictionary(let entries) = value { candidates += entries.values.prefix(16) }
    for candidate in candidates {
        roundTrip(Settings.self, candidate)
        roundTrip(Shape.self, candidate)
        roundTrip(Kind.self, candidate)
        roundTrip([Shape].self, candidate)
        roundTrip([String: [Int?]].self, candidate)
        roundTrip(Set<String>.self, candidate)
        roundTrip(Int8.self, candidate)
        roundTrip(UInt64.self, candidate)
        roundTrip(Int.self, candidate)
        roundTrip(Double.self, candidate)
        roundTrip(Float.self, candidate)
        roundTrip(Bool.self, candidate)
        roundTrip(String.self, candidate)
        roundTrip(Date.self, candidate)
        roundTrip(Data.self, candidate)
        roundTrip(URL.self, candidate)
        roundTrip(Int?.self, candidate)
    }
    return 0
}

private func roundTrip<T: Codable>(_ type: T.Type, _ value: PropertyList) {
    guard let decoded = try? PropertyListValueDecoder().decode(type, from: value) else { return }
    let encoded: PropertyList
    do { encoded = try PropertyListValueEncoder().encode(decoded) } catch {
        // A decoded value always has a property-list form.
        fatalError("\(T.self) decoded from \(value) but does not encode: \(error)")
    }
    let again: T
    do { again = try PropertyListValueDecoder().decode(type, from: encoded) } catch {
        fatalError("\(T.self) encoded as \(encoded) does not decode again: \(error)")
    }
    let reencoded = try? PropertyListValueEncoder().encode(again)
    require(
        reencoded.map { equivalent($0, encoded, dates: .exact) } ?? false,
        "\(T.self): \(value) → \(encoded) → \(String(describing: reencoded))")
}

struct Settings: Codable {
    var name: String
    var count: Int
    var ratio: Double?
    var enabled: Bool
    var tags: [String]
    var limits: [String: Int]
    var inner: Inner?
    var kind: Kind
    var when: Date?
    var blob: Data?
    var small: UInt8?

    struct Inner: Codable {
        var depth: Int16
        var children: [Inner]
    }
}

enum Kind: String, Codable {
    case light, dark, system
}

enum Shape: Codable {
    case circle(radius: Double)
    case rectangle(width: Int, height: Int)
    case named(String, tags: [String]?)
    case none
}
