/// How long a temporary change lasts, as `--for` takes it and the command shows it: whole numbers with a unit
/// each, largest first — `90s`, `30m`, `2h`, `1d`, `1h30m`.
public enum DurationText {
    /// The longest temporary change: a year and a day. A longer one is a permanent change written with a date.
    public static let longestSeconds = 366 * 86_400

    /// The units, largest first, with their seconds.
    private static let units: [(letter: Character, seconds: Int)] = [("d", 86_400), ("h", 3_600), ("m", 60), ("s", 1)]

    /// The duration `text` spells; a message saying what is wrong otherwise (never a trap: every number is
    /// bounded before it is multiplied).
    public static func parse(_ text: String) throws(ToolError) -> Duration {
        let usage = "a duration is a number and a unit, largest first: 90s, 30m, 2h, 1d, 1h30m"
        guard !text.isEmpty else { throw ToolError("--for needs a duration (\(usage))") }
        var total = 0
        var digits = ""
        var lastUnit = -1
        for character in text {
            if let digit = character.wholeNumberValue, character.isASCII {
                guard digits.count < 9 else { throw ToolError("--for \(text): the number is too large (\(usage))") }
                digits.append(Character(String(digit)))
                continue
            }
            guard let index = units.firstIndex(where: { $0.letter == character }) else {
                throw ToolError("--for \(text): \"\(character)\" is not a unit (\(usage))")
            }
            guard let number = Int(digits) else {
                throw ToolError("--for \(text): a number comes before each unit (\(usage))")
            }
            guard index > lastUnit else {
                throw ToolError("--for \(text): the units come largest first, each once (\(usage))")
            }
            lastUnit = index
            // At most 9 digits times 86,400 and four terms: far inside Int, still checked.
            let (product, overflow) = number.multipliedReportingOverflow(by: units[index].seconds)
            let (sum, overflowAgain) = total.addingReportingOverflow(product)
            guard !overflow, !overflowAgain, sum <= longestSeconds else {
                throw ToolError("--for \(text): longer than the longest temporary change, 366 days")
            }
            total = sum
            digits = ""
        }
        guard digits.isEmpty else { throw ToolError("--for \(text): the last number has no unit (\(usage))") }
        guard total > 0 else { throw ToolError("--for \(text): a temporary change lasts longer than nothing") }
        return .seconds(total)
    }

    /// `duration` in the same spelling, to the second (`1h30m`, `45s`; `0s` for none or less).
    public static func describe(_ duration: Duration) -> String {
        var seconds = max(0, duration.components.seconds)
        guard seconds > 0 else { return "0s" }
        var text = ""
        for unit in units {
            let count = seconds / Int64(unit.seconds)
            if count > 0 { text += "\(count)\(unit.letter)" }
            seconds %= Int64(unit.seconds)
        }
        return text
    }
}
