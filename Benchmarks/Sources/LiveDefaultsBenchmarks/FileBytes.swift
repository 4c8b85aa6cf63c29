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
