import Foundation

/// A directory laid out and updated as the kubelet lays out and updates a ConfigMap or Secret volume, by a
/// real second process (Python), step for step as the kubelet's atomic writer does it:
///
/// ```
/// volume/com.example.plist -> ..data/com.example.plist    (one link per key of the map)
/// volume/..data -> ..2026_11_24_19_00_01.000001           (the current version)
/// volume/..2026_11_24_19_00_01.000001/com.example.plist   (the files themselves)
/// ```
///
/// An update writes a new timestamped directory, links `..data_tmp` to it, renames `..data_tmp` over
/// `..data`, adds links for new keys, removes links for keys no longer in the map, and removes the old
/// directory. No event ever names a file through its link.
public struct KubeletVolume: Sendable {
    /// The volume's directory (the mount point).
    public let path: String

    /// A volume at `path` (created by the first update if it does not exist).
    public init(path: String) {
        self.path = path
    }

    /// One update of the whole map: `files` is the new content of every key (file name → bytes).
    public func update(_ files: [String: String]) throws {
        let payload = files.map { name, text in
            "    \(Self.pythonString(name)): bytes.fromhex('\(text.utf8.map { String(format: "%02x", $0) }.joined())'),"
        }.joined(separator: "\n")
        try Self.runPython(
            Self.writer + """
                update(\(Self.pythonString(path)), {
                \(payload)
                })
                """)
    }

    /// `count` updates in a row, in one process, as fast as the atomic writer goes: update n gives every one of
    /// `keys` the text `n`.
    public func numberedUpdates(_ count: Int, keys: [String]) throws {
        try Self.runPython(
            Self.writer + """
                for n in range(1, \(count) + 1):
                    update(\(Self.pythonString(path)), {name: str(n).encode() for name in [\(keys.map(Self.pythonString).joined(separator: ", "))]})
                """)
    }

    /// The atomic writer, as a Python function `update(volume, files)`: a new time-stamped directory with every
    /// file, `..data` swapped to it by rename, a link per key, links of dropped keys and the old directory removed.
    static let writer = """
        import os, shutil, time
        def update(volume, files):
            os.makedirs(volume, exist_ok=True)
            data = os.path.join(volume, '..data')
            old = os.readlink(data) if os.path.islink(data) else None
            stamp = time.strftime('..%Y_%m_%d_%H_%M_%S') + '.%06d' % (time.time_ns() // 1000 % 1000000)
            while os.path.exists(os.path.join(volume, stamp)):
                stamp += '1'
            directory = os.path.join(volume, stamp)
            os.mkdir(directory, 0o755)
            for name, content in files.items():
                with open(os.path.join(directory, name), 'wb') as f:
                    f.write(content)
            os.symlink(stamp, os.path.join(volume, '..data_tmp'))
            os.rename(os.path.join(volume, '..data_tmp'), data)
            for name in files:
                link = os.path.join(volume, name)
                if not os.path.lexists(link):
                    os.symlink(os.path.join('..data', name), link)
            for name in os.listdir(volume):
                if not name.startswith('..') and name not in files and os.path.islink(os.path.join(volume, name)):
                    os.unlink(os.path.join(volume, name))
            if old is not None and old != stamp:
                shutil.rmtree(os.path.join(volume, old), ignore_errors=True)

        """

    /// Removes the whole volume (as when its pod's volume is torn down).
    public func remove() throws {
        try Self.runPython("import shutil; shutil.rmtree(\(Self.pythonString(path)))")
    }

    static func pythonString(_ text: String) -> String {
        "bytes.fromhex('\(text.utf8.map { String(format: "%02x", $0) }.joined())').decode()"
    }

    static func runPython(_ script: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script]
        let result = try runToEnd(process, errors: .merged)
        guard result.status == 0 else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "python: \(result.output)"])
        }
    }
}
