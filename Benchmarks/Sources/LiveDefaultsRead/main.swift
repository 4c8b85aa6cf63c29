// The same read as FoundationRead through LiveDefaults alone, no command-line parsing: `LiveDefaultsRead DOMAIN
// KEY [--unwatched]` (`Benchmarks/run`, hyperfine). By default the store watches its files, as
// `Defaults(suiteName:)` does; `--unwatched` opens it with `watching = .off`, as the `defaults` command does.
// Foundation is imported for exit(3) only: LiveDefaults loads it anyway.
import Foundation
import LiveDefaults

let arguments = CommandLine.arguments
guard arguments.count == 3 || (arguments.count == 4 && arguments[3] == "--unwatched") else { exit(2) }
var configuration = Defaults.Configuration(applicationDomain: arguments[1], arguments: [])
if arguments.count == 4 { configuration.watching = .off }
guard let defaults = try? Defaults(configuration: configuration) else { exit(2) }
guard let value = defaults.object(forKey: arguments[2]) else { exit(1) }
print(value)
