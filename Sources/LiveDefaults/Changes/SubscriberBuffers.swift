/// Work to do after a lock is released: resuming a waiting consumer. Buffers hand these out instead of
/// resuming under a lock, so no lock is ever held while a continuation runs.
typealias Resumption = @Sendable () -> Void

/// The buffer behind one ``Defaults/updates(forKey:emitCurrentValue:)`` iterator: at most one pending value (newest wins), and a value
/// equal to the last one delivered is dropped.
///
/// Pushes happen under the store's lock, in the order of the changes, so the newest pending value is always
/// the current one; a slow consumer skips intermediate values but always ends on the latest.
final class ValueBuffer: Sendable {
    private struct State {
        /// `.some(value)` when a value waits to be delivered (the value itself may be nil: key removed).
        var pending: PropertyList?? = .none
        var lastDelivered: PropertyList?? = .none
        var waiter: CheckedContinuation<PropertyList??, Never>?
        var finished = false
    }

    private let state = Lock(State())

    func push(_ value: PropertyList?) -> Resumption? {
        state.withLock { state -> Resumption? in
            if state.finished { return nil }
            if let waiter = state.waiter {
                if state.lastDelivered == .some(value) { return nil }
                state.waiter = nil
                state.lastDelivered = .some(value)
                return { waiter.resume(returning: .some(value)) }
            }
            state.pending = state.lastDelivered == .some(value) ? .none : .some(value)
            return nil
        }
    }

    /// Ends the stream: a waiting consumer gets nil. With `keepingPending`, a value not yet taken is
    /// delivered first (a graceful end); otherwise it is dropped (a cancelled consumer, a store gone).
    func finish(keepingPending: Bool = false) -> Resumption? {
        state.withLock { state -> Resumption? in
            state.finished = true
            if !keepingPending { state.pending = .none }
            guard let waiter = state.waiter else { return nil }
            state.waiter = nil
            return { waiter.resume(returning: .none) }
        }
    }

    /// The next value, or `.none` when the stream is finished (or the task cancelled).
    func next() async -> PropertyList?? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<PropertyList??, Never>) in
                let immediate: PropertyList??? = state.withLock { state in
                    if case .some(let value) = state.pending {
                        state.pending = .none
                        state.lastDelivered = .some(value)
                        return .some(.some(value))
                    }
                    if state.finished || Task.isCancelled { return .some(.none) }
                    state.waiter = continuation
                    return .none
                }
                if case .some(let result) = immediate { continuation.resume(returning: result) }
            }
        } onCancel: {
            finish()?()
        }
    }
}

/// The buffer behind one ``Defaults/changes()`` iterator: pending changes coalesced per (domain, key), so memory is
/// bounded by the number of keys, and a key that changes while the consumer is busy is delivered once,
/// from its first old value to its latest new value (and not at all when it ends where it began).
final class ChangeBuffer: Sendable {
    private struct State {
        var order: [String] = []
        var pending: [String: KeyChange] = [:]
        var waiter: CheckedContinuation<KeyChange?, Never>?
        var finished = false
    }

    private let state = Lock(State())

    func push(_ change: KeyChange) -> Resumption? {
        state.withLock { state -> Resumption? in
            if state.finished { return nil }
            if let waiter = state.waiter {
                state.waiter = nil
                return { waiter.resume(returning: change) }
            }
            let slot = change.domain + "\u{0}" + change.key
            if var existing = state.pending[slot] {
                existing.newValue = change.newValue
                existing.origin = change.origin
                existing.batch = change.batch
                if existing.oldValue == existing.newValue {
                    state.pending.removeValue(forKey: slot)
                    state.order.removeAll { $0 == slot }
                } else {
                    state.pending[slot] = existing
                }
            } else {
                state.pending[slot] = change
                state.order.append(slot)
            }
            return nil
        }
    }

    /// Ends the stream: a waiting consumer gets nil. With `keepingPending`, changes not yet taken are
    /// delivered first; otherwise they are dropped.
    func finish(keepingPending: Bool = false) -> Resumption? {
        state.withLock { state -> Resumption? in
            state.finished = true
            if !keepingPending {
                state.pending.removeAll()
                state.order.removeAll()
            }
            guard let waiter = state.waiter else { return nil }
            state.waiter = nil
            return { waiter.resume(returning: nil) }
        }
    }

    func next() async -> KeyChange? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<KeyChange?, Never>) in
                let immediate: KeyChange?? = state.withLock { state in
                    if !state.order.isEmpty {
                        let slot = state.order.removeFirst()
                        return .some(state.pending.removeValue(forKey: slot))
                    }
                    if state.finished || Task.isCancelled { return .some(nil) }
                    state.waiter = continuation
                    return .none
                }
                if case .some(let result) = immediate { continuation.resume(returning: result) }
            }
        } onCancel: {
            finish()?()
        }
    }
}

/// The buffer behind one ``Defaults/updates(of:emitCurrentValue:)-(AnyDefaultsKey...,_)`` iterator: only a flag that something changed (the consumer
/// reads a fresh, consistent snapshot when it wakes), so it can never grow.
///
/// What `AsyncStream<Void>` with `.bufferingNewest(1)` would do, written out because the public
/// `DefaultsStream.Iterator` is `Sendable` and `AsyncStream`'s iterator is not (it could not be kept in
/// it), and because a signal must be handed out as a ``Resumption`` to run after the store's lock, where
/// `yield` would resume the consumer under it.
final class SignalBuffer: Sendable {
    private struct State {
        var signalled = false
        var waiter: CheckedContinuation<Bool, Never>?
        var finished = false
    }

    private let state = Lock(State())

    func signal() -> Resumption? {
        state.withLock { state -> Resumption? in
            if state.finished { return nil }
            guard let waiter = state.waiter else {
                state.signalled = true
                return nil
            }
            state.waiter = nil
            return { waiter.resume(returning: true) }
        }
    }

    /// Ends the stream: a waiting consumer gets false. (A signal carries no value: nothing to keep; the
    /// parameter matches the other buffers.)
    func finish(keepingPending: Bool = false) -> Resumption? {
        state.withLock { state -> Resumption? in
            state.finished = true
            guard let waiter = state.waiter else { return nil }
            state.waiter = nil
            return { waiter.resume(returning: false) }
        }
    }

    /// True when something changed, false when the stream is finished.
    func next() async -> Bool {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let immediate: Bool? = state.withLock { state in
                    if state.finished || Task.isCancelled { return false }
                    if state.signalled {
                        state.signalled = false
                        return true
                    }
                    state.waiter = continuation
                    return nil
                }
                if let immediate { continuation.resume(returning: immediate) }
            }
        } onCancel: {
            finish()?()
        }
    }
}
