import Foundation
import LiveDefaultsTesting
import TestProcesses
import Testing

@testable import LiveDefaults

/// Property-based agreement with an independent implementation: Python's `plistlib` reads what our writers
/// write, and our readers read what `plistlib` writes, for a few hundred generated values per run.
///
/// The generator is seeded; a failure names the seed and the value. Rerun one seed with
/// `LIVEDEFAULTS_PROPERTY_SEED=<seed> swift test --filter PlistlibAgreementTests`.
@Suite("Writers and readers agree with Python's plistlib", .blockingWork)
struct PlistlibAgreementTests {
    static let seed: UInt64 =
        ProcessInfo.processInfo.environment["LIVEDEFAULTS_PROPERTY_SEED"].flatMap { UInt64($0) }
        ?? UInt64.random(in: 0...UInt64.max)
    static let count = 150

    static func values() -> [PropertyList] {
        var generator = ValueGenerator(seed: seed)
        return (0..<count).map { _ in generator.domain() }
    }

    @Test("plistlib reads what we write", arguments: [PropertyList.Format.xml, .binary])
    func plistlibReadsOurs(_ format: PropertyList.Format) throws {
        let directory = TemporaryDirectory()
        let values = Self.values()
        for (index, value) in values.enumerated() {
            try value.encoded(as: format).write(to: URL(fileURLWithPath: directory.file("\(index).plist")))
        }
        let lines = try Self.python(
            """
            for i in range(\(values.count)):
                print(json.dumps(tag(plistlib.load(open(f'{d}/{i}.plist', 'rb')))))
            """, directory: directory.path)
        try #require(lines.count == values.count, "plistlib failed (seed \(Self.seed))")
        for (value, line) in zip(values, lines) {
            let read = try Self.untag(JSONSerialization.jsonObject(with: Data(line.utf8)))
            #expect(
                equivalent(read, value), "plistlib read \(format) differently (seed \(Self.seed)):\n\(value)\n\(read)")
        }
    }

    @Test("we read what plistlib writes", arguments: [PropertyList.Format.xml, .binary])
    func weReadPlistlibs(_ format: PropertyList.Format) throws {
        let directory = TemporaryDirectory()
        let values = Self.values()
        let tagged = try values.map {
            String(decoding: try JSONSerialization.data(withJSONObject: Self.tag($0)), as: UTF8.self)
        }
        try tagged.joined(separator: "\n").write(
            toFile: directory.file("values.jsonl"), atomically: true, encoding: .utf8)
        let pythonFormat = format == .xml ? "plistlib.FMT_XML" : "plistlib.FMT_BINARY"
        _ = try Self.python(
            """
            for i, line in enumerate(open(f'{d}/values.jsonl')):
                plistlib.dump(untag(json.loads(line)), open(f'{d}/{i}.plist', 'wb'), fmt=\(pythonFormat), sort_keys=False)
            print('done')
            """, directory: directory.path)
        for (index, value) in values.enumerated() {
            let data = try Data(contentsOf: URL(fileURLWithPath: directory.file("\(index).plist")))
            let (read, detected) = try PropertyList.decode(data)
            #expect(detected == format)
            #expect(
                equivalent(read, value),
                "we read plistlib's \(format) differently (seed \(Self.seed)):\n\(value)\n\(read)")
        }
    }

    // MARK: The tagged form both sides share (JSON cannot tell integers, reals, Booleans, dates and data apart)

    static func tag(_ value: PropertyList) -> Any {
        switch value {
        case .string(let string): ["str", string]
        case .integer(let integer): ["int", String(integer)]
        case .real(let real): ["real", real.isNaN ? "nan" : real.isInfinite ? (real < 0 ? "-inf" : "inf") : "\(real)"]
        case .bool(let bool): ["bool", bool]
        case .date(let date): ["date", String(Int(exactly: date.timeIntervalSince1970.rounded(.down)) ?? 0)]
        case .data(let data): ["data", data.base64EncodedString()]
        case .array(let elements): ["array", elements.map(tag)]
        case .dictionary(let entries): ["dict", entries.map { [$0.key, tag($0.value)] }]
        }
    }

    static func untag(_ object: Any) throws -> PropertyList {
        guard let pair = object as? [Any], pair.count == 2, let kind = pair[0] as? String else {
            throw PropertyListError.notAPropertyListValue("tagged \(object)")
        }
        let body = pair[1]
        switch kind {
        case "str": return .string(body as? String ?? "")
        case "int": return .integer(Int(body as? String ?? "") ?? 0)
        case "real": return .real(Double(body as? String ?? "") ?? .nan)
        case "bool": return .bool(body as? Bool ?? false)
        case "date": return .date(Date(timeIntervalSince1970: Double(Int(body as? String ?? "") ?? 0)))
        case "data": return .data(Data(base64Encoded: body as? String ?? "") ?? Data([0xBA, 0xD0]))
        case "array": return .array(try (body as? [Any] ?? []).map(untag))
        case "dict":
            var entries: [String: PropertyList] = [:]
            for entry in body as? [[Any]] ?? [] {
                guard entry.count == 2, let key = entry[0] as? String else { continue }
                entries[key] = try untag(entry[1])
            }
            return .dictionary(entries)
        default: throw PropertyListError.notAPropertyListValue("tag \(kind)")
        }
    }

    /// Reals compare by value with NaN equal to NaN; dates to the second (plistlib keeps microseconds in
    /// binary files and whole seconds in XML, and the generator makes whole seconds).
    func equivalent(_ a: PropertyList, _ b: PropertyList) -> Bool {
        switch (a, b) {
        case (.real(let x), .real(let y)): x == y || (x.isNaN && y.isNaN)
        case (.date(let x), .date(let y)):
            x.timeIntervalSince1970.rounded(.down) == y.timeIntervalSince1970.rounded(.down)
        case (.array(let x), .array(let y)): x.count == y.count && zip(x, y).allSatisfy { equivalent($0, $1) }
        case (.dictionary(let x), .dictionary(let y)):
            x.count == y.count && x.allSatisfy { key, value in y[key].map { equivalent(value, $0) } ?? false }
        default: a == b
        }
    }

    static func python(_ body: String, directory: String) throws -> [String] {
        let script = """
            import base64, datetime, json, math, plistlib, sys
            d = sys.argv[1]
            epoch = datetime.datetime(1970, 1, 1)
            def tag(v):
                if isinstance(v, bool): return ['bool', v]
                if isinstance(v, int): return ['int', str(v)]
                if isinstance(v, float): return ['real', 'nan' if math.isnan(v) else repr(v)]
                if isinstance(v, str): return ['str', v]
                if isinstance(v, bytes): return ['data', base64.b64encode(v).decode()]
                if isinstance(v, datetime.datetime): return ['date', str(math.floor((v - epoch).total_seconds()))]
                if isinstance(v, list): return ['array', [tag(x) for x in v]]
                if isinstance(v, dict): return ['dict', [[k, tag(x)] for k, x in v.items()]]
                raise TypeError(type(v))
            def untag(t):
                kind, body = t
                if kind == 'bool': return body
                if kind == 'int': return int(body)
                if kind == 'real': return float(body)
                if kind == 'str': return body
                if kind == 'data': return base64.b64decode(body)
                if kind == 'date': return epoch + datetime.timedelta(seconds=int(body))
                if kind == 'array': return [untag(x) for x in body]
                if kind == 'dict': return {k: untag(x) for k, x in body}
            \(body)
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script, directory]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
    }
}

/// Random property lists from a seed (SplitMix64): every kind of value, edge cases weighted up, nesting up
/// to four levels. Strings hold what XML can carry (no C0 controls but tab and newline; plistlib's XML writer
/// turns a carriage return into a newline, so none here: `HostileInputTests` covers it against our reader).
struct ValueGenerator {
    private var generator: SeededGenerator

    init(seed: UInt64) { generator = SeededGenerator(seed: seed) }

    mutating func next() -> UInt64 { generator.next() }

    mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }

    mutating func domain() -> PropertyList {
        var entries: [String: PropertyList] = [:]
        for _ in 0..<below(8) { entries[string()] = value(depth: 1) }
        return .dictionary(entries)
    }

    mutating func value(depth: Int) -> PropertyList {
        switch below(depth >= 4 ? 7 : 9) {
        case 0: return .string(string())
        case 1: return .integer(integer())
        case 2: return .real(real())
        case 3: return .bool(below(2) == 0)
        case 4:
            // Whole seconds in years 0001–9999 (plistlib's datetime starts at year 1).
            return .date(Date(timeIntervalSince1970: Double(Int(next() % 315_537_897_600) - 62_135_596_800)))
        case 5: return .data(Data((0..<below(40)).map { _ in UInt8(truncatingIfNeeded: next()) }))
        case 6: return .string("")
        case 7: return .array((0..<below(6)).map { _ in value(depth: depth + 1) })
        default:
            var entries: [String: PropertyList] = [:]
            for _ in 0..<below(6) { entries[string()] = value(depth: depth + 1) }
            return .dictionary(entries)
        }
    }

    mutating func integer() -> Int {
        switch below(5) {
        case 0: [Int.min, Int.max, 0, -1, 255, 256, 65_535, 65_536, 4_294_967_295, 4_294_967_296][below(10)]
        case 1: below(1000) - 500
        default: Int(bitPattern: UInt(next() >> UInt64(below(64))))
        }
    }

    mutating func real() -> Double {
        switch below(6) {
        case 0:
            [0.0, -0.0, .nan, .infinity, -.infinity, .leastNonzeroMagnitude, .greatestFiniteMagnitude, 0.1][below(8)]
        case 1: Double(below(2000) - 1000) / 8
        default: Double(bitPattern: next() & 0x7FEF_FFFF_FFFF_FFFF | (below(2) == 0 ? 0 : 0x8000_0000_0000_0000))
        }
    }

    private static let alphabet: [Unicode.Scalar] = Array(
        "abcXYZ019 _-./:$+<>&\"';=(){}\t\n#%é€ß中文\u{301}\u{FFFD}\u{7F}\u{85}\u{A0}\u{2028}🎉𝄞".unicodeScalars)

    mutating func string() -> String {
        var scalars = String.UnicodeScalarView()
        for _ in 0..<below(12) { scalars.append(Self.alphabet[below(Self.alphabet.count)]) }
        return String(scalars)
    }
}
