import ArgumentParser
import DefaultsToolSupport
import LiveDefaults

/// `defaults revert DOMAIN KEY [--to VERSION]`: a key's earlier value written back, from the change log.
struct Revert: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "revert",
        abstract: "Write back the value a key had before its latest change, or in a version defaults log names.",
        discussion: """
            The value comes from the domain's change log (defaults log): the key's value before its latest \
            change, or with --to VERSION its value in that version (defaults log --json names each version; a \
            key absent then is removed). It is written as a new change, checked against the published schema \
            as write is (--no-validate), and logged with --reason, else as "defaults revert" with the version. \
            A value the log holds only as its type and size (over 1 KiB), or that nobody recorded, cannot be \
            written back: exit status 1, nothing written. --wait as for write.
            """)

    @OptionGroup var host: HostOptions
    @OptionGroup var validation: ValidationOptions
    @OptionGroup var wait: WaitOptions
    @OptionGroup var reason: ReasonOptions
    @OptionGroup var secrets: SecretOptions
    @Option(help: ArgumentHelp("The version whose value to write back (defaults log names it).", valueName: "version"))
    var to: String?
    @Argument(help: "A domain name, -g, or a path to a plist file.") var domain: String
    @Argument(help: "The key to revert.") var key: String

    func validate() throws {
        if let to, DomainVersion(to) == nil {
            throw ValidationError("--to takes a version as defaults log names it: 16 hex digits")
        }
    }

    func run() {
        perform {
            let target = try DomainTarget(domain, host: host)
            let store = try target.store()
            // Opened first: a version no LiveDefaults writer made is logged before the log is read.
            let current = try store.contents()?[key]
            let changes = store.defaults.loggedChanges(inDomain: target.name, layer: target.layer, limit: .max)
            let source: RevertSource
            do {
                source = try RevertSource(changes: changes, key: key, at: to.flatMap(DomainVersion.init))
            } catch {
                throw ToolError("nothing written: \(error)")
            }
            let value: PropertyList?
            switch source.value {
            case nil: return emit("\(key) has not changed since version \(source.version): nothing written")
            case .absent?: value = nil
            case .value(let logged)?: value = logged
            case .summary(let type, let size)?:
                throw ToolError(
                    "nothing written: the change log holds \(key)'s value \(source.when) only as its type and size (\(type), \(size) bytes)"
                )
            case .unknown?:
                throw ToolError("nothing written: nobody recorded \(key)'s value \(source.when)")
            }
            let hidden = secrets.hides(key, schema: try? target.schema())
            let shown = ChangeLogText.describe(value.map { .value($0) } ?? .absent, hidden: hidden)
            guard value != current else { return emit("\(key) already is \(shown): nothing written") }
            if let value { try target.check([key: value], noValidate: validation.noValidate) }
            let before = try wait.versionBefore(in: store)
            var reason = reason
            if reason.reason == nil { reason.reason = "defaults revert: \(key) back to its value \(source.when)" }
            try reason.attributing { try store.change([key: value]) }
            emit("\(key) is \(shown) again (its value \(source.when))")
            try wait.waitForReaders(of: store, before: before)
        }
    }
}
