import ArgumentParser
import DefaultsToolSupport
import Foundation
import LiveDefaults

/// `defaults merge domain plist|file|- [--delete key]…`: several keys changed as one version of the file.
struct Merge: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "merge",
        abstract: "Set every key of a dictionary (and remove keys) in one change, keeping the domain's other keys.",
        discussion: """
            defaults merge <domain> '{ UpstreamHost = db2; UpstreamPort = 5433; }'   old-style text
            defaults merge <domain> settings.plist                                  an XML, binary or old-style file
            defaults merge <domain> - < settings.plist                              standard input
            defaults merge <domain> '{ A = 1; }' --delete B --delete C               removals in the same change
            The changes are one transaction: a program watching the domain sees all of them at once, never some; \
            keys another program changes meanwhile are kept. Unlike import, which replaces the whole domain, \
            merge leaves every key it does not name as it is. The whole dictionary is checked against the \
            domain's published schema before anything is written: one value the schema refuses and nothing is \
            written (exit status 1); --no-validate writes it anyway. The command returns once the change is on disk. \
            --for DURATION (90s, 30m, 2h, 1d) makes the change temporary: at its end each key it changed returns \
            to its value before, unless it was changed again meanwhile.
            """)

    @OptionGroup var host: HostOptions
    @OptionGroup var validation: ValidationOptions
    @OptionGroup var wait: WaitOptions
    @OptionGroup var reason: ReasonOptions
    @OptionGroup var temporary: TemporaryOptions
    @Argument(help: "A domain name, -g, or a path to a plist file.") var domain: String
    @Argument(help: "A dictionary as old-style text, a plist file, or - for standard input.") var plist: String?
    @Option(name: .customLong("delete"), help: "A key to remove in the same change (repeatable).")
    var deletions: [String] = []

    func validate() throws {
        if plist == nil && deletions.isEmpty {
            throw ValidationError("merge needs a dictionary, a file, - or at least one --delete")
        }
    }

    func run() {
        perform(reason) {
            let contents = try plist.map(Self.dictionary(from:)) ?? [:]
            if let both = deletions.first(where: { contents[$0] != nil }) {
                throw ToolError("\(both) is both set and deleted; give it once")
            }
            let target = try DomainTarget(domain, host: host)
            try target.check(contents, noValidate: validation.noValidate)
            let store = try target.store()
            let before = try wait.versionBefore(in: store)
            // One transaction: the keys set and the keys removed are one version.
            var edits: [String: PropertyList?] = contents.mapValues { .some($0) }
            for key in deletions { edits[key] = .some(nil) }
            try store.change(edits, lasting: temporary.lasting())
            try wait.waitForReaders(of: store, before: before)
        }
    }

    /// The dictionary an argument gives: standard input for `-`, old-style text when it starts like a
    /// dictionary, else the file it names.
    static func dictionary(from argument: String) throws -> [String: PropertyList] {
        let source: String
        let value: PropertyList
        if argument == "-" || !argument.trimmingCharacters(in: .whitespacesAndNewlines).hasPrefix("{") {
            let data: Data
            if argument == "-" {
                source = "standard input"
                data = FileHandle.standardInput.readDataToEndOfFile()
            } else {
                source = argument
                do { data = try Data(contentsOf: URL(fileURLWithPath: argument)) } catch {
                    throw ToolError(
                        "cannot read \(argument): \(error.localizedDescription) (a dictionary is written { Key = value; })"
                    )
                }
            }
            do { value = try PropertyList.decode(data).value } catch {
                throw ToolError("\(source) is not a property list: \(error)")
            }
        } else {
            source = "the argument"
            do { value = try PropertyList(parsing: argument) } catch {
                throw ToolError("cannot parse \"\(argument)\" as a property list: \(error)")
            }
        }
        guard case .dictionary(let contents) = value else {
            throw ToolError("\(source) holds a \(value.typeName), not a dictionary")
        }
        return contents
    }
}
