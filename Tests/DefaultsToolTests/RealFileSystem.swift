@testable import LiveDefaults

// The tests' temporary directories are on the real file system: what the library keeps there, read and made
// as the real process (``StorageContext/system``) does.

extension ChangeLog {
    static func read(at path: String) -> ChangeLog {
        read(at: path, on: StorageContext.system.fileSystem)
    }
}

extension DomainFile {
    /// A file of its own for `path` in the real process's context: another writer of the same path.
    convenience init(path: String) {
        self.init(path: path, context: .system)
    }
}
