import Dispatch
import Foundation
import LiveDefaults

/// The machine's one thread of work: every piece of background work its processes hand to a queue (their
/// writers', records', watchers', deliveries') waits here, in a lane per process and queue, and runs when the
/// pump picks it — one at a time, on the thread that settles the machine, the lane chosen by the seed among
/// those with work due. A lane is a serial queue: its due work runs in the order of its deadlines.
///
/// Nothing here runs work while holding the lock: a job picks more work (a watcher's `sync`), schedules work, or
/// calls the file system, whose events the pump reads next.
final class MachineScheduler: Sendable {
    struct Item {
        var deadline: Duration
        var order: Int
        /// Whether it was scheduled for a short wait (``shortWait``), which a settle lets pass.
        var short: Bool
        var work: @Sendable () -> Void
    }

    /// What a settle lets pass: waits shorter than this. The library's own (a write's gathering, a notification's,
    /// a record's pacing, a removal's settling) are; a poll at the default interval or an expiry is not, and waits
    /// for an advance.
    static let shortWait = Duration.milliseconds(100)

    struct Lane {
        /// What the lane is, as the trace names it: the process and the queue.
        var name: String
        var process: Int
        /// The queue object the lane stands for, kept so that its identity is not reused.
        var anchor: AnyObject
        var items: [Item] = []
    }

    struct Key: Hashable {
        var process: Int
        var queue: ObjectIdentifier
    }

    struct State {
        var elapsed: Duration = .zero
        var nextOrder = 0
        var lanes: [Lane] = []
        var laneIndex: [Key: Int] = [:]
        var stopped: Set<Int> = []
        var random: SeededRandom
        var trace: [String] = []
        var steps = 0
        var keepsTrace = true
    }

    let state: Lock<State>
    /// Held while a pump runs, so that two settles do not run work side by side.
    private let pumping = NSLock()

    init(seed: UInt64) {
        state = Lock(State(random: SeededRandom(seed: seed)))
    }

    var elapsed: Duration { state.withLock { $0.elapsed } }

    /// Lets `duration` pass at once (a process's pause): work falls due, and runs when the pump next looks.
    func pass(_ duration: Duration) {
        guard duration > .zero else { return }
        state.withLock { $0.elapsed += duration }
    }

    /// Keeps `work` for `process`'s lane of `queue` until `delay` has passed (nothing, if the process is gone).
    func schedule(
        process: Int, queue anchor: AnyObject, name: @autoclosure () -> String, after delay: Duration,
        _ work: @escaping @Sendable () -> Void
    ) {
        let key = Key(process: process, queue: ObjectIdentifier(anchor))
        state.withLock { state in
            guard !state.stopped.contains(process) else { return }
            let index: Int
            if let known = state.laneIndex[key] {
                index = known
            } else {
                index = state.lanes.count
                state.lanes.append(Lane(name: name(), process: process, anchor: anchor))
                state.laneIndex[key] = index
            }
            let deadline = state.elapsed + max(.zero, delay)
            state.lanes[index].items.append(
                Item(deadline: deadline, order: state.nextOrder, short: delay < Self.shortWait, work: work))
            state.nextOrder += 1
        }
    }

    /// Drops `process`'s work, now and from now on.
    func stop(process: Int) {
        state.withLock { state in
            state.stopped.insert(process)
            for index in state.lanes.indices where state.lanes[index].process == process {
                state.lanes[index].items = []
            }
        }
    }

    /// Notes a line in the trace.
    func note(_ line: @autoclosure () -> String) {
        state.withLock { state in
            if state.keepsTrace { state.trace.append("\(state.elapsed.traceTime) \(line())") }
        }
    }

    /// A seeded choice, for the machine's own decisions.
    func choose(below bound: Int) -> Int {
        state.withLock { $0.random.below(bound) }
    }

    /// Takes the next piece of due work: from a lane the seed picks among those with work due, the lane's earliest.
    private func takeDue() -> (@Sendable () -> Void)? {
        state.withLock { state in
            let now = state.elapsed
            let ready = state.lanes.indices.filter { Self.earliestDue(in: state.lanes[$0].items, now: now) != nil }
            guard !ready.isEmpty else { return nil }
            let lane = ready[state.random.below(ready.count)]
            return Self.take(lane: lane, in: &state, note: "")
        }
    }

    /// The position of the earliest piece of work due at `now`, if any.
    private static func earliestDue(in items: [Item], now: Duration) -> Int? {
        var found: Int?
        for (position, item) in items.enumerated() where item.deadline <= now {
            if let best = found, (items[best].deadline, items[best].order) <= (item.deadline, item.order) { continue }
            found = position
        }
        return found
    }

    /// Takes the earliest due work of a lane, counted and traced.
    private static func take(lane: Int, in state: inout State, note: String) -> (@Sendable () -> Void)? {
        guard let position = earliestDue(in: state.lanes[lane].items, now: state.elapsed) else { return nil }
        state.steps += 1
        if state.keepsTrace { state.trace.append("\(state.elapsed.traceTime) \(state.lanes[lane].name)\(note)") }
        return state.lanes[lane].items.remove(at: position).work
    }

    /// Runs due work until none is left; `beforeEach` first tells the scheduler of work that became due outside
    /// it (a watcher's events). Returns how many pieces ran.
    @discardableResult
    func runDue(beforeEach: () -> Void) -> Int {
        pumping.lock()
        defer { pumping.unlock() }
        var ran = 0
        while true {
            beforeEach()
            guard let work = takeDue() else { return ran }
            work()
            ran += 1
            observer.withLock { $0 }?()
        }
    }

    /// What runs after each piece of work the pump runs (a test's invariants), never inside one.
    let observer = Lock<(@Sendable () -> Void)?>(nil)

    /// Runs, here and now, the due work of `process`'s lane of `queue` (a job waiting for its own queue).
    func drain(process: Int, queue anchor: AnyObject) {
        let key = Key(process: process, queue: ObjectIdentifier(anchor))
        while let work = state.withLock({ state -> (@Sendable () -> Void)? in
            guard let lane = state.laneIndex[key] else { return nil }
            return Self.take(lane: lane, in: &state, note: " (waited for)")
        }) {
            work()
        }
    }

    /// The earliest deadline of work not yet due, if any (of work scheduled for a short wait only, when asked).
    func nextDeadline(shortOnly: Bool = false) -> Duration? {
        state.withLock { state in
            state.lanes.lazy.flatMap { $0.items.filter { !shortOnly || $0.short }.map(\.deadline) }.min()
        }
    }

    /// Moves the time to `time` (never back).
    func move(to time: Duration) {
        state.withLock { $0.elapsed = max($0.elapsed, time) }
    }
}

extension Duration {
    /// The time as the trace shows it: microseconds since the machine started.
    var traceTime: String {
        let (seconds, attoseconds) = components
        return "\(seconds * 1_000_000 + attoseconds / 1_000_000_000_000)us"
    }
}
