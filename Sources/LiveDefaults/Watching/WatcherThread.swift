import Foundation

/// The file watcher's own thread: it runs the watcher's work (registrations taking effect, events handled,
/// polls) one job at a time in the order given, and, between jobs, waits for the inotify descriptor to have
/// events and hands them to the watcher.
///
/// Why not a serial `DispatchQueue` with a read `DispatchSource`: the first use of libdispatch in a process
/// makes its machinery on the thread that uses it — an event loop (`epoll`, an `eventfd`, a manager
/// thread) when the source is activated, a worker thread when the queue first gets work — most of a cold
/// open's time beyond reading the file (Docs/Decisions/ColdOpen.md). This costs the opening
/// thread one `pthread_create` when the first store registers a file; the wake pipe,
/// the inotify descriptor (``init(opening:)``), the watches and the first look at the files are made on the
/// new thread.
///
/// - The thread starts with the first job, and stops when ``stop()`` is called (the watcher's `deinit`),
///   closing the inotify descriptor: the one it was given (``init(descriptor:)``), which it owns from then
///   on, or the one it opened.
/// - A job must not wait for the thread itself (``sync()`` called on the thread returns at once).
/// - If the system makes no thread, the jobs wait for the next ``enqueue(_:)`` to try again.
final class WatcherThread: WatcherRunLoop {
    /// A job waiting: a node of an ``IntrusiveList`` (not an array of closures: see there).
    private final class Job: IntrusiveListNode {
        let run: @Sendable () -> Void
        var next: Job?
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }

    private struct State {
        /// The jobs waiting, in order.
        var jobs = IntrusiveList<Job>()
        var onReadable: (@Sendable () -> Void)?
        var started = false
        var stopped = false
        /// The thread is waiting (or about to): new work must wake it through `wake`.
        var waiting = false
        /// The thread's wake pipe while it runs (written to only under the lock, closed only under it).
        var wake: WakePipe?
        /// Events are not read until this is cleared (``pauseReading(_:)``, for tests).
        var readingPaused = false
        /// The descriptor read for events (-1: none, or not opened yet).
        var descriptor: Int32

        /// Wakes the thread if it waits, so that it looks at the state again (once per wait).
        mutating func wakeIfWaiting() {
            guard waiting, let wake else { return }
            waiting = false
            wake.wake()
        }
    }

    private let state: Lock<State>
    /// What opens the descriptor, first thing on the thread (nil when it was given).
    private let opening: (@Sendable () -> Int32)?
    /// Which watcher thread the current thread is, if any (a word per thread: this thread's address).
    private static let current = ThreadLocalWord()

    /// A thread (not started yet) that will read `descriptor` and close it when it stops.
    init(descriptor: Int32) {
        state = Lock(State(descriptor: descriptor))
        opening = nil
    }

    /// A thread (not started yet) that, before its first job, opens the descriptor it reads with `open`
    /// (-1: none), and closes it when it stops. Opening inotify is a system call the thread that registers
    /// the first file then does not make.
    init(opening open: @escaping @Sendable () -> Int32) {
        state = Lock(State(descriptor: -1))
        opening = open
    }

    /// The descriptor read for events: -1 until the thread has opened it (``init(opening:)``) or when there is
    /// none. Asked on the thread, by its jobs, it is the one they work with.
    var descriptor: Int32 { state.withLock { $0.descriptor } }

    /// What runs, on the thread, when the descriptor has events to read.
    func setReadHandler(_ handler: @escaping @Sendable () -> Void) {
        state.withLock { $0.onReadable = handler }
    }

    /// Runs `job` on the thread after the jobs given before it.
    func enqueue(_ job: @escaping @Sendable () -> Void) {
        let mustStart = state.withLock { state -> Bool in
            if state.stopped { return false }
            state.jobs.append(Job(job))
            state.wakeIfWaiting()
            if state.started { return false }
            state.started = true
            return true
        }
        guard mustStart else { return }
        if !startDetachedThread(named: "LiveDefaults", { self.run() }) {
            state.withLock { $0.started = false }
        }
    }

    /// Returns when every job given before the call has run (at once on the thread itself, or when no thread
    /// could be made).
    func sync() {
        if isCurrent { return }
        let done = Completion()
        enqueue { done.signal() }
        guard state.withLock({ $0.started && !$0.stopped }) else { return }
        done.wait()
    }

    /// Stops or resumes reading events; a read under way when reading stops ends before the next job.
    func pauseReading(_ paused: Bool) {
        state.withLock { state in
            state.readingPaused = paused
            state.wakeIfWaiting()
        }
    }

    /// Ends the thread after the job under way, dropping jobs not started, and closes the descriptor.
    func stop() {
        let unread = state.withLock { state -> Int32? in
            state.stopped = true
            if let wake = state.wake { wake.wake() }
            return state.started ? nil : state.descriptor
        }
        if let unread, unread >= 0 { Inotify.close(unread) }
    }

    private var isCurrent: Bool { Self.current.value == Int(bitPattern: ObjectIdentifier(self)) }

    private func run() {
        Self.current.value = Int(bitPattern: ObjectIdentifier(self))
        // Made here rather than by the first caller: four system calls off the opening thread. Without a
        // pipe (no descriptors left), the waits end after `unwokenWaitMilliseconds` to look for work.
        let wake = WakePipe.make()
        let opened = opening?()
        state.withLock { state in
            state.wake = wake
            if let opened { state.descriptor = opened }
        }
        while true {
            let (jobs, paused, stopped, descriptor) = state.withLock { state in
                let jobs = state.jobs.takeAll()
                state.waiting = jobs.isEmpty
                return (jobs, state.readingPaused, state.stopped, state.descriptor)
            }
            if stopped { break }
            let hadJobs = !jobs.isEmpty
            for job in jobs { job.run() }
            // With jobs done, look for events without blocking: more jobs may be waiting.
            let readable = waitForInput(on: paused ? -1 : descriptor, wake: wake, block: !hadJobs)
            let handler = state.withLock { state in
                state.waiting = false
                return readable && !state.readingPaused && !state.stopped ? state.onReadable : nil
            }
            handler?()
        }
        let descriptor = state.withLock { state in
            state.wake = nil
            return state.descriptor
        }
        wake?.close()
        if descriptor >= 0 { Inotify.close(descriptor) }
    }

    /// One wait for a job to have run.
    private final class Completion: @unchecked Sendable {
        // @unchecked: `done` is only touched with the condition's lock held.
        private let condition = NSCondition()
        private var done = false

        func signal() {
            condition.lock()
            done = true
            condition.broadcast()
            condition.unlock()
        }

        func wait() {
            condition.lock()
            while !done { condition.wait() }
            condition.unlock()
        }
    }
}
