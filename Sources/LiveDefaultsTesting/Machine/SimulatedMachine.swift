public import Foundation
package import LiveDefaults

/// A machine in memory: processes that run the real `Defaults` over one in-memory file system, one clock and one
/// scheduler, with the events the kernel would give, crashes and power loss — deterministic from a seed.
///
/// ```swift
/// let machine = SimulatedMachine(seed: 42)
/// let server = machine.process("server").defaults(suiteName: "com.example.server")!
/// let ops = machine.process("defaults").defaults(suiteName: "com.example.server")!
/// ops.set(500, forKey: "RateLimit")
/// await machine.settle()                        // the write, the server's event, its reload
/// #expect(server.integer(forKey: "RateLimit") == 500)
/// await machine.advance(by: .seconds(30 * 60))  // half an hour, in microseconds of wall time
/// ```
///
/// What is simulated, and what is real:
/// - **Real**: every `Defaults` a process gives is the library's own type running its own code: reads, writes
///   under the file lock, the watcher's handling of events, the change log, the readers' announcements.
/// - **Files**: one ``InMemoryFileSystem`` for the machine; each process reaches it through descriptors of its
///   own (closed when it crashes, which releases its file locks). A change gives the events inotify would give
///   (close-after-write, created, deleted, moved from/to, a watched directory moved or deleted, an overflow past
///   the kernel's queue limit) to the watchers of every process.
/// - **Time**: one clock. ``advance(by:)`` lets time pass, running what falls due on the way; a process's pause
///   moves it too. Nothing waits in wall time.
/// - **Scheduling**: the work processes hand to their queues (writes, records, event reads, notifications)
///   runs one piece at a time on the thread that calls ``settle()`` or ``advance(by:)``; among the pieces due,
///   the seed picks which runs next. Another writer's steps (``write(_:to:as:)``) run between two pieces, or —
///   chosen by the seed — between two file-system calls of a process (a reader's look at a file and its read of
///   it), which is where races with editors live. The same seed, and the same calls from the test, give the same
///   ``trace``, line for line — in another process too when both run with `SWIFT_DETERMINISTIC_HASHING=1`:
///   Swift seeds its hashing afresh in each process, and the library walks dictionaries keyed by names.
///
/// What stays outside the seed: a store's error handler and log (delivered on a real queue, as they are user
/// code), and work a test's own tasks do while the machine runs (a stream's consumer that writes back): drive the
/// processes from the test between calls to ``settle()`` for a replayable run.
public final class SimulatedMachine: Sendable {
    /// The seed every choice follows.
    public let seed: UInt64
    /// Where every process's user files live.
    public let userDirectory = "/home/user/.config"

    let scheduler: MachineScheduler
    private let reintroduced: Set<ReintroducedBug>
    private let table = SimulatedProcessTable()
    private let start = Date(timeIntervalSince1970: 1_700_000_000)

    private struct State {
        var fileSystem = InMemoryFileSystem()
        var processes: [SimulatedProcess] = []
        var running: Set<Int> = []
        var runLoops: [Int: [Weak]] = [:]
        var nextPid: Int32 = 1000
        /// Other writers' steps not yet taken, in order.
        var acts: [OtherWriterStep] = []
        var otherWriterStepsTaken = 0
        var otherWritesLanded = 0
    }

    struct Weak {
        weak var loop: SimulatedRunLoop?
    }

    private let state = Lock(State())
    /// Held while a process starts (``process(_:)``).
    private let starting = NSLock()

    /// A machine whose choices follow `seed`.
    public convenience init(seed: UInt64) {
        self.init(seed: seed, reintroducing: [])
    }

    /// A machine whose processes have the past bugs `reintroduced` again: how a test shows the swarm finds them.
    package init(seed: UInt64, reintroducing reintroduced: Set<ReintroducedBug>) {
        self.seed = seed
        self.reintroduced = reintroduced
        scheduler = MachineScheduler(seed: seed)
        state.withLock { state in
            try? state.fileSystem.createDirectories("/home/user/.config", permissions: 0o755)
            try? state.fileSystem.createDirectories("/tmp", permissions: 0o1777)
        }
    }

    /// The machine's file system as it stands (after a power loss, what the power loss left).
    package var fileSystem: InMemoryFileSystem { state.withLock { $0.fileSystem } }

    /// The machine's time now.
    public var now: Date { start.addingTimeInterval(scheduler.elapsed.timeInterval) }
    /// How much time has passed since the machine started.
    public var elapsed: Duration { scheduler.elapsed }

    /// Every step the machine took so far, one line each: the time, the process and the queue whose work ran (or
    /// the other writer's step, the crash, the power loss). Two runs of one seed give the same lines.
    public var trace: [String] { scheduler.state.withLock { $0.trace } }
    /// How many pieces of work have run.
    public var steps: Int { scheduler.state.withLock { $0.steps } }
    /// Keeps the trace (on) or only counts steps (off: a long run's memory).
    public var keepsTrace: Bool {
        get { scheduler.state.withLock { $0.keepsTrace } }
        set { scheduler.state.withLock { $0.keepsTrace = newValue } }
    }

    /// Runs `check` after every step the machine takes while it settles or advances (never inside a step, so
    /// it may read any process's stores): where a test checks what must hold at every moment — a reader sees only
    /// versions someone wrote, never half a transaction. Replaces the check given before; nil removes it.
    public func afterEachStep(_ check: (@Sendable () -> Void)?) {
        scheduler.observer.withLock { $0 = check }
    }

    /// How many steps of other writers have been taken (each a file-system operation or a few).
    public var otherWriterSteps: Int { state.withLock { $0.otherWriterStepsTaken } }
    /// How many writes of other writers (``write(_:to:as:)``, ``swapVolume(at:files:)``) have landed: their last
    /// step taken, in the order they were asked for. A power loss drops those that had not.
    public var otherWritesLanded: Int { state.withLock { $0.otherWritesLanded } }

    // MARK: Processes

    /// The running process named `name`, started now if none runs under that name (a process started again after
    /// a crash is a new process, with a new id).
    public func process(_ name: String) -> SimulatedProcess {
        // One start at a time: two threads asking for the same new name get the same process, and each new
        // process its own index (the lookup, the index and the registration are one step). Nothing under the
        // lock calls a test's code.
        starting.lock()
        defer { starting.unlock() }
        if let running = state.withLock({ state in
            state.processes.last { $0.name == name && state.running.contains($0.index) }
        }) {
            return running
        }
        let (index, pid, base) = state.withLock { state in
            defer { state.nextPid += 1 }
            return (state.processes.count, state.nextPid, state.fileSystem)
        }
        let scheduler = scheduler
        let fileSystem = FaultInjectingFileSystem(wrapping: base, recordsCalls: false) { [weak self] _, _ in
            self?.interleaveOtherWriter()
        }
        let clock = SimulatedClock(scheduler: scheduler, process: index, processName: name, start: start)
        let events = base.events
        table.started(pid, at: UInt64(pid))
        let platform = WatcherPlatform(events: events) { [weak self] opening in
            let loop = SimulatedRunLoop(
                scheduler: scheduler, process: index, name: "\(name) watcher", events: events, opening: opening)
            self?.state.withLock { $0.runLoops[index, default: []].append(Weak(loop: loop)) }
            return loop
        }
        let context = ProcessContext(
            fileSystem: fileSystem, clock: clock, pid: pid, processes: table, platform: platform,
            reintroducing: reintroduced)
        let process = SimulatedProcess(
            name: name, pid: pid, index: index, context: context, fileSystem: fileSystem, machine: self)
        state.withLock { state in
            state.processes.append(process)
            state.running.insert(index)
        }
        scheduler.note("start \(name) (pid \(pid))")
        return process
    }

    func isRunning(_ process: SimulatedProcess) -> Bool {
        state.withLock { $0.running.contains(process.index) }
    }

    func crash(_ process: SimulatedProcess) {
        guard
            let loops = state.withLock({ state -> [Weak]? in
                guard state.running.remove(process.index) != nil else { return nil }
                return state.runLoops.removeValue(forKey: process.index) ?? []
            })
        else { return }
        scheduler.note("crash \(process.name)")
        scheduler.stop(process: process.index)
        for loop in loops { loop.loop?.stop() }
        process.fileSystem.stopNow()
        table.ended(process.pid)
    }

    /// Cuts the power: every process stops where it stands, and the file system keeps what a power loss may keep
    /// of what was not flushed — one of the outcomes ``InMemoryFileSystem/powerLossOutcomes(limit:)`` gives,
    /// chosen by the seed. Processes started afterwards find what it kept.
    public func powerLoss() {
        let processes = state.withLock { state in state.processes.filter { state.running.contains($0.index) } }
        for process in processes { crash(process) }
        let outcomes = fileSystem.powerLoss(limit: 256)
        let chosen = scheduler.choose(below: outcomes.count)
        scheduler.note("power loss (outcome \(chosen + 1) of \(outcomes.count))")
        let kept = outcomes.outcome(chosen)
        state.withLock { state in
            state.fileSystem = kept
            state.acts = []
        }
    }

    // MARK: Time

    /// Runs every piece of work that is due — events read, versions delivered, writes, records, notifications —
    /// and lets the library's own short waits pass (a write's gathering of edits, a record's pacing, a removal's
    /// settling: work scheduled for less than the default poll interval), until none is left: the machine is
    /// quiet. Work scheduled further ahead (a poll, an expiry) waits for ``advance(by:)``, however close its time
    /// has come. A store polling more often than the default would never let the machine be quiet: a settle lets
    /// ten seconds pass at most.
    public func settle() async {
        settleNow()
    }

    /// ``settle()`` for synchronous code.
    public func settleNow() {
        let limit = scheduler.elapsed + .seconds(10)
        while true {
            runDue()
            guard let next = scheduler.nextDeadline(shortOnly: true), next <= limit else { return }
            scheduler.move(to: next)
        }
    }

    /// Lets `duration` of the machine's time pass, running on the way whatever falls due, at its time, then
    /// settles (the short waits that work started may end a little after).
    public func advance(by duration: Duration) async {
        advanceNow(by: duration)
    }

    /// ``advance(by:)`` for synchronous code.
    public func advanceNow(by duration: Duration) {
        let target = scheduler.elapsed + max(.zero, duration)
        while true {
            runDue()
            guard let next = scheduler.nextDeadline(), next <= target else { break }
            scheduler.move(to: next)
        }
        scheduler.move(to: target)
        settleNow()
    }

    private func runDue() {
        scheduler.runDue {
            let (loops, fileSystem) = state.withLock { state in
                (state.runLoops.values.flatMap { $0.compactMap(\.loop) }, state.fileSystem)
            }
            for loop in loops { loop.scheduleReadIfReadable(on: fileSystem) }
        }
    }

    // MARK: Other writers

    /// Queues another writer's steps: each runs as a piece of work of its own, or earlier, between two
    /// file-system calls of a process, when the seed says so.
    func submit(_ steps: [OtherWriterStep]) {
        state.withLock { $0.acts += steps }
        for _ in steps {
            scheduler.schedule(process: -1, queue: self, name: "other writer", after: .zero) { [weak self] in
                self?.takeOtherWriterStep()
            }
        }
    }

    /// Takes the next step of another writer, if one waits.
    func takeOtherWriterStep() {
        guard
            let (step, fileSystem) = state.withLock({ state -> (OtherWriterStep, InMemoryFileSystem)? in
                if state.acts.isEmpty { return nil }
                state.otherWriterStepsTaken += 1
                let step = state.acts.removeFirst()
                if step.lands { state.otherWritesLanded += 1 }
                return (step, state.fileSystem)
            })
        else { return }
        scheduler.note(step.description)
        step.run(fileSystem)
    }

    /// Between two file-system calls of a process: once in four times, when another writer has a step waiting,
    /// it takes it there.
    private func interleaveOtherWriter() {
        guard state.withLock({ !$0.acts.isEmpty }), scheduler.choose(below: 4) == 0 else { return }
        takeOtherWriterStep()
    }
}
