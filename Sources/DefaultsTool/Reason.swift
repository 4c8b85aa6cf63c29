import ArgumentParser
import LiveDefaults

/// `--reason TEXT` on every verb that changes a domain: why, recorded with the version written in the domain's
/// change log (`defaults log` shows it beside each change).
struct ReasonOptions: ParsableArguments {
    /// The longest reason the command takes, in UTF-8 bytes: what the change log keeps uncut.
    static var longest: Int { Defaults.longestReason }

    @Option(
        help: ArgumentHelp(
            "Why the change is made: recorded with it in the domain's change log (defaults log shows it); one line.",
            valueName: "text"))
    var reason: String?

    func validate() throws {
        if let reason { try Self.check(reason) }
    }

    /// Refuses a reason the log would not keep as it is: empty, longer than ``longest``, or of several lines.
    static func check(_ reason: String) throws(ValidationError) {
        if reason.allSatisfy(\.isWhitespace) { throw ValidationError("--reason needs a text") }
        if reason.utf8.count > longest {
            throw ValidationError("--reason takes at most \(longest) bytes (this one has \(reason.utf8.count))")
        }
        if reason.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            throw ValidationError("--reason is one line, without control characters")
        }
    }

    /// Runs `body` with the versions it writes logged with the reason, when one was given.
    func attributing(_ body: () throws -> Void) rethrows {
        guard let reason else { return try body() }
        try Defaults.attributingWrites(reason: reason, body)
    }
}
