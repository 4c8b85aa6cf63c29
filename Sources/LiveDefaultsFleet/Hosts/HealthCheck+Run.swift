#if Fleet
    import AsyncHTTPClient
    import NIOCore
    import NIOHTTP1
    import Foundation
    import NIOConcurrencyHelpers

    #if canImport(Glibc)
        import Glibc
    #endif

    /// Where a health command is: a kill happens only while it runs.
    private enum CommandPhase: Sendable {
        case running, exited, timedOut, cancelled
    }

    extension HealthCheck {
        /// The most bytes of a command's output read for the report's detail.
        static let maximumOutput = 4096

        /// Runs the check once: whether it passed, and what it said. Never throws: a command that cannot be
        /// started, a URL that cannot be reached and a check that takes longer than `timeout` are unhealthy.
        func run(hostID: String, timeout: Duration) async -> (isHealthy: Bool, detail: String) {
            switch self {
            case .command(let command): await Self.runCommand(command, hostID: hostID, timeout: timeout)
            case .url(let url): await Self.get(url, timeout: timeout)
            }
        }

        private static func runCommand(_ command: String, hostID: String, timeout: Duration) async -> (Bool, String) {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", command]
            var environment = ProcessInfo.processInfo.environment
            environment["LIVEDEFAULTS_HOST_ID"] = hostID
            process.environment = environment
            // Output goes to a file, not a pipe: a process the command leaves running could hold a pipe open
            // and a read to its end would wait for it.
            let outputPath = FileManager.default.temporaryDirectory.appendingPathComponent(
                "livedefaults-health-\(UUID().uuidString)"
            ).path
            guard FileManager.default.createFile(atPath: outputPath, contents: nil),
                let output = FileHandle(forWritingAtPath: outputPath)
            else {
                return (false, "cannot make a file for the health command's output in \(NSTemporaryDirectory())")
            }
            defer {
                try? output.close()
                try? FileManager.default.removeItem(atPath: outputPath)
            }
            process.standardOutput = output
            process.standardError = output
            process.standardInput = FileHandle.nullDevice
            // Running until the process is reaped or killed; a kill only while it runs, so never of a process
            // ID the system has given to another process since.
            let phase = NIOLockedValueBox(CommandPhase.running)
            let (exits, exited) = AsyncStream<Void>.makeStream()
            process.terminationHandler = { _ in
                phase.withLockedValue { if $0 == .running { $0 = .exited } }
                exited.yield()
                exited.finish()
            }
            do { try process.run() } catch {
                return (false, "the health command could not be started: \(error)")
            }
            let pid = process.processIdentifier
            let kill = { @Sendable (reason: CommandPhase) in
                phase.withLockedValue { current in
                    guard current == .running else { return }
                    current = reason
                    // The command's process group when it leads one, so that what it started goes too.
                    if getpgid(pid) == pid { Glibc.kill(-pid, SIGKILL) } else { Glibc.kill(pid, SIGKILL) }
                }
            }
            let timer = Task {
                try await Task.sleep(for: timeout)
                kill(.timedOut)
            }
            for await _ in exits { break }
            timer.cancel()
            switch phase.withLockedValue({ $0 }) {
            case .running, .cancelled:
                // The agent is stopping: the command goes with it.
                kill(.cancelled)
                return (false, "the health check was cancelled")
            case .timedOut:
                return (false, "the health command did not finish within \(timeout) (killed)")
            case .exited:
                break
            }
            let said = firstLine(of: outputPath)
            let status = process.terminationStatus
            if process.terminationReason == .uncaughtSignal {
                return (false, "the health command was ended by signal \(status)" + (said.map { ": \($0)" } ?? ""))
            }
            if status == 0 { return (true, said ?? "exit 0") }
            return (false, "exit \(status)" + (said.map { ": \($0)" } ?? ""))
        }

        /// The first non-empty line of the command's output, at most ``maximumOutput`` bytes of it read.
        private static func firstLine(of path: String) -> String? {
            guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
            defer { try? handle.close() }
            let data = (try? handle.read(upToCount: maximumOutput)) ?? Data()
            let text = String(decoding: data, as: UTF8.self)
            let line = text.split(whereSeparator: \.isNewline).first.map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            guard let line, !line.isEmpty else { return nil }
            return String(line.prefix(200))
        }

        private static func get(_ url: String, timeout: Duration) async -> (Bool, String) {
            var request = HTTPClientRequest(url: url)
            request.method = .GET
            do {
                let response = try await HTTPClient.shared.execute(request, timeout: TimeAmount(clamping: timeout))
                // The body is not needed; read a little of it so the connection can be reused.
                _ = try? await response.body.collect(upTo: maximumOutput)
                let code = Int(response.status.code)
                return (code / 100 == 2, "HTTP \(code)")
            } catch {
                return (false, "GET \(url) failed: \(error)")
            }
        }
    }
#endif
