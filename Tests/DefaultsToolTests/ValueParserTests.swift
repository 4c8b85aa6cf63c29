import DefaultsToolSupport
import Foundation
import LiveDefaults
import TestProcesses
import Testing

/// The value syntax of `defaults write`, as a library: the rules it shares with the rest of LiveDefaults.
@Suite("Value parser", .blockingWork)
struct ValueParserTests {
    @Test("-data: hexadecimal bytes, white space and angle brackets ignored, anything else refused")
    func hexData() {
        #expect(ValueParser.hexData("0fa1") == Data([0x0F, 0xA1]))
        #expect(ValueParser.hexData("<0F a1>") == Data([0x0F, 0xA1]))
        #expect(ValueParser.hexData("") == Data())
        #expect(ValueParser.hexData("0") == nil, "an odd number of digits")
        #expect(ValueParser.hexData("zz") == nil)
        #expect(ValueParser.hexData("0x12") == nil)
    }

    @Test("-bool takes the library's one rule for text that stands for a Boolean")
    func bool() throws {
        for (text, expected) in [
            ("YES", true), ("true", true), ("1", true), ("NO", false), ("False", false), ("0", false),
        ] {
            #expect(try ValueParser.parse(["-bool", text]) == .set(.bool(expected)))
            #expect(PropertyList.bool(fromText: text) == expected)
        }
        #expect(throws: ToolError.self) { try ValueParser.parse(["-bool", "maybe"]) }
    }
}
