import ArgumentParser
import DefaultsToolSupport
import LiveDefaults

/// `defaults read-type domain key`.
struct ReadType: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "read-type",
        abstract: "Print the type of a key: Type is string|integer|float|boolean|date|data|array|dictionary.")

    @OptionGroup var host: HostOptions
    @Argument(help: "A domain name, -g, or a path to a plist file.") var domain: String
    @Argument(help: "A key in the domain.") var key: String

    func run() {
        perform {
            let contents = try DomainTarget(domain, host: host).store().existingContents()
            guard let value = contents[key] else {
                throw ToolError("The domain/default pair of (\(domain), \(key)) does not exist")
            }
            emit("Type is \(value.typeName)")
        }
    }
}
