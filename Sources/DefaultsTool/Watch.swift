import ArgumentParser
import DefaultsToolSupport
import Dispatch
import Foundation
import LiveDefaults

/// `defaults watch domain [key]`: one line per change of the effective value, until interrupted.
struct Watch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Print one line per change of a domain (or one key), whoever makes it, until interrupted.",
        discussion: """
            Lines are "<domain> <key> = <value>" (old-style, on one line) or "<domain> <key> removed"; with \
            --json, JSON Lines {"domain": …, "key": …, "value": …} with null for a removal. Output is flushed \
            line by line, so it works in a pipe. SIGINT and SIGTERM end it with status 0. Keys the domain's \
            published schema marks secret print as <secret> unless --show-secrets is given.
            """)

    @OptionGroup var host: HostOptions
    @OptionGroup var secrets: SecretOptions
    @Flag(help: "Print JSON Lines.") var json = false
    @Argument var domain: String
    @Argument(help: "Follow only this key.") var key: String?

    func run() async {
        let store: ToolStore
        let schema: DomainSchema?
        do {
            let target = try DomainTarget(domain, host: host)
            store = try target.store(watching: .automatic)
            schema = try? target.schema()
            _ = try store.contents()
            // From now on, what goes wrong (a file that breaks: its last known good version is kept) is said
            // on standard error as it happens; the changes stay on standard output.
            store.log.onAppend = { error in FileHandle.standardError.write(Data("defaults: \(error)\n".utf8)) }
        } catch {
            fail(error)
        }
        let signals = Self.exitOnSignals()
        // Said once this process is listed by `defaults readers` (its announcement written): a script that waits
        // for the line knows a `write --wait` will wait for it.
        Defaults.waitForBackgroundRecords()
        FileHandle.standardError.write(Data("Watching \(domain)\(key.map { " \($0)" } ?? "") (Ctrl-C to stop)\n".utf8))
        let name = store.target.name
        if let key {
            for await value in store.defaults.updates(forKey: key, emitCurrentValue: false) {
                report(domain: name, key: key, value: value, schema: schema)
            }
        } else {
            for await change in store.defaults.changes() {
                report(domain: name, key: change.key, value: change.newValue, schema: schema)
            }
        }
        withExtendedLifetime(signals) {}
    }

    private func report(domain: String, key: String, value: PropertyList?, schema: DomainSchema?) {
        if json {
            let shown = value.map { secrets.masked($0, key: key, schema: schema) }
            emit(Output.json(["domain": domain, "key": key, "value": Output.jsonObject(shown)], pretty: false))
        } else {
            emit("\(domain) \(key) " + (value.map { "= " + secrets.line($0, key: key, schema: schema) } ?? "removed"))
        }
    }

    /// SIGINT and SIGTERM end the program normally (status 0).
    private static func exitOnSignals() -> [any DispatchSourceSignal] {
        [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .main)
            source.setEventHandler { Foundation.exit(0) }
            source.activate()
            return source
        }
    }
}
