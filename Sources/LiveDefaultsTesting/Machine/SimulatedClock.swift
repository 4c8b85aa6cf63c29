import Dispatch
import Foundation
import LiveDefaults

/// One process's view of the machine's time: the same time for every process; what a process schedules waits
/// in its own lanes of the machine's scheduler (a crashed process's work is dropped with it).
final class SimulatedClock: DefaultsClock {
    private weak let scheduler: MachineScheduler?
    private let process: Int
    private let processName: String
    private let start: Date

    init(scheduler: MachineScheduler, process: Int, processName: String, start: Date) {
        self.scheduler = scheduler
        self.process = process
        self.processName = processName
        self.start = start
    }

    var now: Date {
        start.addingTimeInterval((scheduler?.elapsed ?? .zero).timeInterval)
    }

    func schedule(after delay: Duration, on queue: DispatchQueue, _ work: @escaping @Sendable () -> Void) {
        let processName = processName
        scheduler?.schedule(process: process, queue: queue, name: "\(processName) \(queue.label)", after: delay, work)
    }

    /// Time passes for the whole machine; what falls due meanwhile runs at the pump's next look.
    func pause(for duration: Duration) {
        scheduler?.pass(duration)
    }
}

/// A watcher's loop in a simulated process: its jobs in a lane of the machine's scheduler, its events read when
/// the machine's file system has some for its instance (``SimulatedMachine``'s pump looks after every step).
final class SimulatedRunLoop: WatcherRunLoop {
    private struct State {
        var descriptor: Int32 = -1
        var opening: (@Sendable () -> Int32)?
        var readHandler: (@Sendable () -> Void)?
        var paused = false
        var stopped = false
        var readPending = false
    }

    private weak let scheduler: MachineScheduler?
    private let process: Int
    private let name: String
    private let events: any FileEventSource
    private let state: Lock<State>

    init(
        scheduler: MachineScheduler, process: Int, name: String, events: any FileEventSource,
        opening: (@Sendable () -> Int32)?
    ) {
        self.scheduler = scheduler
        self.process = process
        self.name = name
        self.events = events
        state = Lock(State(opening: opening))
    }

    var descriptor: Int32 { state.withLock { $0.descriptor } }

    func setReadHandler(_ handler: @escaping @Sendable () -> Void) {
        state.withLock { $0.readHandler = handler }
    }

    func enqueue(_ job: @escaping @Sendable () -> Void) {
        guard !state.withLock({ $0.stopped }) else { return }
        scheduler?.schedule(process: process, queue: self, name: name, after: .zero) { [weak self] in
            guard let self, self.openIfNeeded() else { return }
            job()
        }
    }

    func sync() {
        scheduler?.drain(process: process, queue: self)
    }

    func pauseReading(_ paused: Bool) {
        state.withLock { $0.paused = paused }
    }

    func stop() {
        let descriptor = state.withLock { state -> Int32 in
            state.stopped = true
            defer { state.descriptor = -1 }
            return state.descriptor
        }
        if descriptor >= 0 { events.close(descriptor) }
    }

    /// Opens the instance before the first job, as the watcher's thread does; false once stopped.
    private func openIfNeeded() -> Bool {
        let opening = state.withLock { state -> (@Sendable () -> Int32)?? in
            if state.stopped { return .none }
            defer { state.opening = nil }
            return .some(state.opening)
        }
        guard let opening else { return false }
        if let open = opening {
            let descriptor = open()
            state.withLock { $0.descriptor = descriptor }
        }
        return true
    }

    /// Puts a read of the instance in the loop's lane when events wait for it (and none is on its way).
    func scheduleReadIfReadable(on fileSystem: InMemoryFileSystem) {
        let descriptor = state.withLock { state -> Int32? in
            guard !state.stopped, !state.paused, !state.readPending, state.descriptor >= 0,
                state.readHandler != nil
            else { return nil }
            return state.descriptor
        }
        guard let descriptor, fileSystem.hasEvents(descriptor) else { return }
        state.withLock { $0.readPending = true }
        scheduler?.schedule(process: process, queue: self, name: name, after: .zero) { [weak self] in
            guard let self else { return }
            let handler = self.state.withLock { state -> (@Sendable () -> Void)? in
                state.readPending = false
                return state.stopped || state.paused ? nil : state.readHandler
            }
            handler?()
        }
    }
}

/// The machine's processes, as the library's records ask: a crashed process no longer runs.
final class SimulatedProcessTable: ProcessTable {
    private let running = Lock<[Int32: UInt64]>([:])

    func isRunning(_ pid: Int32) -> Bool { running.withLock { $0[pid] != nil } }
    func startTime(of pid: Int32) -> UInt64? { running.withLock { $0[pid] } }

    func started(_ pid: Int32, at start: UInt64) { running.withLock { $0[pid] = start } }
    func ended(_ pid: Int32) { running.withLock { _ = $0.removeValue(forKey: pid) } }
    func endAll() { running.withLock { $0.removeAll() } }
}
