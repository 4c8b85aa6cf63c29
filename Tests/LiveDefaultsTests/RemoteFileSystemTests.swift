import Foundation
import Logging
import TestProcesses
import Testing

@testable import LiveDefaults

/// Directories on file systems where inotify cannot see other machines' writes are polled.
@Suite("Watcher: network and user-space file systems are polled", .blockingWork)
struct RemoteFileSystemTests {
    /// `/proc/mounts` types that are remote or user-space, as the kernel names them.
    static func isRemote(_ type: String) -> Bool {
        ["nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "ceph", "afs"].contains(type) || type.hasPrefix("fuse")
    }

    @Test("statfs of every real mount agrees with /proc/mounts: remote ones are named, local ones are not")
    func detectionOnRealMounts() throws {
        let mounts = try String(contentsOfFile: "/proc/mounts", encoding: .utf8).split(separator: "\n")
        var checked = 0
        for line in mounts {
            let fields = line.split(separator: " ")
            guard fields.count >= 3 else { continue }
            // Mount points with spaces are escaped as \040; those are skipped rather than unescaped.
            let point = String(fields[1])
            let type = String(fields[2])
            guard !point.contains("\\"), (try? SystemFileSystem.shared.fileSystemType(atPath: point)) != nil else {
                continue
            }
            let name = RemoteFileSystem.name(ofFileSystemAt: point, on: SystemFileSystem.shared)
            #expect((name != nil) == Self.isRemote(type), "\(point) is \(type); detected \(name ?? "local")")
            checked += 1
        }
        #expect(checked > 0)
        // Known magic numbers of local file systems every Linux machine has.
        #expect((try? SystemFileSystem.shared.fileSystemType(atPath: "/proc")) == 0x9FA0)
        #expect((try? SystemFileSystem.shared.fileSystemType(atPath: "/sys")) == 0x6265_6572)
        #expect((try? SystemFileSystem.shared.fileSystemType(atPath: "/no/such/path")) == nil)
        #expect(RemoteFileSystem.name(ofFileSystemAt: "/no/such/path", on: SystemFileSystem.shared) == nil)
    }

    @Test("LIVEDEFAULTS_WATCHER=inotify trusts inotify everywhere; otherwise the detection decides")
    func override() {
        let nfs: @Sendable (String) -> String? = { _ in "nfs" }
        #expect(RemoteFileSystem.detector(setting: "inotify", detect: nfs)("/mnt/share") == nil)
        #expect(RemoteFileSystem.detector(setting: nil, detect: nfs)("/mnt/share") == "nfs")
        #expect(RemoteFileSystem.detector(setting: "poll", detect: nfs)("/mnt/share") == "nfs")
    }

    @Test(
        "A directory on a remote file system is polled, with one notice saying why, and changes arrive",
        .enabled(if: watchesWithInotify, "inotify's own behaviour: this run polls")
    )
    func remoteDirectoryIsPolled() async throws {
        let directory = TemporaryDirectory()
        let remote = directory.path
        let watcher = FileWatcher(
            pollInterval: .milliseconds(20), fileSystem: SystemFileSystem.shared,
            remoteFileSystem: { $0.hasPrefix(remote) ? "nfs" : nil })
        let log = LogRecorder()
        var configuration = Defaults.Configuration.rooted(at: directory.path, applicationDomain: "com.example.nfs")
        configuration.watcher = watcher
        configuration.logger = log.logger
        let defaults = try Defaults(configuration: configuration)
        let path = configuration.locations.path(forDomain: "com.example.nfs", layer: .currentUser)
        let status = watcher.status(ofPath: path)
        #expect(status.isPolled)
        #expect(status.pollReason?.contains("nfs") == true)
        #expect(watcher.watchCount == 0, "no inotify watch on a remote directory")
        let notices = log.entries.filter { $0.level == .notice && $0.message.contains("nfs") }
        #expect(notices.count == 1, "\(log.entries)")
        #expect(notices.first?.message.contains("LIVEDEFAULTS_WATCHER=inotify") == true)
        #expect(!log.entries.contains { $0.level >= .warning }, "polling is the right way here, not a fault")
        #expect(try runHelper(["write-keys", directory.path, "com.example.nfs", "N", "2"]).status == 0)
        #expect(await waitForValue(defaults, "N1") { $0 == 1 })
        // A local directory beside it keeps inotify.
        let local = FileWatcher()
        var plain = Defaults.Configuration.rooted(at: directory.path, applicationDomain: "com.example.local")
        plain.watcher = local
        _ = try Defaults(configuration: plain)
        #expect(!local.status(ofPath: directory.file("com.example.local.plist")).isPolled)
    }

    /// Unmounts the test's FUSE mount and waits for its bindfs to end. A file of the mount still open for an
    /// instant (the polling watcher's reload, a write settling) makes `fusermount -u` fail with "busy", and
    /// bindfs would then never exit: the whole test run hung there once. So the unmount is tried
    /// again for up to 5 s, then made lazy (`-z`: detached now, finished when the last file closes), and
    /// bindfs is terminated if it is still running.
    private static func unmount(_ mountPoint: String, _ bindfs: Process) {
        func fusermount(_ arguments: [String]) -> Bool {
            let unmount = Process()
            unmount.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            unmount.arguments = ["fusermount"] + arguments + [mountPoint]
            unmount.standardError = FileHandle.nullDevice
            guard (try? unmount.run()) != nil else { return false }
            unmount.waitUntilExit()
            return unmount.terminationStatus == 0
        }
        var unmounted = false
        for _ in 0..<50 where !unmounted {
            unmounted = fusermount(["-u"])
            if !unmounted { RealTime.pause(blocking: .milliseconds(100)) }
        }
        if !unmounted { _ = fusermount(["-u", "-z"]) }
        for _ in 0..<50 where bindfs.isRunning { RealTime.pause(blocking: .milliseconds(100)) }
        if bindfs.isRunning { bindfs.terminate() }
        bindfs.waitUntilExit()
    }

    @Test(
        "A real FUSE mount (bindfs) is detected and polled: a write beside it, which inotify never reports, arrives",
        .enabled(if: watchesWithInotify, "inotify's own behaviour: this run polls")
    )
    func realFuseMount() async throws {
        let directory = TemporaryDirectory()
        let source = directory.file("source")
        let mountPoint = directory.file("mounted")
        try FileManager.default.createDirectory(atPath: source, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        // bindfs in the foreground (-f), as a process of its own until it is unmounted: a daemon would keep
        // the descriptors Foundation's Process watches for its exit, and waiting for it would never end.
        let bindfs = Process()
        bindfs.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        bindfs.arguments = ["bindfs", "-f", source, mountPoint]
        bindfs.standardOutput = FileHandle.nullDevice
        bindfs.standardError = FileHandle.nullDevice
        try bindfs.run()
        let mounted = await eventually(timeout: 10) {
            !bindfs.isRunning
                || RemoteFileSystem.name(ofFileSystemAt: mountPoint, on: SystemFileSystem.shared) == "fuse"
        }
        guard mounted, bindfs.isRunning else {
            // bindfs comes with Scripts/install-dependencies; FUSE needs /dev/fuse and the right to mount.
            print(
                "skipped: cannot mount a FUSE file system here (bindfs \(bindfs.isRunning ? "did not mount" : "exited"))"
            )
            return
        }
        defer { Self.unmount(mountPoint, bindfs) }
        let watcher = FileWatcher(pollInterval: .milliseconds(20))
        let log = LogRecorder()
        var configuration = Defaults.Configuration.rooted(at: mountPoint, applicationDomain: "com.example.fuse")
        configuration.watcher = watcher
        configuration.logger = log.logger
        let defaults = try Defaults(configuration: configuration)
        let status = watcher.status(ofPath: mountPoint + "/com.example.fuse.plist")
        #expect(status.isPolled && status.pollReason?.contains("fuse") == true)
        #expect(log.entries.contains { $0.level == .notice && $0.message.contains("fuse") })
        // Another "machine": a process writing to the file system's source, which never goes through the
        // mount, so inotify on the mount would never hear of it.
        #expect(try runHelper(["write-keys", source, "com.example.fuse", "F", "2"]).status == 0)
        #expect(await waitForValue(defaults, "F1") { $0 == 1 })
    }
}
