import ArgumentParser
import DefaultsToolSupport
import LiveDefaults

/// `defaults delete domain [key]`.
struct Delete: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete", abstract: "Delete a key, or a whole domain (its file).",
        discussion: """
            --for DURATION (90s, 30m, 2h, 1d) makes the deletion temporary: at its end the key (or every key of the \
            domain) comes back with its value before, unless it was set again meanwhile.
            """)

    @OptionGroup var host: HostOptions
    @OptionGroup var wait: WaitOptions
    @OptionGroup var reason: ReasonOptions
    @OptionGroup var temporary: TemporaryOptions
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
            }
            if let duration = try temporary.lasting() {
                // Key by key, in one version: a temporary change undoes keys, and the file stays to hold them.
                let edits: [String: PropertyList?] =
                    try key.map { [$0: PropertyList?.none] } ?? store.replacementEdits([:])
                try store.change(edits, lasting: duration)
            } else {
                if let key { try store.set(nil, forKey: key) } else { try store.replace(with: [:]) }
                try store.commit()
            }
            try wait.waitForReaders(of: store, before: before)
        }
    }
}
