#if Fleet
    import Foundation
    import Logging
    import NIOConcurrencyHelpers

    /// Keeps a mirror's ``SyncStatus`` file current: the mirror's loop changes the status in memory, and a task of
    /// the mirror writes it (with the time) every ``SyncStatus/statusInterval`` seconds and when the mirror ends.
    final class SyncStatusPublisher: Sendable {
        let path: String
        private let status: NIOLockedValueBox<SyncStatus>

        init(path: String, status: SyncStatus) {
            self.path = path
            self.status = NIOLockedValueBox(status)
        }

        /// Changes the status in memory (written at the next interval).
        func update(_ change: (inout SyncStatus) -> Void) {
            status.withLockedValue { change(&$0) }
        }

        var current: SyncStatus { status.withLockedValue { $0 } }

        /// Writes the status now, stamped with the time, replacing the file atomically (a reader never sees half a
        /// file). A failure is returned for the caller to log; the next interval tries again.
        @discardableResult
        func write(now: Date = Date()) -> (any Error)? {
            let snapshot = status.withLockedValue { status -> SyncStatus in
                status.updated = now
                return status
            }
            do {
                try snapshot.encoded().write(to: URL(fileURLWithPath: path), options: .atomic)
                return nil
            } catch {
                return error
            }
        }

        /// Writes the status every `interval` until the task is cancelled; the first failure to write is logged.
        func run(every interval: Duration, logger: Logger) async {
            var reported = false
            while !Task.isCancelled {
                if let error = write(), !reported {
                    reported = true
                    logger.error("cannot write the sync status \(path): \(error)")
                }
                do { try await Task.sleep(for: interval) } catch { return }
            }
        }
    }
#endif
