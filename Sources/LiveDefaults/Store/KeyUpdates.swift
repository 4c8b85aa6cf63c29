/// The effective values of one key, as an `AsyncSequence`: ``Defaults/updates(forKey:emitCurrentValue:)``.
///
/// ```swift
/// for await limit in defaults.updates(forKey: "RateLimit") {
///     apply(limit?.integerValue ?? 100)     // nil: no domain has the key
/// }
/// ```
///
/// - The **current value comes first** (unless `emitCurrentValue` is false), then every change, whoever
///   made it: this process, another process, a person editing the file.
/// - **Newest wins**: a consumer that is slower than the changes skips intermediate values, never builds
///   up a queue, and always ends on the latest value.
/// - **Equal consecutive values are dropped**: a write that does not change the effective value (or that a
///   domain earlier in the search list shadows) yields nothing.
/// - The sequence **finishes** when the iterating task is cancelled or the store is deallocated; the
///   subscription is removed then, or when the iterator is dropped.
///
/// Each iterator is an independent subscription, registered when iteration starts.
public struct KeyUpdates: AsyncSequence, Sendable {
    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    public typealias Element = PropertyList?

    let store: WeakStore
    let key: String
    let emitCurrentValue: Bool

    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    public func makeAsyncIterator() -> Iterator {
        Iterator(subscription: store.store?.subscribeValue(forKey: key, emitCurrentValue: emitCurrentValue))
    }

    /// Iterates one subscription. It may be handed to another task, but is meant for one consumer.
    public struct Iterator: AsyncIteratorProtocol, Sendable {
        let subscription: ValueSubscription?

        // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
        public mutating func next() async -> PropertyList?? {
            guard let subscription else { return nil }
            let value = await subscription.buffer.next()
            if value == nil { subscription.cancel() }
            return value
        }
    }
}

/// Changes of keys, as an `AsyncSequence`: ``Defaults/changes()`` for a store's effective values,
/// ``Defaults/changes(inDomain:)`` for one domain's own values.
///
/// ```swift
/// for await change in defaults.changes() where change.origin == .external {
///     log.info("\(change.key) is now \(change.newValue.map { "\($0)" } ?? "unset")")
/// }
/// ```
///
/// - There is no initial element: each element is a change made after iteration started.
/// - A slow consumer never builds up an unbounded queue: pending changes are coalesced per key (from the
///   first old value to the newest new value, dropped when they cancel out), so memory is bounded by the
///   number of keys and every key ends on its latest value.
/// - The sequence finishes when the iterating task is cancelled or the store is deallocated.
public struct KeyChanges: AsyncSequence, Sendable {
    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    public typealias Element = KeyChange

    let store: WeakStore
    /// nil: every effective change of the store.
    let domain: String?

    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    public func makeAsyncIterator() -> Iterator {
        Iterator(subscription: store.store?.subscribeChanges(inDomain: domain))
    }

    /// Iterates one subscription. It may be handed to another task, but is meant for one consumer.
    public struct Iterator: AsyncIteratorProtocol, Sendable {
        let subscription: ChangeSubscription?

        // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
        public mutating func next() async -> KeyChange? {
            guard let subscription else { return nil }
            let change = await subscription.buffer.next()
            if change == nil { subscription.cancel() }
            return change
        }
    }
}

/// A weak reference to a store, so that a sequence or iterator never keeps the store alive.
final class WeakStore: Sendable {
    // `weak let` keeps the reference immutable, so the box is Sendable without a lock.
    weak let store: Defaults?
    init(_ store: Defaults) { self.store = store }
}

/// One registered stream iterator and its buffer; unregisters when cancelled or deallocated.
final class Subscription<Buffer: Sendable>: Sendable {
    let id: UInt64
    let buffer: Buffer
    let store: WeakStore

    init(id: UInt64, buffer: Buffer, store: WeakStore) {
        self.id = id
        self.buffer = buffer
        self.store = store
    }

    func cancel() { store.store?.unsubscribe(id) }
    deinit { cancel() }
}

typealias ValueSubscription = Subscription<ValueBuffer>
typealias ChangeSubscription = Subscription<ChangeBuffer>
typealias SignalSubscription = Subscription<SignalBuffer>
