import Dispatch
import Foundation
import Synchronization
import Testing

@testable import LiveDefaults

/// The change log's attributions (a fleet revision, a reason): bound while the body runs, unbound everywhere
/// else, whatever other threads bind meanwhile.
@Suite("CountedTaskLocal: a task-local that costs one load while unbound")
struct CountedTaskLocalTests {
    @Test("bound inside, nested bindings win and end, nil after")
    func bindings() {
        let local = CountedTaskLocal<String>()
        #expect(local.current == nil)
        local.withValue("outer") {
            #expect(local.current == "outer")
            local.withValue("inner") { #expect(local.current == "inner") }
            #expect(local.current == "outer")
        }
        #expect(local.current == nil)
    }

    @Test("a thread outside any binding sees nil while another thread is inside one")
    func otherThreadsUnbound() {
        let local = CountedTaskLocal<Int>()
        let inside = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let seen = Mutex<Int?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            local.withValue(7) {
                inside.signal()
                release.wait()
                seen.withLock { $0 = local.current }
            }
            done.signal()
        }
        inside.wait()
        // The count is one now, so the lookup is made: it must still answer for this thread alone.
        #expect(local.current == nil)
        release.signal()
        done.wait()
        #expect(seen.withLock { $0 } == 7)
        #expect(local.current == nil)
    }
}
