/// A value behind a `pthread_mutex_t`: the one lock type of the library.
///
/// Why not `Synchronization.Mutex`: on Linux, ThreadSanitizer (Swift 6.3.1) does not see `Mutex.withLock` as
/// a lock, so every access to state guarded by one is reported as a data race and the suite cannot run under
/// `--sanitize=thread` (see Docs/Reliability.md, "Concurrency checked"). TSan intercepts `pthread_mutex_*`,
/// so it checks our locking instead of drowning real races in false ones. Uncontended, the two cost the same
/// (both a compare-and-swap in and out; Benchmarks/run compares them); the hot read paths
/// (typed keys, missing keys) take no lock at all.
///
/// Value and mutex share one allocation, reached through a pointer, so Swift's dynamic exclusivity checks
/// (a class's stored `var`) cost nothing. The allocation is owned by a ``LockBuffer`` (a second, small
/// allocation, made once per lock: taking the lock is one more load), one plain class for
/// every `Value`: a class generic over the value (as `ManagedBuffer<Value, pthread_mutex_t>` was) is
/// instantiated by the runtime the first time each `Value` is locked, and even a non-generic subclass of
/// `ManagedBuffer` has its metadata built at run time (its superclass is generic and from another module):
/// a noticeable part of a fresh process's first open (Docs/Decisions/ColdOpen.md). A root class's
/// metadata is laid out by the compiler.
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
        // `self` (and so `storage`) is kept alive by the caller for the whole call.
        let (mutex, value) = LockBuffer.layout(storage.base, Value.self)
        mutex.lockMutex()
        defer { mutex.unlockMutex() }
        return try body(&value.pointee)
    }
}

/// A value made once on first use and published: for values whose making must not run under the lock (it reads
/// files or starts a thread).
extension Lock {
    /// The value published, or `make()`'s, made outside the lock: threads that race here may each make one, the
    /// first to publish wins and the others' are dropped.
    package func published<Wrapped>(orMake make: () -> Wrapped) -> Wrapped where Value == Wrapped? {
        published(at: \.self, orMake: make)
    }

    /// The value published at `path` of the locked value (a dictionary's entry, say), or `make()`'s, made outside
    /// the lock, as ``published(orMake:)`` does; when `make` throws, nothing is published and the error passes on.
    package func published<Wrapped, Failure: Error>(
        at path: WritableKeyPath<Value, Wrapped?>, orMake make: () throws(Failure) -> Wrapped
    ) throws(Failure) -> Wrapped {
        if let published = withLock({ $0[keyPath: path] }) { return published }
        let made = try make()
        return withLock { value in
            if let published = value[keyPath: path] { return published }
            value[keyPath: path] = made
            return made
        }
    }
}

/// The allocation behind a ``Lock``: a `pthread_mutex_t`, then the value at its alignment, in memory of its
/// own; the class only owns it. Not generic, and not a subclass, so its metadata is the compiler's.
final class LockBuffer {
    /// The mutex, followed by the value (see ``layout(_:_:)``).
    let base: UnsafeMutableRawPointer
    /// Deinitialises the value (whose type only the ``Lock`` knows) in the memory starting at `base`.
    private let destroyValue: (UnsafeMutableRawPointer) -> Void

    /// The mutex and the value in the memory starting at `base`; the same answer for the same memory.
    @inline(__always)
    static func layout<Value>(
        _ base: UnsafeMutableRawPointer, _: Value.Type
    ) -> (UnsafeMutablePointer<SystemMutex>, UnsafeMutablePointer<Value>) {
        let value = (base + MemoryLayout<SystemMutex>.size).alignedUp(for: Value.self)
        return (base.assumingMemoryBound(to: SystemMutex.self), value.assumingMemoryBound(to: Value.self))
    }

    static func make<Value>(holding initial: Value) -> LockBuffer {
        LockBuffer(holding: initial)
    }

    private init<Value>(holding initial: Value) {
        // The mutex at the start; room after it for the value at its alignment (at least one byte, so that an
        // empty value does not sit at the end of the memory).
        let alignment = max(MemoryLayout<SystemMutex>.alignment, MemoryLayout<Value>.alignment)
        let byteCount =
            MemoryLayout<SystemMutex>.size + MemoryLayout<Value>.alignment + max(1, MemoryLayout<Value>.size)
        base = .allocate(byteCount: byteCount, alignment: alignment)
        destroyValue = { base in LockBuffer.layout(base, Value.self).1.deinitialize(count: 1) }
        let (mutex, value) = Self.layout(base, Value.self)
        mutex.initializeMutex()
        value.initialize(to: initial)
    }

    deinit {
        destroyValue(base)
        Self.layout(base, UInt8.self).0.destroyMutex()
        base.deallocate()
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
