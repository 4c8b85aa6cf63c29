import ArgumentParser
import DefaultsToolSupport
import LiveDefaults

/// `defaults delete domain [key]`.
struct Delete: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete", abstract: "Delete a key, or a whole domain (its file).")

    @OptionGroup var host: HostOptions
    @OptionGroup var wait: WaitOptions
    @OptionGroup var reason: ReasonOptions
    @Argument var domain: String
    @Argument(help: "The key to delete; without it, the whole domain goes.") var key: String?

    func run() {
        perform(reason) {
            let store = try DomainTarget(domain, host: host).store()
            let before = try wait.versionBefore(in: store)
            guard let contents = try store.contents() else { throw ToolError("Domain (\(domain)) not found.") }
            if let key {
                guard contents[key] != nil else {
                    throw ToolError("Key \(key) does not exist in domain \(domain); leaving defaults unchanged")
                }
                try store.set(nil, forKey: key)
            } else {
                try store.replace(with: [:])
            }
            try store.commit()
            try wait.waitForReaders(of: store, before: before)
        }
    }
}
