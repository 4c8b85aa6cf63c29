import ArgumentParser

/// `defaults`: read and write LiveDefaults (and Foundation.UserDefaults) domains from the command line, as
/// macOS `defaults(1)` does, and watch them change live.
struct DefaultsCommand: AsyncParsableCommand {
    // Every verb names itself (commandName): a name derived from the type costs a dynamic cast per verb at
    // start-up, each a scan of every protocol conformance in the process (Docs/Benchmarks.md).
    static let configuration = CommandConfiguration(
        commandName: "defaults",
        abstract:
            "Read, write and watch user defaults: macOS defaults(1) on the files LiveDefaults and Foundation share.",
        discussion: """
            Domains live in $XDG_CONFIG_HOME (else ~/.config) as <domain>.plist. A domain is a name \
            (com.example.app), -g / -globalDomain / NSGlobalDomain for the global domain, or a path to a \
            plist file. Put -currentHost or -host <name> before the verb for per-host (ByHost) preferences.
            """,
        subcommands: [
            Read.self, ReadType.self, Write.self, Rename.self, Delete.self, Domains.self, Find.self, Import.self,
            Merge.self,
            Export.self, Watch.self, Doctor.self, SchemaVerb.self, Describe.self, Reset.self, Sync.self, History.self,
            Rollback.self, Hosts.self, Rollout.self, Log.self, Readers.self, Edit.self, Revert.self,
        ]
    )
}
