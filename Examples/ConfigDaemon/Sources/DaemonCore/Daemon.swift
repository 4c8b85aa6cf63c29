import Foundation
public import LiveDefaults
public import ServiceLifecycle
import UnixSignals

extension DefaultsKeys {
    /// Seconds between two heartbeats.
    public static let interval = DefaultsKey<Double>("Interval", default: 1)
    /// What each heartbeat prints.
    public static let message = DefaultsKey<String>("Message", default: "alive")
    /// When true, heartbeats stop until it is false again.
    public static let paused = DefaultsKey<Bool>("Paused", default: false)
}

/// A daemon-style loop driven by its settings: it prints a heartbeat every `Interval` seconds, and follows
/// every change of `Interval`, `Message` and `Paused` — from `defaults write`, another program or an editor —
/// through one `for await` loop over consistent snapshots. SIGHUP makes it re-read its settings from disk.
///
/// A swift-service-lifecycle `Service`: in a `ServiceGroup` its loops end on graceful shutdown (SIGTERM or
/// SIGINT); cancelling the task that runs it ends them too.
public actor Daemon: Service {
    /// The domain the daemon reads its settings from.
    public static let domain = "com.example.daemon"

    private let defaults: Defaults
    private let output: @Sendable (String) -> Void
    private var interval: Double
    private var message: String
    private var paused: Bool

    /// A daemon reading `defaults` and printing what it does through `output`.
    public init(defaults: Defaults, output: @escaping @Sendable (String) -> Void) {
        self.defaults = defaults
        self.output = output
        interval = defaults[.interval]
        message = defaults[.message]
        paused = defaults[.paused]
    }

    /// Runs until its service group shuts down gracefully, or the calling task is cancelled.
    public func run() async {
        output("started: every \(interval) s, \"\(message)\"\(paused ? ", paused" : "")")
        await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await self.followSettings() }
                group.addTask { await self.beat() }
                group.addTask { await self.reloadOnHangUp() }
                await group.waitForAll()
            }
        }
        output("stopped cleanly")
    }

    /// Re-reads the settings from disk on every SIGHUP (the store follows the files live already; a hang-up
    /// is the operator's way to insist, after restoring a file from a backup, say).
    private func reloadOnHangUp() async {
        for await _ in await UnixSignalsSequence(trapping: .sighup) {
            try? await defaults.flush()
            apply(interval: defaults[.interval], message: defaults[.message], paused: defaults[.paused])
            output("reloaded on SIGHUP")
        }
    }

    /// Applies every change of the settings; ends when the task is cancelled (the stream finishes).
    private func followSettings() async {
        for await settings in defaults.updates(of: .interval, .message, .paused, emitCurrentValue: false) {
            apply(interval: settings[.interval], message: settings[.message], paused: settings[.paused])
        }
    }

    private func apply(interval newInterval: Double, message newMessage: String, paused newPaused: Bool) {
        let interval = newInterval > 0 ? newInterval : DefaultsKeys.interval.defaultValue
        if interval != self.interval { output("applied Interval = \(interval)") }
        if newMessage != message { output("applied Message = \(newMessage)") }
        if newPaused != paused { output(newPaused ? "applied Paused = YES" : "applied Paused = NO") }
        self.interval = interval
        message = newMessage
        paused = newPaused
    }

    private func beat() async {
        while !Task.isCancelled {
            if !paused { output("heartbeat: \(message)") }
            try? await Task.sleep(for: .seconds(interval))
        }
    }
}
