import Foundation

/// A value that callbacks on other threads change and a test waits on: `wait(until:)` looks again each time
/// the value changes, never on a timer. For what only real time can show (a kernel's events, a watcher's own
/// thread); a test of the library's logic runs on the simulated machine instead.
public final class Observed<Value: Sendable>: @unchecked Sendable {
    // @unchecked: `value`, `version`, `waiters` and `nextWaiter` are only touched under `lock` (an NSLock: ThreadSanitizer
    // sees it); a waiter is resumed after the lock is released.
    private let lock = NSLock()
    private var value: Value
    private var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
    private var nextWaiter = 0
    private var version = 0

    /// A value to watch, starting at `value`.
    public init(_ value: Value) { self.value = value }

    /// The value now.
    public var current: Value { lock.withLock { value } }

    /// Changes the value and wakes every waiter to look at it again (also a change of nothing: `update { _ in }`
    /// says that something the waiters' conditions read elsewhere may have changed).
    public func update<Result>(_ body: (inout Value) -> Result) -> Result {
        let (result, woken) = lock.withLock {
            let result = body(&value)
            version &+= 1
            let woken = waiters
            waiters.removeAll()
            return (result, woken)
        }
        for waiter in woken.values { waiter.resume() }
        return result
    }

    /// Wakes every waiter to look again: something their conditions read elsewhere may have changed.
    public func notify() { update { _ in } }

    /// Whether `condition` held of the value within `timeout` (generous: the machine may be busy), looked at
    /// now and after each change.
    public func wait(timeout: Duration = .seconds(30), until condition: @escaping @Sendable (Value) -> Bool) async
        -> Bool
    {
        await withTimeout(timeout) { [self] in
            while !Task.isCancelled {
                if await changeOrHolds(condition) { return true }
            }
            return false
        } ?? false
    }

    /// True when `condition` holds now; otherwise suspends until the next change (or cancellation) and says false.
    /// The condition runs outside the lock (it may read other state); the version read before it tells whether a
    /// change came meanwhile, so none is missed.
    private func changeOrHolds(_ condition: (Value) -> Bool) async -> Bool {
        let (seen, id, now) = lock.withLock {
            nextWaiter += 1
            return (version, nextWaiter, value)
        }
        if condition(now) { return true }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = lock.withLock {
                    if version != seen || Task.isCancelled { return true }
                    waiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = lock.withLock { waiters.removeValue(forKey: id) }
            waiter?.resume()
        }
        return false
    }
}
