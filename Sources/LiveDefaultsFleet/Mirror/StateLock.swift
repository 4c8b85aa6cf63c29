#if Fleet
    import Foundation

    #if canImport(Glibc)
        import Glibc
    #elseif canImport(Musl)
        import Musl
    #endif

    /// The lock that keeps a second agent away from a domain: `<state directory>/<domain>.lock`, write-locked
    /// whole by the running agent for as long as it mirrors the domain (released by the kernel when the agent's
    /// process ends, however it ends).
    ///
    /// An open-file-description lock (Linux's `F_OFD_SETLK`): like `flock`, it belongs to the open file and not
    /// to the process, and unlike `flock` another process can ask whether it is held without taking it
    /// (`F_OFD_GETLK`), which is how `defaults sync --status` tells a running agent from a stopped one without
    /// ever making an agent that starts at that moment believe the domain is taken.
    enum StateLock {
        // From <fcntl.h> (Linux, every architecture); Swift's Glibc module leaves them out (they need _GNU_SOURCE).
        private static let getLock: Int32 = 36  // F_OFD_GETLK
        private static let setLock: Int32 = 37  // F_OFD_SETLK

        static func path(stateDirectory: String, domain: String) -> String {
            stateDirectory + "/" + domain + ".lock"
        }

        private static func wholeFile(_ type: Int32) -> flock {
            var description = flock()
            description.l_type = Int16(type)
            description.l_whence = Int16(SEEK_SET)
            description.l_start = 0
            description.l_len = 0
            description.l_pid = 0
            return description
        }

        /// Takes the lock on an open descriptor (opened for writing) without waiting; false when another open
        /// file holds it.
        static func tryLock(_ descriptor: Int32) -> Bool {
            var description = wholeFile(F_WRLCK)
            return fcntl(descriptor, setLock, &description) == 0
        }

        /// Whether some process holds the lock file's lock now (false when the file does not exist).
        static func isHeld(path: String) -> Bool {
            let descriptor = open(path, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { return false }
            defer { close(descriptor) }
            var description = wholeFile(F_WRLCK)
            guard fcntl(descriptor, getLock, &description) == 0 else { return false }
            return description.l_type != Int16(F_UNLCK)
        }
    }
#endif
