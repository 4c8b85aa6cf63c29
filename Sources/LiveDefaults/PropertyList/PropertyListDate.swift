import Foundation

/// Dates as text, converted by hand: no formatter, no locale, no allocation beyond the result.
///
/// Every function here is total. A `Date` can hold any `Double` — a binary property list may store NaN, an
/// infinity or 10^300 seconds — and none of them may trap a reader, a writer or `description`:
/// - ``parse(_:)`` reads the XML form, `YYYY-MM-DDTHH:MM:SSZ` with any number of fractional digits (the
///   first nine are used), for years 0000–9999; anything else is nil, never an overflow.
/// - ``xmlText(_:)`` writes the XML form for dates in ``xmlYears`` and is nil beyond them, so the XML writer
///   can report the value instead of writing text that no reader (ours, Foundation's, plistlib's) accepts.
/// - ``isoText(_:)`` and ``defaultsToolText(_:)`` always return text: beyond four-digit years the year is
///   written with a sign and as many digits as it needs (ISO 8601's expanded form), and a date too far out
///   for a calendar at all (not finite, or beyond ±2^63 seconds) as `<seconds> seconds since 1970`.
enum PropertyListDate {
    /// The years an XML `<date>` can hold: four digits, as Foundation, CF and Python's plistlib write them.
    static let xmlYears = 0...9999

    /// Parses the XML form, `YYYY-MM-DDTHH:MM:SSZ`, with optional fractional seconds.
    static func parse(_ raw: String) -> Date? {
        parse(raw, xml: true)
    }

    /// Parses what people type and `defaults read` prints: the XML form, `YYYY-MM-DD HH:MM:SS +HHMM` (any
    /// offset, with or without the colon, or none for UTC), `T` or a space between date and time, and a plain
    /// `YYYY-MM-DD` (midnight UTC).
    static func parseLenient(_ raw: String) -> Date? {
        parse(raw, xml: false)
    }

    private static func parse(_ raw: String, xml: Bool) -> Date? {
        let text = Array(XMLPropertyListReader.trimmed(raw).utf8)
        // At most nine digits are ever accumulated, so no value can overflow.
        func number(_ digits: ArraySlice<UInt8>) -> Int? {
            guard !digits.isEmpty, digits.count <= 9 else { return nil }
            var value = 0
            for byte in digits {
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
            return value
        }
        func byte(_ index: Int) -> UInt8? { index < text.count ? text[index] : nil }
        guard text.count >= 10, text[4] == UInt8(ascii: "-"), text[7] == UInt8(ascii: "-"),
            let year = number(text[0..<4]), let month = number(text[5..<7]), let day = number(text[8..<10]),
            (1...12).contains(month), (1...31).contains(day)
        else { return nil }
        // Four-digit years keep every product far inside Int.
        var seconds = daysFromCivil(year: year, month: month, day: day) * 86_400
        if text.count == 10 { return xml ? nil : Date(timeIntervalSince1970: Double(seconds)) }
        guard text.count >= 19, text[10] == UInt8(ascii: "T") || (!xml && text[10] == UInt8(ascii: " ")),
            text[13] == UInt8(ascii: ":"), text[16] == UInt8(ascii: ":"),
            let hour = number(text[11..<13]), let minute = number(text[14..<16]), let second = number(text[17..<19]),
            hour < 24, minute < 60, second < 61
        else { return nil }
        seconds += hour * 3_600 + minute * 60 + second
        var index = 19
        var fraction = 0.0
        if byte(index) == UInt8(ascii: ".") {
            let start = index + 1
            index = start
            while let digit = byte(index), digit >= UInt8(ascii: "0"), digit <= UInt8(ascii: "9") { index += 1 }
            // Any number of digits is accepted; the first nine are more than a Double keeps.
            let used = text[start..<min(index, start + 9)]
            guard let value = number(used) else { return nil }
            fraction = Double(value) / pow(10, Double(used.count))
        }
        if !xml { while byte(index) == UInt8(ascii: " ") { index += 1 } }
        switch byte(index) {
        case UInt8(ascii: "Z"):
            index += 1
        case UInt8(ascii: "+") where !xml, UInt8(ascii: "-") where !xml:
            let sign = text[index] == UInt8(ascii: "-") ? -1 : 1
            let hours = text[(index + 1)..<min(index + 3, text.count)]
            var minutesStart = index + 3
            if byte(minutesStart) == UInt8(ascii: ":") { minutesStart += 1 }
            let minutes = text[min(minutesStart, text.count)..<min(minutesStart + 2, text.count)]
            guard hours.count == 2, minutes.count == 2, let h = number(hours), let m = number(minutes), h < 24, m < 60
            else { return nil }
            seconds -= sign * (h * 3_600 + m * 60)
            index = minutesStart + 2
        case nil where !xml:
            break
        default:
            return nil
        }
        guard index == text.count else { return nil }
        return Date(timeIntervalSince1970: Double(seconds) + fraction)
    }

    /// The XML form, whole seconds rounded down as Foundation writes them; nil for a date outside ``xmlYears``.
    static func xmlText(_ date: Date) -> String? {
        guard let parts = Parts(date), xmlYears.contains(parts.year) else { return nil }
        return parts.text(dateTimeSeparator: "T", zone: "Z")
    }

    /// ISO 8601 text (`2026-11-22T14:16:04Z`) for any date.
    static func isoText(_ date: Date) -> String {
        guard let parts = Parts(date) else { return outOfCalendar(date) }
        return parts.text(dateTimeSeparator: "T", zone: "Z")
    }

    /// The form macOS `defaults read` prints (`2024-01-31 09:05:00 +0000`) for any date.
    static func defaultsToolText(_ date: Date) -> String {
        guard let parts = Parts(date) else { return outOfCalendar(date) }
        return parts.text(dateTimeSeparator: " ", zone: " +0000")
    }

    private static func outOfCalendar(_ date: Date) -> String {
        "\(date.timeIntervalSince1970) seconds since 1970"
    }

    /// A date broken into its UTC calendar fields, for any date whose whole seconds fit in `Int`.
    private struct Parts {
        var year, month, day, hour, minute, second: Int

        init?(_ date: Date) {
            let seconds = date.timeIntervalSince1970.rounded(.down)
            // `Int(exactly:)` is nil for NaN, the infinities and anything beyond ±2^63; below that bound every
            // step of the conversion stays far inside Int (days < 2^47).
            guard let total = Int(exactly: seconds) else { return nil }
            var days = total / 86_400
            var secondsOfDay = total % 86_400
            if secondsOfDay < 0 {
                secondsOfDay += 86_400
                days -= 1
            }
            (year, month, day) = PropertyListDate.civilFromDays(days)
            hour = secondsOfDay / 3_600
            minute = secondsOfDay / 60 % 60
            second = secondsOfDay % 60
        }

        func text(dateTimeSeparator: String, zone: String) -> String {
            func pad(_ value: Int, _ width: Int) -> String {
                let digits = String(value.magnitude)
                return String(repeating: "0", count: max(0, width - digits.count)) + digits
            }
            // ISO 8601's expanded years: a sign before years beyond 0000–9999.
            let yearText = year < 0 ? "-" + pad(year, 4) : year > 9999 ? "+" + pad(year, 4) : pad(year, 4)
            return "\(yearText)-\(pad(month, 2))-\(pad(day, 2))\(dateTimeSeparator)\(pad(hour, 2)):"
                + "\(pad(minute, 2)):\(pad(second, 2))\(zone)"
        }
    }

    // Howard Hinnant's days-from-civil algorithms (proleptic Gregorian calendar).
    private static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    private static func civilFromDays(_ days: Int) -> (Int, Int, Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
