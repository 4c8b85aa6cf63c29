// The least a program can do to read one key with Foundation's UserDefaults and print it: `FoundationRead DOMAIN
// KEY`, timed beside `defaults read DOMAIN KEY` (`Benchmarks/run`, hyperfine). Foundation on Linux reads the same
// file, $XDG_CONFIG_HOME/DOMAIN.plist.
import Foundation

let arguments = CommandLine.arguments
guard arguments.count == 3, let defaults = UserDefaults(suiteName: arguments[1]) else { exit(2) }
guard let value = defaults.object(forKey: arguments[2]) else { exit(1) }
print(value)
