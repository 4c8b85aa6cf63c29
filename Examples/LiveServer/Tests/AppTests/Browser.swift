import Foundation
import Hummingbird
import HummingbirdTesting
#if canImport(Glibc)
    import Glibc
#endif

/// Headless Chromium driven through W3C WebDriver by Debian's `chromedriver` (packages `chromium` and
/// `chromium-driver`, installed by Scripts/install-dependencies): a real browser running the page's
/// JavaScript. The driver speaks JSON over HTTP.
final class Browser: Sendable {
    /// The executables, when both are installed.
    static let executables: (driver: String, browser: String)? = {
        let path = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
        func find(_ names: [String]) -> String? {
            for directory in path + ["/usr/bin", "/usr/lib/chromium"] {
                for name in names where FileManager.default.isExecutableFile(atPath: "\(directory)/\(name)") {
                    return "\(directory)/\(name)"
                }
            }
            return nil
        }
        guard let driver = find(["chromedriver"]), let browser = find(["chromium", "chromium-browser"]) else {
            return nil
        }
        return (driver, browser)
    }()

    /// An error the driver answered, or one of ours (a timeout).
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// The key under which WebDriver returns an element's reference.
    static let elementKey = "element-6066-11e4-a52e-4f735466cecf"

    private let driver: Process
    private let session: String
    private let profile: String

    /// Starts chromedriver on a free port and opens a headless session whose profile, cache and
    /// configuration live in `directory` (never in the real home).
    init(directory: String) async throws {
        guard let (driverPath, browserPath) = Self.executables else {
            throw Failure(description: "chromium and chromedriver are not installed")
        }
        profile = directory + "/chromium"
        try FileManager.default.createDirectory(atPath: profile, withIntermediateDirectories: true)
        let port = try Self.freePort()
        driver = Process()
        driver.executableURL = URL(fileURLWithPath: driverPath)
        driver.arguments = ["--port=\(port)", "--allowed-ips=127.0.0.1"]
        driver.environment = ProcessInfo.processInfo.environment.merging([
            "HOME": directory, "XDG_CONFIG_HOME": directory + "/config", "XDG_CACHE_HOME": directory + "/cache",
        ]) { $1 }
        driver.standardOutput = FileHandle.nullDevice
        driver.standardError = FileHandle.nullDevice
        try driver.run()
        let base = "http://127.0.0.1:\(port)"
        var ready = false
        var last = "no answer"
        let deadline = ContinuousClock.now + .seconds(30)
        while !ready, ContinuousClock.now < deadline {
            do {
                let status = try await Self.request(.get, base + "/status", nil)
                ready = ((status as? [String: Any])?["ready"] as? Bool) == true
                last = "\(String(describing: status))"
            } catch {
                last = "\(error)"
            }
            if !ready { try await Task.sleep(for: .milliseconds(50)) }
        }
        guard ready else {
            Self.kill(driver)
            throw Failure(description: "chromedriver did not start within 30 s (last: \(last))")
        }
        let capabilities: [String: Any] = [
            "capabilities": [
                "alwaysMatch": [
                    "browserName": "chrome",
                    "goog:chromeOptions": [
                        "binary": browserPath,
                        "args": [
                            "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                            "--user-data-dir=\(profile)", "--window-size=1100,900",
                        ],
                    ],
                ]
            ]
        ]
        do {
            let created = try await Self.request(.post, base + "/session", capabilities)
            guard let id = (created as? [String: Any])?["sessionId"] as? String else {
                throw Failure(description: "chromedriver answered no session: \(String(describing: created))")
            }
            session = base + "/session/" + id
        } catch {
            Self.kill(driver)
            throw error
        }
    }

    /// Ends the session (Chromium quits) and the driver. The driver is killed: started from a pool thread, it
    /// inherits that thread's blocked signals, SIGTERM among them (Docs/Reliability.md); and it is not
    /// waited for with `waitUntilExit`, which spins a run loop on a pool thread.
    func close() async {
        _ = try? await Self.request(.delete, session, nil)
        Self.kill(driver)
    }

    private static func kill(_ driver: Process) {
        if driver.isRunning { Glibc.kill(driver.processIdentifier, SIGKILL) }
    }

    /// Opens a page.
    func open(_ url: String) async throws {
        _ = try await Self.request(.post, session + "/url", ["url": url])
    }

    /// Runs JavaScript in the page and returns its result (`return …`).
    func run(_ script: String) async throws -> Any? {
        try await Self.request(.post, session + "/execute/sync", ["script": script, "args": []])
    }

    /// The element a CSS selector finds.
    func element(_ selector: String) async throws -> String {
        let found = try await Self.request(.post, session + "/element", ["using": "css selector", "value": selector])
        guard let id = (found as? [String: Any])?[Self.elementKey] as? String else {
            throw Failure(description: "no element \(selector)")
        }
        return id
    }

    /// Empties a field and types into it, as a person would.
    func type(_ text: String, into selector: String) async throws {
        let id = try await element(selector)
        _ = try await Self.request(.post, session + "/element/\(id)/clear", [:])
        _ = try await Self.request(.post, session + "/element/\(id)/value", ["text": text])
    }

    /// Clicks an element.
    func click(_ selector: String) async throws {
        let id = try await element(selector)
        _ = try await Self.request(.post, session + "/element/\(id)/click", [:])
    }

    /// An element's DOM property (`value`, `checked`, `textContent`, …).
    func property(_ name: String, of selector: String) async throws -> Any? {
        let id = try await element(selector)
        return try await Self.request(.get, session + "/element/\(id)/property/\(name)", nil)
    }

    /// Waits until `condition` holds (checked every 50 ms), up to `seconds`.
    func wait(
        _ what: String, seconds: Double = 15, until condition: @Sendable () async throws -> Bool
    ) async throws {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            if (try? await condition()) == true { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        if try await condition() { return }
        throw Failure(description: "timed out after \(seconds) s waiting for \(what)")
    }

    /// One WebDriver command on a connection of its own: its `value`, or the driver's error. Sent with
    /// Hummingbird's test client (NIO's HTTP parser): Foundation's URLSession on Linux cannot read
    /// chromedriver's answers, whose header lines have no space after the colon ("Failed writing header").
    private static func request(_ method: HTTPRequest.Method, _ url: String, _ body: [String: Any]?) async throws
        -> Any?
    {
        guard let target = URL(string: url), let host = target.host, let port = target.port else {
            throw Failure(description: "bad URL \(url)")
        }
        var payload: ByteBuffer?
        var headers: HTTPFields = [:]
        if let body {
            payload = ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: body))
            headers[.contentType] = "application/json"
        }
        let response = try await TestClient.withClient(
            host: host, port: port, configuration: .init(timeout: .seconds(60))
        ) { [payload, headers] client in
            try await client.execute(
                .init(target.path, method: method, authority: "\(host):\(port)", headers: headers, body: payload))
        }
        let data = response.body.map { Data(buffer: $0) } ?? Data()
        let answer = (try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])) as? [String: Any]
        let value = answer?["value"]
        if let error = value as? [String: Any], let code = error["error"] as? String {
            throw Failure(description: "\(method) \(target.path): \(code): \(error["message"] as? String ?? "")")
        }
        guard response.status == .ok else {
            throw Failure(description: "\(method) \(target.path): \(String(decoding: data, as: UTF8.self))")
        }
        return value is NSNull ? nil : value
    }

    /// A free loopback port (bound, read, released).
    static func freePort() throws -> Int {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw Failure(description: "socket: errno \(errno)") }
        defer { Glibc.close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic in
                Glibc.bind(socket, generic, length) == 0 && getsockname(socket, generic, &length) == 0
            }
        }
        guard bound else { throw Failure(description: "bind: errno \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
