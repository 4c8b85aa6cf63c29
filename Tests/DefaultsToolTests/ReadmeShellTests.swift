import Foundation
import TestProcesses
import Testing

/// The README's first shell block, run as written (each line through `/bin/sh`, with the built `defaults` first
/// on PATH) against the demo's domain in a sandbox: what a newcomer types after starting the demo.
@Suite("The README's shell block runs as written", .blockingWork)
struct ReadmeShellTests {
    /// The lines of the README's shell block that follows the tour, comments kept (the shell drops them).
    static func readmeLines() throws -> [String] {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let tour = try #require(readme.range(of: "## A short tour"))
        let start = try #require(readme.range(of: "```sh\n", range: tour.upperBound..<readme.endIndex))
        let end = try #require(readme.range(of: "\n```", range: start.upperBound..<readme.endIndex))
        return readme[start.upperBound..<end.lowerBound].split(separator: "\n").map(String.init)
    }

    /// Runs one line as a shell would, in the sandbox.
    static func shell(_ line: String, in sandbox: Sandbox) throws -> Sandbox.Result {
        let path = toolURL.deletingLastPathComponent().path + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "")
        return try Sandbox.execute(
            URL(fileURLWithPath: "/bin/sh"), ["-c", line], environment: sandbox.environment(["PATH": path]))
    }

    @Test("write, read, merge, edit, watch, doctor, log and revert, each as the README shows it")
    func shellBlock() throws {
        let sandbox = Sandbox()
        let lines = try Self.readmeLines()
        let verbs = lines.compactMap { $0.split(separator: " ").dropFirst().first.map(String.init) }
        #expect(Array(verbs.prefix(7)) == ["write", "read", "merge", "edit", "watch", "doctor", "log"], "\(lines)")
        var watcher: RunningTool?
        for line in lines {
            let words = line.split(separator: " ")
            switch words.dropFirst().first {
            case "watch":
                // It runs until stopped: started as written, then fed a change.
                let domain = try #require(words.dropFirst(2).first)
                watcher = try sandbox.start("watch", String(domain))
                #expect(watcher?.waitForStderr("Watching \(domain)") == true)
            case "edit":
                // A person's editor, scripted: RateLimit changed, every other key as it was.
                let editor = try sandbox.scriptedEditor(["sed -i 's/^    RateLimit = 50;$/    RateLimit = 55;/' \"$1\""]
                )
                let path =
                    toolURL.deletingLastPathComponent().path + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "")
                let result = try Sandbox.execute(
                    URL(fileURLWithPath: "/bin/sh"), ["-c", line],
                    environment: sandbox.environment(editor.merging(["PATH": path]) { _, new in new }))
                #expect(result.status == 0, "\(line): \(result.error)")
                #expect(try sandbox.ok("read", "com.example.liveserver", "RateLimit") == "55\n")
            case "sync", "history":
                // The fleet's lines need an etcd cluster at the addresses shown: LiveDefaultsFleetTests run
                // them against a real one.
                continue
            default:
                let result = try Self.shell(line, in: sandbox)
                #expect(result.status == 0, "\(line): \(result.error)")
                // What the comment promises, where it shows output.
                if line.contains("defaults read") {
                    let squeezed = result.output.split(whereSeparator: \.isWhitespace).joined(separator: " ")
                    #expect(squeezed == "{ RateLimit = 50; }", "\(line): \(result.output)")
                }
                if line.contains("defaults log") { #expect(result.output.contains("RateLimit"), "\(result.output)") }
                if line.contains("defaults revert") {
                    // The edit's 55 undone, with the reason given.
                    #expect(try sandbox.ok("read", "com.example.liveserver", "RateLimit") == "50\n")
                    let log = try sandbox.ok("log", "com.example.liveserver", "RateLimit")
                    #expect(log.contains("load is back to normal"), "\(log)")
                }
            }
        }
        let running = try #require(watcher)
        let write = try Self.shell("defaults write com.example.liveserver RateLimit -int 60", in: sandbox)
        #expect(write.status == 0)
        #expect(running.waitForLine("com.example.liveserver RateLimit = 60"))
        #expect(running.stop(SIGTERM) == 0)
        let merged = try sandbox.ok("read", "com.example.liveserver", "UpstreamPort")
        #expect(merged.trimmingCharacters(in: .whitespacesAndNewlines) == "5433")
    }
}
