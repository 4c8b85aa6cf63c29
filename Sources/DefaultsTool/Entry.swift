import ArgumentParser

/// Rewrites macOS-style arguments into what the parser understands, then runs the command; the fleet's verbs
/// (`sync`, `history`, `rollback`, `hosts`, `rollout`) go to the `defaults-sync` program untouched (their options, `--help` included,
/// are its own).
@main
enum Entry {
    static func main() async {
        let arguments = ArgumentRewriter.rewrite(Array(CommandLine.arguments.dropFirst()))
        if let verb = arguments.first, SyncProgram.verbs.contains(verb) { SyncProgram.run(arguments) }
        await DefaultsCommand.main(arguments)
    }
}

/// macOS `defaults` takes its host selector before the verb (`defaults -currentHost read …`) and a global
/// domain selector that looks like an option (`defaults read -g`). Both are rewritten for the parser:
/// `-currentHost` and `-host <name>` move behind the verb as `--current-host` / `--host <name>`, and `-g` or
/// `-globalDomain` in the domain position becomes `NSGlobalDomain`.
enum ArgumentRewriter {
    static func rewrite(_ arguments: [String]) -> [String] {
        var hostOptions: [String] = []
        var rest = arguments[...]
        while let first = rest.first {
            if first == "-currentHost" {
                hostOptions.append("--current-host")
                rest = rest.dropFirst()
            } else if first == "-host", rest.count >= 2 {
                hostOptions += ["--host", rest[rest.startIndex + 1]]
                rest = rest.dropFirst(2)
            } else {
                break
            }
        }
        guard let verb = rest.first else { return hostOptions }
        var tail = Array(rest.dropFirst())
        if let domain = tail.first, domain == "-g" || domain == "-globalDomain" { tail[0] = "NSGlobalDomain" }
        if waitingVerbs.contains(verb) { tail = rewriteWait(tail, verb: verb) }
        return [verb] + hostOptions + tail
    }

    /// The verbs that take `--wait [SECONDS]`.
    static let waitingVerbs: Set<String> = ["write", "merge", "delete", "import", "edit", "revert"]

    /// `--wait [SECONDS]`, whose number may be left out, as the parser takes an option: `--wait=SECONDS` (5 when
    /// no number follows). For `write`, whose words after the domain are its value, only at the end.
    static func rewriteWait(_ tail: [String], verb: String) -> [String] {
        var tail = tail
        let candidates: [Int]
        if verb == "write" {
            // The last word, or the one before a number, or before --no-validate or --keep-refused.
            candidates = tail.indices.reversed().filter { $0 >= tail.count - 4 }
        } else {
            candidates = Array(tail.indices.reversed())
        }
        for index in candidates where tail[index] == "--wait" {
            let next = index + 1 < tail.count ? tail[index + 1] : nil
            if let next, let seconds = Double(next), seconds.isFinite {
                tail.replaceSubrange(index...(index + 1), with: ["--wait=\(next)"])
            } else {
                if verb == "write", next != nil, next != "--no-validate", next != "--keep-refused" { continue }
                tail[index] = "--wait=\(WaitOptions.defaultSeconds)"
            }
            break
        }
        return tail
    }
}
