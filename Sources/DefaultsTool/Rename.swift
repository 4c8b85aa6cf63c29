import ArgumentParser
import DefaultsToolSupport
import LiveDefaults

/// `defaults rename domain old new`.
struct Rename: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "rename", abstract: "Rename a key, keeping its value.")

    @OptionGroup var host: HostOptions
    @OptionGroup var reason: ReasonOptions
    @Argument var domain: String
    @Argument(help: "The key's current name.") var old: String
    @Argument(help: "The key's new name.") var new: String

    func run() {
        perform(reason) {
            let store = try DomainTarget(domain, host: host).store()
            guard let value = try store.existingContents()[old] else {
                throw ToolError("Key \(old) does not exist in domain \(domain); leaving defaults unchanged")
            }
            // One version: a program reading the domain never sees both names, or neither. (Built key by key: a
            // literal with the same name twice would trap.)
            var edits: [String: PropertyList?] = [old: nil]
            edits[new] = .some(value)
            try store.change(edits)
        }
    }
}
