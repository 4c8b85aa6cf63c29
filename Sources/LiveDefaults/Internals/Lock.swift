/// A value behind a `pthread_mutex_t`: the one lock type of the library.
///
/// Why not `Synchronization.Mutex`: on Linux, ThreadSanitizer (Swift 6.3.1) does not see `Mutex.withLock` as
/// a lock, so every access to state guarded by one is reported as a data race and the suite cannot run under
/// `--sanitize=thread` (see Docs/Reliability.md, "Concurrency checked"). TSan intercepts `pthread_mutex_*`,
/// so it checks our locking instead of drowning real races in false ones. Uncontended, the two cost the same
/// (both a compare-and-swap in and out; Benchmarks/run compares them); the hot read paths
/// (typed keys, missing keys) take no lock at all.
///
/// Value and mutex share one allocation: taking the lock is one pointer away, and the value is reached
/// through a pointer, so Swift's dynamic exclusivity checks (a class's stored `var`) cost nothing. The
/// allocation is a ``LockBuffer``, one class for every `Value`: a class generic over the value (as
/// `ManagedBuffer<Value, pthread_mutex_t>` was) is instantiated by the runtime the first time each `Value`
/// is locked — its metadata and its superclass's built at run time — and a store's open met eight such
/// types before its first read (Docs/Benchmarks.md, "A fresh process").
///
/// The mutex is not recursive: a body must not take the same lock again, and (house rule) must not call user
/// code, log, post notifications or resume continuations — collect what to do and do it after `withLock`.
///
/// `package`: LiveDefaultsTesting's clock uses it too, so that its state is checked under ThreadSanitizer.
package struct Lock<Value>: @unchecked Sendable {
    // @unchecked: every access to the value goes through `withLock`, under the mutex; the value is never
    // handed out by reference. `Value` itself may hold non-Sendable parts only if no body lets them escape,
    // which the callers (all in this package) keep to.
    private let storage: LockBuffer

    package init(_ value: Value) {
        storage = LockBuffer.make(holding: value)
    }

    /// Runs `body` with exclusive access to the value.
    @inline(__always)
    package func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure)
        -> Result
    {
        try storage.withUnsafeMutablePointerToElements { base throws(Failure) -> Result in
            let (mutex, value) = LockBuffer.layout(base, Value.self)
            mutex.lockMutex()
            defer { mutex.unlockMutex() }
            return try body(&value.pointee)
        }
    }
}

/// The allocation behind a ``Lock``: a header (how to destroy the value), then in the tail a
/// `pthread_mutex_t` and the value, each at its alignment. Not generic, so the runtime makes its metadata
/// once per process, not once per locked type.
final class LockBuffer: ManagedBuffer<LockBuffer.Header, UInt8> {
    struct Header {
        /// Deinitialises the value in the tail starting at the address given (the value's type, and so where
        /// ``layout(_:_:)`` puts it, is known only to the ``Lock``).
        let destroyValue: (UnsafeMutablePointer<UInt8>) -> Void
    }

    /// The mutex and the value in a buffer's tail starting at `base`; the same answer for the same buffer.
    @inline(__always)
    static func layout<Value>(
        _ base: UnsafeMutablePointer<UInt8>, _: Value.Type
    ) -> (UnsafeMutablePointer<SystemMutex>, UnsafeMutablePointer<Value>) {
        let mutex = UnsafeMutableRawPointer(base).alignedUp(for: SystemMutex.self)
        let value = (mutex + MemoryLayout<SystemMutex>.size).alignedUp(for: Value.self)
        return (mutex.assumingMemoryBound(to: SystemMutex.self), value.assumingMemoryBound(to: Value.self))
    }

    static func make<Value>(holding initial: Value) -> LockBuffer {
        // Room for both at their alignments, wherever the tail starts.
        let capacity =
            MemoryLayout<SystemMutex>.size + MemoryLayout<SystemMutex>.alignment + MemoryLayout<Value>.size
            + MemoryLayout<Value>.alignment
        let buffer = LockBuffer.create(minimumCapacity: capacity) { _ in
            Header(destroyValue: { base in layout(base, Value.self).1.deinitialize(count: 1) })
        }
        // `create` is declared to return the base class; it builds an instance of the class it is called on.
        let storage = unsafeDowncast(buffer, to: LockBuffer.self)
        storage.withUnsafeMutablePointerToElements { base in
            let (mutex, value) = layout(base, Value.self)
            mutex.initializeMutex()
            value.initialize(to: initial)
        }
        return storage
    }

    deinit {
        withUnsafeMutablePointers { header, base in
            header.pointee.destroyValue(base)
            Self.layout(base, UInt8.self).0.destroyMutex()
        }
    }
}

/// A critical section around work rather than a value, over a `pthread_mutex_t` (see ``Lock`` for why).
///
/// Not `Lock<Void>`: a zero-sized value would share its address with the mutex beside it, and
/// ThreadSanitizer then reports the value's (empty) accesses as races with the mutex itself.
final class CriticalSection: @unchecked Sendable {
    // @unchecked: the mutex is the only state, and pthread mutexes are made to be shared between threads.
    private let mutex: UnsafeMutablePointer<SystemMutex>

    init() {
        mutex = .allocate(capacity: 1)
        mutex.initializeMutex()
    }

    deinit {
        mutex.destroyMutex()
        mutex.deallocate()
    }

    /// Runs `body` while no other thread runs a body of this section.
    func withLock<Result, Failure: Error>(_ body: () throws(Failure) -> Result) throws(Failure) -> Result {
        mutex.lockMutex()
        defer { mutex.unlockMutex() }
        return try body()
    }
}
