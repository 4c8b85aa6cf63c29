import ArgumentParser
import DefaultsToolSupport
import LiveDefaults

/// `defaults rename domain old new`.
struct Rename: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "rename", abstract: "Rename a key, keeping its value.")

    @OptionGroup var host: HostOptions
    @Argument var domain: String
    @Argument(help: "The key's current name.") var old: String
    @Argument(help: "The key's new name.") var new: String

    func run() {
        perform {
            let store = try DomainTarget(domain, host: host).store()
            guard let value = try store.existingContents()[old] else {
                throw ToolError("Key \(old) does not exist in domain \(domain); leaving defaults unchanged")
            }
            try store.set(value, forKey: new)
            try store.set(nil, forKey: old)
            try store.commit()
        }
    }
}
