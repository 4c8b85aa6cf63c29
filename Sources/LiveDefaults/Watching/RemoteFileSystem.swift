/// File systems whose files other machines can change: inotify reports only the changes made through this
/// machine's kernel, so a watch on them stays silent when another host writes. Directories on them are
/// polled (see `FileWatcher`).
enum RemoteFileSystem {
    /// The usual name of a network or user-space file system's `statfs` magic number, or nil for any other.
    ///
    /// A switch rather than a dictionary: a process asks this once per watched directory, and the first use of
    /// a dictionary type costs the Swift runtime a scan of every loaded protocol conformance (Docs/Benchmarks.md,
    /// "A fresh process").
    static func knownName(ofMagicNumber number: UInt) -> String? {
        switch number {
        case 0x6969: "nfs"
        case 0x517B: "smb"
        case 0xFF53_4D42: "cifs"
        case 0xFE53_4D42: "smb2"
        case 0x6573_5546: "fuse"
        case 0x0102_1997: "9p"
        case 0x00C3_6400: "ceph"
        case 0x5346_414F: "afs"
        case 0x0BD0_0BD0: "lustre"
        case 0x4750_4653: "gpfs"
        default: nil
        }
    }

    /// The name of the network or user-space file system that holds `path` on `fileSystem`, or nil when it is
    /// a local one (or `statfs` cannot tell: the path does not exist).
    static func name(ofFileSystemAt path: String, on fileSystem: any DefaultsFileSystem) -> String? {
        guard let type = try? fileSystem.fileSystemType(atPath: path) else { return nil }
        return knownName(ofMagicNumber: type)
    }

    /// How a watcher tells remote directories, given `LIVEDEFAULTS_WATCHER`: `inotify` trusts inotify
    /// everywhere (never polls for this reason), anything else asks `fileSystem`
    /// (``name(ofFileSystemAt:on:)``).
    static func detector(setting: String?, on fileSystem: any DefaultsFileSystem) -> @Sendable (String) -> String? {
        detector(setting: setting) { name(ofFileSystemAt: $0, on: fileSystem) }
    }

    /// As ``detector(setting:on:)``, with `detect` telling the file system's name (a test's stand-in).
    static func detector(setting: String?, detect: @escaping @Sendable (String) -> String?)
        -> @Sendable (String) -> String?
    {
        if setting == "inotify" { return { _ in nil } }
        return detect
    }
}
