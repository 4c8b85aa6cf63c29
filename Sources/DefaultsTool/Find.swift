import ArgumentParser
import DefaultsToolSupport
import Foundation
import LiveDefaults

/// `defaults find word`.
struct Find: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "find",
        abstract: "Find domains, keys and values containing a word (ignoring case).")

    @OptionGroup var host: HostOptions
    @Argument(help: "The word to look for.") var word: String

    func run() {
        perform {
            var found = false
            for name in DefaultsLocations.current.persistentDomainNames() {
                guard let contents = try DomainTarget(name, host: host).store().contents() else { continue }
                let matches =
                    name.localizedCaseInsensitiveContains(word)
                    ? contents
                    : contents.filter { key, value in
                        key.localizedCaseInsensitiveContains(word) || Self.contains(value, word)
                    }
                guard !matches.isEmpty else { continue }
                found = true
                emit("Found \(matches.count) keys in domain '\(name)': \(Output.text(.dictionary(matches)))")
            }
            if !found { emit("No domain, key, nor value containing '\(word)'") }
        }
    }

    static func contains(_ value: PropertyList, _ word: String) -> Bool {
        switch value {
        case .array(let elements): elements.contains { contains($0, word) }
        case .dictionary(let entries):
            entries.contains { $0.key.localizedCaseInsensitiveContains(word) || contains($0.value, word) }
        default: Output.text(value).localizedCaseInsensitiveContains(word)
        }
    }
}
