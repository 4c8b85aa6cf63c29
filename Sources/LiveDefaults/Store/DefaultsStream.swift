/// A live stream of a store's values or changes, as an `AsyncSequence`: every change stream of the library
/// is one of these, told apart by its element.
///
/// | made by | element | what it yields |
/// | --- | --- | --- |
/// | ``Defaults/updates(forKey:emitCurrentValue:)`` | `PropertyList?` | a key's effective value now, then after each change |
/// | ``Defaults/changes()``, ``Defaults/changes(inDomain:)`` | ``KeyChange`` | every change, no initial element |
/// | ``Defaults/updates(_:emitCurrentValue:)``, `$property.updates` | the key's `Value` | a typed key's value now, then after each change |
/// | ``Defaults/updates(of:emitCurrentValue:)-(AnyDefaultsKey...,_)`` | ``DefaultsSnapshot`` | several keys at one moment, whenever any changes |
///
/// ```swift
/// for await limit in defaults.updates(forKey: "RateLimit") {
///     apply(limit?.integerValue ?? 100)     // nil: no domain has the key
/// }
/// ```
///
/// What every stream shares:
/// - Changes are seen **whoever made them**: this process, another process, a person editing the file.
/// - **A slow consumer never builds up a queue.** A value stream keeps only the newest value (newest wins,
///   and a value equal to the last one delivered is dropped); a change stream coalesces pending changes per
///   key, from the first old value to the newest new value, dropped when they cancel out; a snapshot stream
///   takes a new snapshot when the consumer asks. Memory is bounded by the number of keys, and every key
///   ends on its latest value.
/// - A stream **finishes** when the iterating task is cancelled, the store is deallocated or
///   ``Defaults/finishStreams()`` is called; the subscription is removed then, or when the iterator is
///   dropped.
/// - Each iterator is an independent subscription, registered when iteration starts. It may be handed to
///   another task, but is meant for one consumer.
public struct DefaultsStream<Element: Sendable>: AsyncSequence, Sendable {
    /// Starts one subscription: called once for each iterator made.
    let start: @Sendable () -> any StreamCursor<Element>

    // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
    public func makeAsyncIterator() -> Iterator {
        Iterator(cursor: start())
    }

    /// Iterates one subscription.
    public struct Iterator: AsyncIteratorProtocol, Sendable {
        var cursor: any StreamCursor<Element>

        // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
        public mutating func next() async -> Element? {
            await cursor.next()
        }
    }
}

/// One subscription's way through a stream: what a ``DefaultsStream`` iterator asks for its next element.
protocol StreamCursor<Element>: Sendable {
    associatedtype Element
    /// The next element; nil when the stream has finished (the subscription is cancelled then).
    mutating func next() async -> Element?
}

/// A key's effective values (``Defaults/updates(forKey:emitCurrentValue:)``): one pending value, newest wins.
struct ValueCursor: StreamCursor {
    let subscription: ValueSubscription?

    mutating func next() async -> PropertyList?? {
        guard let subscription else { return nil }
        let value = await subscription.buffer.next()
        if value == nil { subscription.cancel() }
        return value
    }
}

/// Changes of keys (``Defaults/changes()``, ``Defaults/changes(inDomain:)``): coalesced per key.
struct ChangeCursor: StreamCursor {
    let subscription: ChangeSubscription?

    mutating func next() async -> KeyChange? {
        guard let subscription else { return nil }
        let change = await subscription.buffer.next()
        if change == nil { subscription.cancel() }
        return change
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
