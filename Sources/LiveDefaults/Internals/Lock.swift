/// A value behind a `pthread_mutex_t`: the one lock type of the library.
///
/// Why not `Synchronization.Mutex`: on Linux, ThreadSanitizer (Swift 6.3.1) does not see `Mutex.withLock` as
/// a lock, so every access to state guarded by one is reported as a data race and the suite cannot run under
/// `--sanitize=thread` (see Docs/Reliability.md, "Concurrency checked"). TSan intercepts `pthread_mutex_*`,
/// so it checks our locking instead of drowning real races in false ones. Uncontended, the two cost the same
/// (both a compare-and-swap in and out; Benchmarks/run compares them); the hot read paths
/// (typed keys, missing keys) take no lock at all.
///
/// Value and mutex share one allocation (`ManagedBuffer`): taking the lock is one pointer away, and the value
/// is reached through a pointer, so Swift's dynamic exclusivity checks (a class's stored `var`) cost nothing.
///
/// The mutex is not recursive: a body must not take the same lock again, and (house rule) must not call user
/// code, log, post notifications or resume continuations — collect what to do and do it after `withLock`.
///
/// `package`: LiveDefaultsTesting's clock uses it too, so that its state is checked under ThreadSanitizer.
package struct Lock<Value>: @unchecked Sendable {
    // @unchecked: every access to the value goes through `withLock`, under the mutex; the value is never
    // handed out by reference. `Value` itself may hold non-Sendable parts only if no body lets them escape,
    // which the callers (all in this package) keep to.
    private let storage: Storage

    package init(_ value: Value) {
        storage = Storage.make(value)
    }

    /// Runs `body` with exclusive access to the value.
    @inline(__always)
    package func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure)
        -> Result
    {
        try storage.withLockedValue(body)
    }

    private final class Storage: ManagedBuffer<Value, SystemMutex> {
        static func make(_ value: Value) -> Storage {
            let buffer = Storage.create(minimumCapacity: 1) { _ in value }
            // `create` is declared to return the base class; it builds an instance of the class it is called on.
            let storage = unsafeDowncast(buffer, to: Storage.self)
            storage.withUnsafeMutablePointerToElements { mutex in mutex.initializeMutex() }
            return storage
        }

        @inline(__always)
        func withLockedValue<Result, Failure: Error>(
            _ body: (inout Value) throws(Failure) -> Result
        ) throws(Failure) -> Result {
            try withUnsafeMutablePointers { value, mutex throws(Failure) -> Result in
                mutex.lockMutex()
                defer { mutex.unlockMutex() }
                return try body(&value.pointee)
            }
        }

        deinit {
            withUnsafeMutablePointerToElements { mutex in mutex.destroyMutex() }
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
