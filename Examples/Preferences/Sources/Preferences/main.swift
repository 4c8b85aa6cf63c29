// Remembers preferences between runs. Try:
//
//   swift run preferences                         # greets, counts launches
//   swift run preferences set Name Ada            # stored in ~/.config/com.example.preferences.plist
//   swift run preferences -Greeting Howdy         # the argument domain wins, for this run only
//   swift run preferences share Name Team         # a suite other tools can add
//   swift run preferences remove Name             # the suite's value shows through
//   defaults read com.example.preferences         # the same file, from the command line
import Foundation
import LiveDefaults
import PreferencesCore

// Words that are not part of a `-Key value` pair are the command.
var words: [String] = []
var arguments = Array(CommandLine.arguments.dropFirst())
var index = 0
while index < arguments.count {
    if arguments[index].hasPrefix("-"), index + 1 < arguments.count {
        index += 2
    } else {
        words.append(arguments[index])
        index += 1
    }
}

do {
    let app = try PreferencesApp(arguments: arguments)
    print(try app.run(words))
    // No synchronize(): pending writes reach the disk at exit by themselves.
} catch {
    FileHandle.standardError.write(Data("preferences: \(error)\n".utf8))
    exit(1)
}
