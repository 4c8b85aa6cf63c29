import ArgumentParser
import DefaultsToolSupport
import LiveDefaults

/// `defaults read [domain [key]]`.
struct Read: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "read",
        abstract: "Print every domain, one domain, or one key.",
        discussion: """
            Strings and numbers print bare, containers and domains as old-style property lists. Keys the \
            domain's published schema marks secret print as <secret> unless --show-secrets is given. A key a \
            temporary change holds (write --for) is noted on standard error: when it ends, and the value it \
            returns to.
            """)

    @OptionGroup var host: HostOptions
    @OptionGroup var secrets: SecretOptions
    @Flag(help: "Print JSON (dates as ISO 8601 strings, data as base64).") var json = false
    @Argument(help: "A domain name, -g for the global domain, or a path to a plist file.") var domain: String?
    @Argument(help: "A key in the domain.") var key: String?

    func run() {
        perform {
            guard let domain else {
                var all: [String: PropertyList] = [:]
                for name in DefaultsLocations.current.persistentDomainNames() {
                    let target = try DomainTarget(name, host: host)
                    let store = try target.store()
                    if let contents = try store.contents() {
                        all[name] = .dictionary(secrets.masked(contents, schema: try? target.schema()))
                    }
                }
                print(.dictionary(all))
                return
            }
            let target = try DomainTarget(domain, host: host)
            let store = try target.store()
            let contents = try store.existingContents()
            // A schema that cannot be read does not stop a read; the secrets it would mark are then unknown.
            let schema = try? target.schema()
            guard let key else {
                print(.dictionary(secrets.masked(contents, schema: schema)))
                return store.notePendingReverts(of: nil, masking: secrets, schema: schema)
            }
            guard let value = contents[key] else {
                // A temporary deletion: when the key comes back.
                store.notePendingReverts(of: [key], masking: secrets, schema: schema)
                throw ToolError("The domain/default pair of (\(domain), \(key)) does not exist")
            }
            print(secrets.masked(value, key: key, schema: schema))
            store.notePendingReverts(of: [key], masking: secrets, schema: schema)
        }
    }

    private func print(_ value: PropertyList) {
        emit(json ? Output.json(Output.jsonObject(value)) : Output.text(value))
    }
}
