import ArgumentParser
import DefaultsToolSupport
import Foundation
import LiveDefaults

/// `defaults import domain path|-`.
struct Import: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Replace a domain with a property-list file (XML, binary or old-style), or standard input with -.",
        discussion: """
            The whole file is checked against the domain's published schema before any of it is written: one \
            value the schema refuses and nothing is written (exit status 1); --no-validate writes it anyway.
            """)

    @OptionGroup var host: HostOptions
    @OptionGroup var validation: ValidationOptions
    @OptionGroup var wait: WaitOptions
    @OptionGroup var reason: ReasonOptions
    @Argument var domain: String
    @Argument(help: "A plist file, or - for standard input.") var path: String

    func run() {
        perform(reason) {
            let data: Data
            if path == "-" {
                data = FileHandle.standardInput.readDataToEndOfFile()
            } else {
                do { data = try Data(contentsOf: URL(fileURLWithPath: path)) } catch {
                    throw ToolError("cannot read \(path): \(error.localizedDescription)")
                }
            }
            let value: PropertyList
            do { value = try PropertyList.decode(data).value } catch {
                throw ToolError("\(path == "-" ? "standard input" : path) is not a property list: \(error)")
            }
            guard case .dictionary(let contents) = value else {
                throw ToolError("\(path == "-" ? "standard input" : path) holds a \(value.typeName), not a dictionary")
            }
            let target = try DomainTarget(domain, host: host)
            try target.check(contents, noValidate: validation.noValidate)
            let store = try target.store()
            let before = try wait.versionBefore(in: store)
            try store.replace(with: contents)
            try store.commit()
            try wait.waitForReaders(of: store, before: before)
        }
    }
}
