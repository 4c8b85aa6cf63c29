import ArgumentParser
import DefaultsToolSupport
import Foundation
import LiveDefaults

#if Fleet
    import LiveDefaultsFleet
#endif

/// `defaults rollback DOMAIN KEY --to-revision REV --etcd URLS`: writes a key's value at an earlier revision back
/// as a new change.
struct RollbackCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rollback",
        abstract: "Write back the value a synced key had at an earlier etcd revision, as a new change.",
        discussion: """
            Every host's agent applies it as any change, and `defaults history` shows it. A key that did not \
            exist at that revision is deleted. The value is checked against the domain's schema published on \
            this machine (--no-validate skips it). A revision etcd compacted away is an error naming the oldest \
            it holds. See Docs/Fleet.md.
            """)

    @OptionGroup var connection: EtcdOptions
    @Option(help: "The etcd revision whose value to write back (see `defaults history`).") var toRevision: Int64
    @Flag(help: "Write the value even if this machine's published schema refuses it.") var noValidate = false
    @Argument(help: "The domain.") var domain: String
    @Argument(help: "The key.") var key: String

    func validate() throws {
        if connection.etcd == nil { throw ValidationError("Missing expected argument '--etcd <etcd>'") }
    }

    func run() async {
        #if Fleet
            do {
                try DomainName.validate(domain)
                let schema = noValidate ? nil : try SyncCommand.store(domain).publishedSchema(inDomain: domain)
                let outcome = try await FleetRollback.rollback(
                    domain: domain, key: key, toRevision: toRevision, etcd: try connection.connection(),
                    layout: FleetLayout(prefix: connection.prefix)
                ) { [key] value in
                    guard let value, let violation = schema?.violation(forKey: key, value: value) else { return nil }
                    return
                        "the schema published for \(domain) refuses revision \(toRevision)'s value (--no-validate writes it anyway): \(violation)"
                }
                switch outcome {
                case .written(let value?, let revision):
                    print(
                        "\(domain) \(key): revision \(toRevision)'s value \(Output.line(value)) written back as revision \(revision)"
                    )
                case .written(nil, let revision):
                    print("\(domain) \(key): absent at revision \(toRevision), so deleted as revision \(revision)")
                case .unchanged(let value?):
                    print(
                        "\(domain) \(key) already has revision \(toRevision)'s value \(Output.line(value)); nothing written"
                    )
                case .unchanged(nil):
                    print("\(domain) \(key) is already absent, as at revision \(toRevision); nothing written")
                }
            } catch {
                fail(error)
            }
        #else
            fail(builtWithoutFleet)
        #endif
    }
}
