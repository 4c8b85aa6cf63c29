import DefaultsToolSupport
import Foundation
import Testing

@testable import LiveDefaults

/// The text `defaults edit` shows and reads back (``EditText``): every type survives, errors say their line,
/// and the notes of a round replace those of the round before.
@Suite("defaults edit's text: typed, read back, annotated")
struct EditTextTests {
    static let date = Date(timeIntervalSince1970: 1_706_691_900)

    /// Values of every type, and strings that look like other types.
    static let values: [String: PropertyList] = [
        "String": "plain",
        "Quoted": "a \"quoted\" word\nand a line\tbreak ünï 😀",
        "LooksLikeAnInteger": "42",
        "LooksLikeABoolean": "true",
        "LooksLikeADate": "2024-01-31T09:05:00Z",
        "Empty": "",
        "Integer": -7,
        "Largest": .integer(.max),
        "Smallest": .integer(.min),
        "Real": 0.1,
        "WholeReal": 3.0,
        "Huge": 1e300,
        "Tiny": .real(.leastNonzeroMagnitude),
        "Infinite": .real(-.infinity),
        "True": true,
        "False": false,
        "Date": .date(date),
        "Data": .data(Data([0x00, 0x0A, 0xFF])),
        "NoData": .data(Data()),
        "Array": ["a", 2, 2.5, false, .date(date), ["nested", ["deeper": 1]]],
        "NoArray": [],
        "Dictionary": ["k": "v", "n": 1, "inner": ["x": [1, 2]]],
        "NoDictionary": [:],
        "with space": "key quoted",
        "42": "a key that is a number",
        "host:port": "a key bare old-style text reads back",
        "//NotAComment": "a key that would start a comment bare",
        "a\u{7F}b": "a key with DEL",
    ]

    @Test(
        "every type is read back as the type it was: an integer stays an integer, a string that looks like one a string"
    )
    func roundTrip() throws {
        let text = EditText.render(Self.values, header: ["a header"], schema: nil)
        let read = try #require(try EditText.parse(text))
        #expect(read == Self.values)
        #expect(text.hasPrefix("// a header\n{\n"))
        #expect(text.contains("    Integer = -7;"))
        #expect(text.contains("    LooksLikeAnInteger = \"42\";"))
        #expect(text.contains("    True = true;"))
        #expect(text.contains("    WholeReal = 3.0;"))
        #expect(text.contains("    Date = 2024-01-31T09:05:00Z;"))
        #expect(text.contains("    \"with space\" = \"key quoted\";"))
        #expect(text.contains("    host:port = "))
        #expect(text.contains("    \"//NotAComment\" = "))
    }

    @Test("a header line, a summary or a key holding a line break or DEL stays one comment line")
    func controlCharactersInComments() throws {
        let header = EditSession.header(domain: "com.example.api", path: "/tmp/odd\nname\u{7F}/a.plist")
        #expect(header.allSatisfy { line in !line.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F } })
        #expect(header.contains("File: /tmp/odd name /a.plist"))
        let schema = DomainSchema(
            domain: "com.example.api",
            keys: [KeySchema(name: "Mode", type: .string, summary: "First line\n}; Injected = 1;\u{7F}")])
        let text = EditText.render(["Mode": "fast"], header: header, schema: schema)
        #expect(text.contains("    // First line }; Injected = 1; . "))
        #expect(try EditText.parse(text) == ["Mode": "fast"])
    }

    @Test("a NaN reads back as a NaN; a value compares by the text it shows as")
    func notANumber() throws {
        let read = try #require(try EditText.parse("{ N = nan; P = +infinity; }"))
        guard case .real(let nan)? = read["N"] else { Issue.record("\(read)"); return }
        #expect(nan.isNaN)
        #expect(read["P"] == .real(.infinity))
        #expect(EditText.canonical(.real(.nan)) == EditText.canonical(read["N"]!))
        // A date shown to the second is the same edit as the date with its fraction.
        #expect(EditText.canonical(.date(Self.date.addingTimeInterval(0.25))) == EditText.canonical(.date(Self.date)))
    }

    @Test("bare words are typed by their form; anything else is a string")
    func bareWords() throws {
        let read = try #require(
            try EditText.parse(
                "{ A = fast; B = 007; C = -1.5e3; D = YES; E = 2024-01-31; F = 1-2; G = .5; H = +3; I = e5; }"))
        #expect(read["A"] == "fast")
        #expect(read["B"] == 7)
        #expect(read["C"] == -1500.0)
        #expect(read["D"] == true)
        #expect(read["E"] == .date(Date(timeIntervalSince1970: 1_706_659_200)))
        #expect(read["F"] == "1-2")
        #expect(read["G"] == 0.5)
        #expect(read["H"] == 3)
        #expect(read["I"] == "e5")
    }

    @Test("an integer beyond Int is an error at its line, not a string")
    func integerOverflow() {
        #expect(throws: EditText.Problem.self) { try EditText.parse("{\n  A = 1;\n  B = 99999999999999999999;\n}") }
        do {
            _ = try EditText.parse("{\n  A = 1;\n  B = 99999999999999999999;\n}")
        } catch {
            #expect(error.line == 3)
            #expect(error.message.contains("beyond the integers"))
        }
    }

    @Test("a syntax error names its line; the end of the text is the last line")
    func errorLines() {
        func line(_ text: String) -> Int? {
            do {
                _ = try EditText.parse(text)
                return nil
            } catch {
                return error.line
            }
        }
        #expect(line("// header\n{\n    A = 1;\n    B = 2\n    C = 3;\n}\n") == 5, "the ; is missing before C")
        #expect(line("{\n    A = (1, 2;\n}\n") == 2)
        #expect(line("{\n    A = 1;\n") == 2, "cut off: the last line")
        #expect(line("{ A = \"never closed; }") == 1)
    }

    @Test("a text of nothing but comments and space is an abort (nil); a value that is not a dictionary an error")
    func emptyAndNotADictionary() throws {
        #expect(try EditText.parse("") == nil)
        #expect(try EditText.parse("// only\n  // comments\n\n/* and */ ") == nil)
        #expect(try EditText.parse("{ }") == [:])
        #expect(throws: EditText.Problem.self) { try EditText.parse("(1, 2)") }
        #expect(throws: EditText.Problem.self) { try EditText.parse("{ (a) = 1; }") }
    }

    @Test("the schema's summary, range and default are beside each key; declared keys not set are there, commented out")
    func schemaBesideKeys() throws {
        let schema = DomainSchema(
            domain: "com.example.api",
            keys: [
                KeySchema(
                    name: "RateLimit", type: .integer, defaultValue: 100, summary: "Requests per minute.\nPer client",
                    minimum: 1, maximum: 100_000),
                KeySchema(name: "Theme", type: .string, choices: ["light", "dark"]),
                KeySchema(name: "Token", type: .string, isSecret: true),
                KeySchema(name: "Tags", type: .array),
            ])
        let text = EditText.render(
            ["RateLimit": 50, "Token": "s3cr3t", "Other": 1], header: [], schema: schema, hidden: ["Token"])
        #expect(
            text.contains(
                "    // Requests per minute. Per client. An integer in 1…100000 (default 100)\n    RateLimit = 50;"))
        #expect(!text.contains("s3cr3t"))
        #expect(text.contains("// Token: a secret, not shown"))
        #expect(text.contains("    // Theme = \"\";"))
        #expect(text.contains("    // Tags = ();"))
        // The commented-out lines are comments: the text reads as the values shown.
        #expect(try EditText.parse(text) == ["RateLimit": 50, "Other": 1])
    }

    @Test("a round's notes go at the top and above their key or line; the notes of the round before are removed")
    func annotate() {
        let saved = "//! an old note\n{\n    A = 1;\n    \"B c\" = 2;\n        //! old, indented\n}"
        let annotated = EditText.annotate(
            saved, general: ["Not applied:"], atKeys: ["B c": ["too big"]], atLines: [3: ["here"]])
        #expect(
            annotated == "//! Not applied:\n{\n    //! here\n    A = 1;\n    //! too big\n    \"B c\" = 2;\n}")
    }
}
