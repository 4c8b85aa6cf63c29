import Dispatch
import Foundation

/// Work started on another thread while this one waits for something else (a write's flush to the disk), its
/// result taken afterwards by ``value()``: from the other thread when it ran the work meanwhile, else run on
/// the taking thread there and then.
///
/// Whoever gets to the work first runs it, once: a pool too busy to start it in time costs the taker no more
/// than running it itself would have, and never a wait on a queue it cannot see. Work started with
/// `overlapping: false` is only ever run by the taker (for work too small to be worth a thread's wake-up).
///
/// NSCondition, because ThreadSanitizer sees pthread locks: the result is handed over under it.
final class OverlappedWork<Value: Sendable>: @unchecked Sendable {
    // @unchecked: `state` is only read and written with `condition` locked.
    private enum State {
        case pending(@Sendable () -> Value)
        case running
        case done(Value)
        case taken
    }

    private let condition = NSCondition()
    private var state: State

    /// Starts `work` on a global queue when `overlapping`, else keeps it for ``value()``.
    init(overlapping: Bool, _ work: @escaping @Sendable () -> Value) {
        state = .pending(work)
        guard overlapping else { return }
        DispatchQueue.global(qos: .userInitiated).async { [self] in
            guard let work = claim() else { return }
            let value = work()
            condition.lock()
            state = .done(value)
            condition.broadcast()
            condition.unlock()
        }
    }

    /// The work, if nobody has claimed it yet (the state is then `running`).
    private func claim() -> (@Sendable () -> Value)? {
        condition.lock()
        defer { condition.unlock() }
        guard case .pending(let work) = state else { return nil }
        state = .running
        return work
    }

    /// The work's result: run here if no other thread started it, else waited for. Taken once.
    func value() -> Value {
        if let work = claim() {
            let value = work()
            condition.lock()
            state = .taken
            condition.unlock()
            return value
        }
        condition.lock()
        defer { condition.unlock() }
        while true {
            switch state {
            case .done(let value):
                state = .taken
                return value
            case .running:
                condition.wait()
            case .pending, .taken:
                preconditionFailure("an overlapped work's value is taken once")
            }
        }
    }
}
