import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The kernel's notification of changes in watched directories: inotify, where it is compiled in (Linux,
/// unless LIVEDEFAULTS_POLLING_ONLY is defined). Without it, ``open()`` says why and the watcher polls.
package enum Inotify {
    #if os(Linux) && !LIVEDEFAULTS_POLLING_ONLY
        /// Whether inotify is compiled in (the `defaults doctor` command says so).
        package static let isCompiledIn = true
    #else
        package static let isCompiledIn = false
    #endif

    /// What happened to a name in a watched directory (or to the directory itself).
    package struct Event: Sendable {
        package struct Kind: OptionSet, Sendable {
            package let rawValue: UInt32
            package init(rawValue: UInt32) { self.rawValue = rawValue }
            #if os(Linux) && !LIVEDEFAULTS_POLLING_ONLY
                package static let closedAfterWriting = Kind(rawValue: UInt32(IN_CLOSE_WRITE))
                package static let movedTo = Kind(rawValue: UInt32(IN_MOVED_TO))
                package static let movedFrom = Kind(rawValue: UInt32(IN_MOVED_FROM))
                package static let created = Kind(rawValue: UInt32(IN_CREATE))
                package static let deleted = Kind(rawValue: UInt32(IN_DELETE))
                /// The watched directory itself was deleted or moved, or its watch removed.
                package static let watchEnded = Kind(rawValue: UInt32(IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED))
                package static let isDirectory = Kind(rawValue: UInt32(IN_ISDIR))
                /// The kernel's queue overflowed: events were lost.
                package static let overflow = Kind(rawValue: UInt32(IN_Q_OVERFLOW))
            #else
                package static let closedAfterWriting = Kind(rawValue: 1 << 0)
                package static let movedTo = Kind(rawValue: 1 << 1)
                package static let movedFrom = Kind(rawValue: 1 << 2)
                package static let created = Kind(rawValue: 1 << 3)
                package static let deleted = Kind(rawValue: 1 << 4)
                package static let watchEnded = Kind(rawValue: 1 << 5)
                package static let isDirectory = Kind(rawValue: 1 << 6)
                package static let overflow = Kind(rawValue: 1 << 7)
            #endif
        }

        package var watch: Int32
        package var kind: Kind
        /// The name in the directory; empty for events of the directory itself.
        package var name: String

        package init(watch: Int32, kind: Kind, name: String) {
            self.watch = watch
            self.kind = kind
            self.name = name
        }
    }

    /// A new non-blocking, close-on-exec instance, or why there is none.
    static func open() -> Result<Int32, SystemError> {
        #if os(Linux) && !LIVEDEFAULTS_POLLING_ONLY
            let descriptor = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
            return descriptor >= 0
                ? .success(descriptor) : .failure(SystemError(errno: errno, operation: "inotify_init1"))
        #else
            return .failure(SystemError(errno: ENOSYS, operation: "inotify (not compiled in)"))
        #endif
    }

    /// Watches a directory for every change the watcher follows (one mask for all watches: adding a watch
    /// for a path already watched replaces its mask).
    /// Closes an inotify descriptor (its watches go with it).
    static func close(_ descriptor: Int32) {
        #if canImport(Glibc)
            _ = Glibc.close(descriptor)
        #elseif canImport(Darwin)
            _ = Darwin.close(descriptor)
        #endif
    }

    static func addWatch(_ descriptor: Int32, directory path: String) -> Result<Int32, SystemError> {
        #if os(Linux) && !LIVEDEFAULTS_POLLING_ONLY
            let mask = UInt32(
                IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | IN_DELETE_SELF
                    | IN_MOVE_SELF | IN_ONLYDIR)
            let watch = inotify_add_watch(descriptor, path, mask)
            return watch >= 0 ? .success(watch) : .failure(SystemError(errno: errno, operation: "inotify_add_watch"))
        #else
            return .failure(SystemError(errno: ENOSYS, operation: "inotify (not compiled in)"))
        #endif
    }

    static func removeWatch(_ descriptor: Int32, _ watch: Int32) {
        #if os(Linux) && !LIVEDEFAULTS_POLLING_ONLY
            inotify_rm_watch(descriptor, watch)
        #endif
    }

    /// Reads every event queued on the descriptor, in order, until none is left.
    ///
    /// The buffer is not zero-filled: only the bytes `read` returns are looked at (zeroing 64 KiB per batch
    /// cost more than the rest of handling it). An event whose name would run past what was read ends the
    /// batch (the kernel never splits an event), never a trap.
    static func readEvents(_ descriptor: Int32, _ body: (Event) -> Void) {
        #if os(Linux) && !LIVEDEFAULTS_POLLING_ONLY
            let bufferSize = 64 * 1024
            let header = MemoryLayout<inotify_event>.size
            let buffer = UnsafeMutableRawBufferPointer.allocate(
                byteCount: bufferSize, alignment: MemoryLayout<inotify_event>.alignment)
            defer { buffer.deallocate() }
            while true {
                let count = read(descriptor, buffer.baseAddress, bufferSize)
                if count <= 0 { break }
                var offset = 0
                while offset + header <= count {
                    let event = buffer.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
                    let nameStart = offset + header
                    let nameLength = Int(event.len)
                    guard nameLength <= count - nameStart else { break }
                    let name = String(
                        decoding: UnsafeRawBufferPointer(rebasing: buffer[nameStart..<(nameStart + nameLength)])
                            .prefix { $0 != 0 }, as: UTF8.self)
                    offset = nameStart + nameLength
                    body(Event(watch: event.wd, kind: Event.Kind(rawValue: event.mask), name: name))
                }
            }
        #endif
    }
}
