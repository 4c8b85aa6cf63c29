import Dispatch
import Foundation
import Logging
import Synchronization

/// The polling fallback: directories inotify cannot watch (a remote file system, no watches left, or polling
/// asked for) looked at on a timer.
extension FileWatcher {
    // MARK: Polling fallback

    /// Polls `directories` from now on. The first time inotify fails, a warning goes to the log of a store
    /// that needed one of them; the first time a directory lies on a remote file system (where polling is
    /// the right way, not a degraded one), a notice.
    func startPolling(_ directories: Set<String>, reason: String, remote: Bool = false) {
        let (added, makeLogger, mustStart, polled) = locked { state in
            let added = directories.filter { state.polledDirectories[$0] == nil }
            for directory in added { state.polledDirectories[directory] = reason }
            let mustWarn: Bool
            if remote {
                mustWarn = !added.isEmpty && !state.notedRemoteFileSystem
                if mustWarn { state.notedRemoteFileSystem = true }
            } else {
                mustWarn = !added.isEmpty && !state.warnedAboutPolling
                if mustWarn { state.warnedAboutPolling = true }
            }
            var makeLogger: (@Sendable () -> Logger)?
            if mustWarn {
                for directory in added.sorted() {
                    if let first = state.files[directory]?.values.first?.first {
                        makeLogger = first.logger
                        break
                    }
                }
            }
            let mustStart = !state.pollingStarted && !state.polledDirectories.isEmpty
            if mustStart { state.pollingStarted = true }
            return (added, makeLogger, mustStart, state.polledDirectories.count)
        }
        if !added.isEmpty { DefaultsMetrics.report { DefaultsMetrics.watcherPolls(directories: polled) } }
        // Made after the lock is released: a logging system's factory is user code.
        let logger = makeLogger?()
        // Inotify failing is a degraded mode the operator can fix (raise fs.inotify limits) and no caller is
        // told of: a warning, once per watcher, in the log of the store that needed the directory.
        if remote {
            logger?.notice(
                "polling \(added.sorted().joined(separator: ", ")) every \(pollInterval): \(reason) (LIVEDEFAULTS_WATCHER=inotify keeps inotify)"
            )
        } else {
            logger?.warning(
                "cannot watch \(added.sorted().joined(separator: ", ")) with inotify (\(reason)): LiveDefaults polls for changes by other processes every \(pollInterval) instead"
            )
        }
        if mustStart { thread.enqueue { [weak self] in self?.pollAndReschedule() } }
    }

    /// Polls now, then again one ``pollInterval`` later on the watcher's clock, for as long as the watcher
    /// lives. (An interval of any length is fine: the system clock saturates rather than overflows.) The
    /// clock wakes a global queue, which hands the poll to the watcher's thread, so that polls and events
    /// are handled one at a time.
    func pollAndReschedule() {
        pollOnce()
        clock.schedule(after: pollInterval, on: .global(qos: .utility)) { [weak self] in
            self?.thread.enqueue { [weak self] in self?.pollAndReschedule() }
        }
    }

    /// Tells the handlers of every polled directory to look again, unless a test suspended the watcher.
    func pollOnce() {
        guard let polled = locked({ $0.suspended ? nil : $0.polledDirectories }) else { return }
        for handler in handlers(where: { polled[$0] != nil }) { handler(Event(writtenInPlace: false)) }
    }
}
