import Foundation
import PlistOracle
import TestProcesses
import Testing

/// `defaults doctor`, and `defaults watch` over Kubernetes-style volumes and broken files, as an operator
/// meets them: the built binary in a sandbox, the volume updated by a real second process.
@Suite("defaults doctor, and watch over volumes and typos", .blockingWork)
struct DoctorAndVolumeTests {
    static func xml(_ pairs: String) -> String {
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><plist version=\"1.0\"><dict>\(pairs)</dict></plist>"
    }

    @Test("watch reports every kubelet update of a managed directory that is a ConfigMap volume")
    func watchManagedVolume() throws {
        let sandbox = Sandbox()
        let volume = KubeletVolume(path: sandbox.file("configmap"))
        try volume.update(["com.example.api.plist": Self.xml("<key>RateLimit</key><integer>1</integer>")])
        let watch = try RunningTool(
            toolURL, ["watch", "com.example.api"],
            environment: sandbox.environment(["LIVEDEFAULTS_MANAGED_DIRECTORY": volume.path]))
        #expect(watch.waitForStderr("Watching com.example.api"))
        for limit in 2...4 {
            try volume.update(["com.example.api.plist": Self.xml("<key>RateLimit</key><integer>\(limit)</integer>")])
            #expect(watch.waitForLine("com.example.api RateLimit = \(limit)"))
        }
        #expect(watch.stop(SIGTERM) == 0)
    }

    @Test("watch over a domain file linked into a volume; a typo reports nothing removed, the fix only what changed")
    func watchLinkedFileAndTypo() throws {
        let sandbox = Sandbox()
        let volume = KubeletVolume(path: sandbox.file("volume"))
        let good = Self.xml("<key>RateLimit</key><integer>1</integer><key>Banner</key><string>hi</string>")
        try volume.update(["api.plist": good])
        #expect(symlink(volume.path + "/api.plist", sandbox.file("com.example.api.plist")) == 0)
        let watch = try sandbox.start("watch", "com.example.api")
        #expect(watch.waitForStderr("Watching com.example.api"))
        try volume.update([
            "api.plist": Self.xml("<key>RateLimit</key><integer>2</integer><key>Banner</key><string>hi</string>")
        ])
        #expect(watch.waitForLine("com.example.api RateLimit = 2"))
        // An operator's typo: one unclosed tag. Nothing is reported removed; the store says why, once.
        try volume.update(["api.plist": "<plist><dict><key>RateLimit</key><integer>3</integer>"])
        #expect(watch.waitForStderr("last known good"))
        try volume.update([
            "api.plist": Self.xml("<key>RateLimit</key><integer>3</integer><key>Banner</key><string>hi</string>")
        ])
        #expect(watch.waitForLine("com.example.api RateLimit = 3"))
        #expect(!watch.lines.contains { $0.contains("removed") || $0.contains("Banner") }, "\(watch.lines)")
        #expect(watch.stop(SIGTERM) == 0)
    }

    @Test("doctor: a healthy domain exits 0; a key's value, its layer and what it hides")
    func doctorHealthy() throws {
        let sandbox = Sandbox()
        try sandbox.ok("write", "com.example.api", "RateLimit", "-int", "100")
        try sandbox.ok("write", "-g", "RateLimit", "-int", "5")
        // A running program of this user, whose inotify instance and watches the doctor counts.
        let running = try sandbox.start("watch", "com.example.api")
        #expect(running.waitForStderr("Watching com.example.api"))
        let text = try sandbox.ok("doctor", "com.example.api", "RateLimit")
        let method =
            switch (inotifyIsCompiledIn, watchesWithInotify) {
            case (false, _): "watcher: polling (this build has no inotify"
            case (true, false): "watcher: polling (LIVEDEFAULTS_WATCHER=poll)"
            case (true, true): "watcher: inotify"
            }
        #expect(text.contains(method), "\(text)")
        #expect(text.contains("fs.inotify.max_user_watches") || text.contains("max_user_watches"))
        #expect(text.contains("com.example.api currentUser: \(sandbox.file("com.example.api.plist"))"))
        #expect(text.contains("exists, parses, 1 key"))
        #expect(text.contains("key RateLimit = 100"))
        #expect(text.contains("hides 5 in NSGlobalDomain currentUser"))
        #expect(text.contains("no problem found"))
        let json = try sandbox.ok("doctor", "com.example.api", "RateLimit", "--json")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        let key = try #require(object["key"] as? [String: Any])
        #expect(key["value"] as? Int == 100 && key["layer"] as? String == "currentUser")
        #expect((key["hides"] as? [[String: Any]])?.first?["domain"] as? String == "NSGlobalDomain")
        #expect((object["problems"] as? [String])?.isEmpty == true)
        #expect((object["files"] as? [Any])?.count == 12)
        let watcher = try #require(object["watcher"] as? [String: Any])
        #expect(watcher["method"] as? String == (watchesWithInotify ? "inotify" : "polling"))
        if watchesWithInotify {
            #expect((watcher["instancesInUse"] as? Int ?? 0) >= 1, "the running watch holds one")
            #expect((watcher["watchesInUse"] as? Int ?? 0) >= 1, "and its watches")
        }
        #expect(running.stop(SIGTERM) == 0)
        // Polling, and why.
        let polled = try sandbox.ok(["doctor"], environment: ["LIVEDEFAULTS_WATCHER": "poll"])
        #expect(
            polled.contains(inotifyIsCompiledIn ? "watcher: polling (LIVEDEFAULTS_WATCHER=poll)" : "watcher: polling"))
        // An unknown setting is only that, whatever its name.
        let unknown = try sandbox.ok(["doctor"], environment: ["LIVEDEFAULTS_WATCHER": "none"])
        #expect(
            unknown.contains(
                inotifyIsCompiledIn
                    ? "LIVEDEFAULTS_WATCHER=none is not a known setting" : "watcher: polling (this build has no inotify"
            ))
    }

    @Test("doctor: a forced value, a volume's link chain, a broken file and a link to nothing, exit 1")
    func doctorProblems() throws {
        let sandbox = Sandbox()
        let volume = KubeletVolume(path: sandbox.file("configmap"))
        try volume.update(["com.example.api.plist": Self.xml("<key>RateLimit</key><integer>7</integer>")])
        let environment = ["LIVEDEFAULTS_MANAGED_DIRECTORY": volume.path]
        // Written before the administrator's value applies (a forced key refuses writes).
        try sandbox.ok(["write", "com.example.api", "RateLimit", "-int", "100"])
        let forced = try sandbox.ok(["doctor", "com.example.api", "RateLimit"], environment: environment)
        #expect(forced.contains("key RateLimit = 7"))
        #expect(forced.contains("from com.example.api managed (\(volume.path)/com.example.api.plist), forced"))
        #expect(forced.contains("hides 100 in com.example.api currentUser"))
        #expect(forced.contains("link \(volume.path)/com.example.api.plist -> ..data/com.example.api.plist"))
        #expect(forced.contains("/..data -> ..20"))
        #expect(forced.contains("following 2 links"))

        // A typo in the administrator's file: the doctor, reading afresh, sees the user's value, and says that
        // running programs may still hold the forced one.
        try volume.update(["com.example.api.plist": "<plist><dict><key>RateLimit</key><integer>7</integer>"])
        let typo = try sandbox.run(["doctor", "com.example.api", "RateLimit"], environment: environment)
        #expect(typo.status == 1)
        #expect(typo.output.contains("key RateLimit = 100"))
        #expect(
            typo.output.contains("but com.example.api managed (\(volume.path)/com.example.api.plist) cannot be read"))
        try volume.update(["com.example.api.plist": Self.xml("<key>RateLimit</key><integer>7</integer>")])
        // A typo in the user's file and a link to nothing in the global domain.
        try Data("<plist><dict><key>A</key>".utf8).write(
            to: URL(fileURLWithPath: sandbox.file("com.example.api.plist")))
        #expect(symlink(sandbox.file("nowhere/x.plist"), sandbox.file(".GlobalPreferences.plist")) == 0)
        let broken = try sandbox.run(["doctor", "com.example.api"], environment: environment)
        #expect(broken.status == 1)
        #expect(broken.output.contains("does not parse"))
        #expect(broken.output.contains("last known good"))
        #expect(broken.output.contains("\(sandbox.file(".GlobalPreferences.plist")) is a symbolic link to"))
        #expect(broken.output.contains("link points nowhere"))
        let json = try sandbox.run(["doctor", "com.example.api", "--json"], environment: environment)
        #expect(json.status == 1)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any])
        #expect((object["problems"] as? [String])?.count == 2)
        // The read verbs keep reporting the invalid file.
        let read = try sandbox.run(["read", "com.example.api"], environment: environment)
        #expect(read.status == 1 && read.error.contains(sandbox.file("com.example.api.plist")))
    }

    @Test("doctor: a file bind-mounted on its own (a Kubernetes subPath mount) is named as never updating")
    func doctorSubPathMount() throws {
        let sandbox = Sandbox()
        try sandbox.ok("write", "com.example.api", "RateLimit", "-int", "1")
        let source = sandbox.file("source.plist")
        try Data(Self.xml("<key>RateLimit</key><integer>2</integer>").utf8).write(to: URL(fileURLWithPath: source))
        let target = sandbox.file("com.example.api.plist")
        let mount = Process()
        mount.executableURL = URL(fileURLWithPath: "/bin/mount")
        mount.arguments = ["--bind", source, target]
        let mounted = (try? runToEnd(mount, errors: .merged))
        guard let mounted, mounted.status == 0 else {
            // Bind mounts need root (CAP_SYS_ADMIN); the mount-point detection is then not exercised here.
            print("skipped: cannot bind-mount here: \(mounted?.output ?? "mount did not start")")
            return
        }
        defer {
            let unmount = Process()
            unmount.executableURL = URL(fileURLWithPath: "/bin/umount")
            unmount.arguments = [target]
            _ = try? runToEnd(unmount, errors: .merged)
        }
        let result = try sandbox.run(["doctor", "com.example.api"])
        #expect(result.status == 1)
        #expect(result.output.contains("\(target) is a mount point of its own"))
        #expect(result.output.contains("subPath"))
    }
}
