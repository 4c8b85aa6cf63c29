// A daemon that reconfigures itself while it runs. Start it, then from another shell:
//
//   defaults write com.example.daemon Interval -float 0.2
//   defaults write com.example.daemon Message "still here"
//   defaults write com.example.daemon Paused -bool YES
//
// SIGINT (Ctrl-C) or SIGTERM stops it cleanly: both loops end, pending writes are flushed, exit status 0.
import DaemonCore
import Dispatch
import Foundation
import LiveDefaults

let configuration = Defaults.Configuration(
    applicationDomain: Daemon.domain, arguments: Array(CommandLine.arguments.dropFirst()))
let defaults = try Defaults(configuration: configuration)
let daemon = Daemon(defaults: defaults) { line in
    print(line)
    fflush(nil)
}

let work = Task { await daemon.run() }

// Signals cancel the work instead of killing the process.
let signals = [SIGINT, SIGTERM].map { number in
    signal(number, SIG_IGN)
    let source = DispatchSource.makeSignalSource(signal: number, queue: .main)
    source.setEventHandler { work.cancel() }
    source.activate()
    return source
}

await work.value
withExtendedLifetime(signals) {}
defaults.synchronize()
