import ArgumentParser
import DefaultsToolSupport
import LiveDefaults

/// `defaults read [domain [key]]`.
struct Read: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print every domain, one domain, or one key.",
        discussion: "Strings and numbers print bare, containers and domains as old-style property lists.")

    @OptionGroup var host: HostOptions
    @Flag(help: "Print JSON (dates as ISO 8601 strings, data as base64).") var json = false
    @Argument(help: "A domain name, -g for the global domain, or a path to a plist file.") var domain: String?
    @Argument(help: "A key in the domain.") var key: String?

    func run() {
        perform {
            guard let domain else {
                var all: [String: PropertyList] = [:]
                for name in DefaultsLocations.current.persistentDomainNames() {
                    let store = try DomainTarget(name, host: host).store()
                    if let contents = try store.contents() { all[name] = .dictionary(contents) }
                }
                print(.dictionary(all))
                return
            }
            let store = try DomainTarget(domain, host: host).store()
            let contents = try store.existingContents()
            guard let key else { return print(.dictionary(contents)) }
            guard let value = contents[key] else {
                throw ToolError("The domain/default pair of (\(domain), \(key)) does not exist")
            }
            print(value)
        }
    }

    private func print(_ value: PropertyList) {
        emit(json ? Output.json(Output.jsonObject(value)) : Output.text(value))
    }
}
