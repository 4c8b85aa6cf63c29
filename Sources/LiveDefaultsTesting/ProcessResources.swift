import CLiveDefaultsTesting
import Foundation

/// What this process holds of the resources a store takes: heap, file descriptors and inotify watches. A test
/// of a long-running program takes one before and one after it made and dropped its stores, and expects the
/// difference back near zero; LiveDefaults' own resource-hygiene test and memory benchmark use it so.
///
/// Linux only, read from glibc and /proc: the heap figure is glibc's count of bytes handed out and not freed
/// (not the resident set, which keeps pages the allocator has cached), so a leak of a few bytes per store
/// shows after a few thousand stores, whatever the allocator keeps for itself.
public struct ProcessResources: Sendable, Equatable, CustomStringConvertible {
    /// Bytes of heap in use (glibc's `mallinfo2`: every arena's allocated bytes plus separately mapped chunks).
    public var heapBytes: Int
    /// Open file descriptors (the entries of /proc/self/fd, less the one this reading opens to list them).
    public var openFileDescriptors: Int
    /// inotify watches held by every inotify instance of the process (the `inotify wd:` lines of
    /// /proc/self/fdinfo).
    public var inotifyWatches: Int

    /// Resources as given: a figure a test computed, or one read elsewhere.
    public init(heapBytes: Int, openFileDescriptors: Int, inotifyWatches: Int) {
        self.heapBytes = heapBytes
        self.openFileDescriptors = openFileDescriptors
        self.inotifyWatches = inotifyWatches
    }

    /// The process's resources now; -1 for a count /proc would not give (not Linux, or /proc not mounted).
    public static func current() -> ProcessResources {
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        var watches = 0
        for name in descriptors {
            guard
                let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(name)"),
                target == "anon_inode:inotify",
                let info = try? String(contentsOfFile: "/proc/self/fdinfo/\(name)", encoding: .utf8)
            else { continue }
            watches += info.split(separator: "\n").count(where: { $0.hasPrefix("inotify wd:") })
        }
        return ProcessResources(
            heapBytes: Int(clamping: livedefaults_heap_bytes_in_use()),
            // Listing the directory opens one descriptor of its own, which is in the listing.
            openFileDescriptors: descriptors.isEmpty ? -1 : descriptors.count - 1,
            inotifyWatches: descriptors.isEmpty ? -1 : watches)
    }

    /// The process's resources once its background work is out of the way: the least heap of `readings` readings
    /// `interval` apart, with the last reading's descriptors and watches. A leak is in every reading; what a
    /// background thread allocates for a moment (a polling watcher's directory listing, a queue's timer) is in
    /// some, and a single reading taken then counted it as kept (the resource-hygiene test failed so in CI, by
    /// up to twice its allowance, with no growth over three times as many stores).
    public static func settled(readings: Int = 5, interval: Duration = .milliseconds(20)) -> ProcessResources {
        var settled = current()
        for _ in 1..<max(readings, 1) {
            let (seconds, attoseconds) = interval.components
            let microseconds = max(0, seconds) * 1_000_000 + max(0, attoseconds) / 1_000_000_000_000
            usleep(UInt32(clamping: microseconds))
            let reading = current()
            settled = ProcessResources(
                heapBytes: min(settled.heapBytes, reading.heapBytes),
                openFileDescriptors: reading.openFileDescriptors, inotifyWatches: reading.inotifyWatches)
        }
        return settled
    }

    /// The three figures on one line, for a test's failure message.
    public var description: String {
        "heap \(heapBytes) B, \(openFileDescriptors) file descriptors, \(inotifyWatches) inotify watches"
    }
}
