import Glibc

/// Calls `body` with the bytes of the file at `path`, read with `open`/`fstat`/`read` into one buffer: the
/// least any reader does (the floors read this way, as the store reads its files); nil when the file cannot
/// be read or is empty.
func withFileBytes<Result>(_ path: String, _ body: (UnsafeRawBufferPointer) -> Result?) -> Result? {
    let descriptor = open(path, O_RDONLY | O_CLOEXEC)
    guard descriptor >= 0 else { return nil }
    defer { close(descriptor) }
    var status = stat()
    guard fstat(descriptor, &status) == 0, status.st_size > 0, let size = Int(exactly: status.st_size) else {
        return nil
    }
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 16)
    defer { buffer.deallocate() }
    var filled = 0
    while filled < size {
        let count = read(descriptor, buffer.baseAddress! + filled, size - filled)
        if count < 0 && errno == EINTR { continue }
        guard count > 0 else { break }
        filled += count
    }
    return body(UnsafeRawBufferPointer(rebasing: buffer[..<filled]))
}

/// The least watching costs an open: an inotify descriptor, a watch on `directory` for what writers do to a
/// file in it, and a thread that waits on the descriptor; both live until the process ends. False when any
/// of it fails.
func startWatchingFloor(directory: String) -> Bool {
    let descriptor = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
    guard descriptor >= 0 else { return false }
    let mask = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_CREATE)
    guard inotify_add_watch(descriptor, directory, mask) >= 0 else { return false }
    var thread = pthread_t()
    // The descriptor travels in the context pointer (plus one: descriptor 0 would be a nil pointer).
    let started = pthread_create(
        &thread, nil,
        { context in
            var entry = pollfd(fd: Int32(Int(bitPattern: context) - 1), events: Int16(POLLIN), revents: 0)
            _ = poll(&entry, 1, -1)
            return nil
        }, UnsafeMutableRawPointer(bitPattern: Int(descriptor) + 1))
    return started == 0
}
