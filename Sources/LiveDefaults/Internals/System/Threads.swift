import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The mutex ``Lock`` and ``CriticalSection`` are built on: `pthread_mutex_t`, which ThreadSanitizer sees.
typealias SystemMutex = pthread_mutex_t

extension UnsafeMutablePointer where Pointee == SystemMutex {
    /// Initialises the (allocated, uninitialised) mutex.
    func initializeMutex() {
        initialize(to: pthread_mutex_t())
        pthread_mutex_init(self, nil)
    }

    func lockMutex() { pthread_mutex_lock(self) }
    func unlockMutex() { pthread_mutex_unlock(self) }

    /// Destroys the mutex and deinitialises the memory.
    func destroyMutex() {
        pthread_mutex_destroy(self)
        deinitialize(count: 1)
    }
}

/// A word of storage per thread, zero until a thread sets it.
struct ThreadLocalWord: @unchecked Sendable {
    // @unchecked: a pthread key is an index, the same for every thread; each thread's value is its own.
    private let key: pthread_key_t

    init() {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        self.key = key
    }

    var value: Int {
        get { Int(bitPattern: pthread_getspecific(key)) }
        nonmutating set { pthread_setspecific(key, UnsafeRawPointer(bitPattern: newValue)) }
    }
}

/// Runs `body` on a new detached thread (`name` is for platforms where Foundation's `Thread` makes it; Glibc's
/// module does not offer `pthread_setname_np`). False when the system made no thread (`EAGAIN`: a thread or memory limit); `body` then never runs.
///
/// The one thread the library makes itself, for the file watcher (see ``WatcherThread`` for why not
/// libdispatch). `pthread_create` is intercepted by ThreadSanitizer, so what the caller did before is seen
/// as happening before `body`.
func startDetachedThread(named name: String, _ body: @escaping @Sendable () -> Void) -> Bool {
    final class Start {
        let name: String
        let body: @Sendable () -> Void
        init(name: String, body: @escaping @Sendable () -> Void) {
            self.name = name
            self.body = body
        }
    }
    let start = Unmanaged.passRetained(Start(name: name, body: body))
    #if canImport(Glibc)
        var thread: pthread_t = 0
        let result = pthread_create(
            &thread, nil,
            { context in
                guard let context else { return nil }
                let start = Unmanaged<Start>.fromOpaque(context).takeRetainedValue()
                start.body()
                return nil
            }, start.toOpaque())
        if result != 0 {
            start.release()
            return false
        }
        pthread_detach(thread)
        return true
    #else
        let thread = Thread { start.takeRetainedValue().body() }
        thread.name = name
        thread.start()
        return true
    #endif
}

/// A pipe through which one thread wakes another that waits in ``waitForInput(on:wake:block:)``: both ends
/// non-blocking and closed on `exec`.
struct WakePipe: Sendable {
    let readEnd: Int32
    let writeEnd: Int32

    /// A new pipe; nil when the process has no descriptors left.
    static func make() -> WakePipe? {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { return nil }
        for end in ends {
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
        }
        return WakePipe(readEnd: ends[0], writeEnd: ends[1])
    }

    /// Wakes the waiting thread. A full pipe (never, with one byte per wait) is a pending wake-up already.
    func wake() {
        var byte: UInt8 = 1
        _ = systemWrite(writeEnd, &byte, 1)
    }

    /// Empties the pipe after a wake-up.
    func drain() {
        var bytes: (UInt64, UInt64) = (0, 0)
        while withUnsafeMutableBytes(of: &bytes, { systemRead(readEnd, $0.baseAddress!, $0.count) }) > 0 {}
    }

    func close() {
        _ = systemClose(readEnd)
        _ = systemClose(writeEnd)
    }
}

/// How long ``waitForInput(on:wake:block:)`` blocks, in milliseconds, when there is no wake pipe to end the
/// wait (no descriptors were left to make one): the caller then looks for new work this often.
let unwokenWaitMilliseconds: Int32 = 10

/// Waits until `descriptor` has input or `wake` is written to, and empties `wake`; with `block` false, only
/// looks. A negative `descriptor` is not waited on; without a `wake` pipe the wait ends after
/// ``unwokenWaitMilliseconds``, so that the caller looks for new work. Returns whether `descriptor` has input.
func waitForInput(on descriptor: Int32, wake: WakePipe?, block: Bool) -> Bool {
    var descriptors = [
        pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0),
        pollfd(fd: wake?.readEnd ?? -1, events: Int16(POLLIN), revents: 0),
    ]
    let timeout: Int32 = block ? (wake == nil ? unwokenWaitMilliseconds : -1) : 0
    while poll(&descriptors, 2, timeout) < 0 {
        if errno != EINTR { return false }
    }
    if descriptors[1].revents != 0 { wake?.drain() }
    return descriptor >= 0 && descriptors[0].revents != 0
}

/// Sleeps the calling thread for `nanoseconds`, resuming the sleep when a signal interrupts it.
func sleepThread(nanoseconds total: Int) {
    var request = timespec(tv_sec: total / 1_000_000_000, tv_nsec: total % 1_000_000_000)
    var remaining = timespec()
    while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
}
