import ArgumentParser
import DefaultsToolSupport
import Foundation
import LiveDefaults

/// `defaults export domain path|-`.
struct Export: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write a domain to a file as an XML property list, or to standard output with -.")

    @OptionGroup var host: HostOptions
    @OptionGroup var secrets: SecretOptions
    @Flag(help: "Write JSON instead of XML.") var json = false
    @Argument var domain: String
    @Argument(help: "The file to write, or - for standard output.") var path: String

    func run() {
        perform {
            let target = try DomainTarget(domain, host: host)
            // Keys the published schema marks secret are written as <secret> unless --show-secrets is given.
            let contents = secrets.masked(try target.store().existingContents(), schema: try? target.schema())
            let data: Data
            if json {
                data = Data((Output.json(Output.jsonObject(.dictionary(contents))) + "\n").utf8)
            } else {
                do { data = try PropertyList.dictionary(contents).encoded(as: .xml) } catch {
                    throw ToolError("cannot export \(domain) as XML: \(error); --json can show it")
                }
            }
            if path == "-" {
                FileHandle.standardOutput.write(data)
            } else {
                do { try data.write(to: URL(fileURLWithPath: path), options: .atomic) } catch {
                    throw ToolError("cannot write \(path): \(error.localizedDescription)")
                }
            }
        }
    }
}
