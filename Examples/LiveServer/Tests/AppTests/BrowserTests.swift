import Foundation
import LiveDefaults
import Testing

/// The settings page in a real headless Chromium, against the built server and the built `defaults`
/// command: the form is generated from the schema the server published, edits are saved through the
/// library and land in the domain file, a shell's `defaults write` changes the field live, a value out of
/// range shows the schema's message and leaves the file as it was, and a secret is never shown.
@Suite("LiveServer settings page in headless Chromium")
struct BrowserTests {
    let directory = TemporaryDirectory()

    /// The domain file the server and the command share.
    var file: String { directory.path + "/com.example.liveserver.plist" }

    /// The domain file's values (empty before the first write).
    func stored() -> [String: PropertyList] {
        guard let data = FileManager.default.contents(atPath: file),
            let decoded = try? PropertyList.decode(data)
        else { return [:] }
        return decoded.value.dictionaryValue ?? [:]
    }

    /// Runs the `defaults` command on the server's directory and schema; returns its status and output.
    func defaults(_ arguments: String...) async throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = try EndToEndTests.defaultsTool()
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging([
            "XDG_CONFIG_HOME": directory.path, "LIVEDEFAULTS_SCHEMA_PATH": directory.path + "/Schemas",
        ]) { $1 }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        let ended = AsyncStream<Void> { continuation in
            process.terminationHandler = { _ in continuation.finish() }
        }
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        for await _ in ended {}
        return (process.terminationStatus, text)
    }

    @Test(
        "the form built from the published schema edits, follows other writers live, refuses what the schema refuses, hides secrets",
        .enabled(
            if: Browser.executables != nil, "needs Debian's chromium and chromium-driver (Scripts/install-dependencies)"
        ),
        .timeLimit(.minutes(3)))
    func settingsPage() async throws {
        let (server, address) = try EndToEndTests.startServer(in: directory)
        defer {
            server.terminate()
            server.waitUntilExit()
        }
        let browser = try await Browser(directory: directory.path + "/browser")
        do {
            try await exercise(browser, address)
        } catch {
            await browser.close()
            throw error
        }
        await browser.close()
    }

    @Test(
        "fields saved together are one change: a second page never shows one of them without the others",
        .enabled(
            if: Browser.executables != nil, "needs Debian's chromium and chromium-driver (Scripts/install-dependencies)"
        ),
        .timeLimit(.minutes(3)))
    func saveAllIsOneChange() async throws {
        let (server, address) = try EndToEndTests.startServer(in: directory)
        defer {
            server.terminate()
            server.waitUntilExit()
        }
        let editor = try await Browser(directory: directory.path + "/editor")
        let follower: Browser
        do { follower = try await Browser(directory: directory.path + "/follower") } catch {
            await editor.close()
            throw error
        }
        do {
            try await saveTogether(editor, follower, address)
        } catch {
            await editor.close()
            await follower.close()
            throw error
        }
        await editor.close()
        await follower.close()
    }

    func saveTogether(_ editor: Browser, _ follower: Browser, _ address: String) async throws {
        for page in [editor, follower] {
            try await page.open(address + "/")
            try await page.wait("the page to follow /events") {
                (try await page.property("textContent", of: "#status") as? String)?.hasPrefix("live") == true
            }
        }
        let rounds = 8
        for round in 1...rounds {
            // Two fields edited, then saved with one click: RateLimit n goes with Greeting "pair n".
            try await editor.type("\(100 + round)", into: "#field-RateLimit")
            try await editor.type("pair \(100 + round)", into: "#field-Greeting")
            try await editor.click("#save-all")
            try await editor.wait("round \(round) in the file") {
                stored()["RateLimit"] == .integer(100 + round) && stored()["Greeting"] == .string("pair \(100 + round)")
            }
        }
        try await follower.wait("the second page to show the last round") {
            try await follower.property("value", of: "#field-Greeting") as? String == "pair \(100 + rounds)"
        }
        // Everything the second page showed, after each event: the defaults first, then only whole rounds.
        let shown = try await follower.run("return window.shownVersions") as? [[String: Any]] ?? []
        let pairs = shown.map { ($0["RateLimit"] as? Int, $0["Greeting"] as? String) }
        let half = pairs.dropFirst().filter { limit, greeting in greeting != limit.map { "pair \($0)" } }
        #expect(pairs.first.map { $0.0 == 60 && $0.1 == "Hello from LiveDefaults" } == true, "\(pairs)")
        #expect(pairs.count > rounds / 2, "the second page saw \(pairs.count) versions")
        #expect(half.isEmpty, "the second page showed half of a save: \(half)")
        #expect(try await editor.property("disabled", of: "#save-all") as? Bool == true, "nothing left to save")

        // A refused value among them: nothing of the save is stored, and the page says why.
        try await editor.type("0", into: "#field-RateLimit")
        try await editor.type("never stored", into: "#field-Greeting")
        try await editor.click("#save-all")
        try await editor.wait("the refusal's message") {
            (try await editor.property("textContent", of: "#message-all") as? String)?.contains("nothing saved") == true
        }
        #expect(
            stored()["RateLimit"] == .integer(100 + rounds) && stored()["Greeting"] == .string("pair \(100 + rounds)"))
    }

    func exercise(_ browser: Browser, _ address: String) async throws {
        try await browser.open(address + "/")
        try await browser.wait("the page to follow /events") {
            (try await browser.property("textContent", of: "#status") as? String)?.hasPrefix("live") == true
        }
        // Set once: still there at the end, so nothing below reloaded the page.
        _ = try await browser.run("window.loadedOnce = true; return true")

        // One input per key, chosen from the schema alone.
        let inputs =
            try await browser.run(
                """
                const described = {};
                for (const field of document.querySelectorAll("[id^=field-]")) {
                  described[field.id.slice(6)] = { tag: field.tagName, type: field.type, min: field.min, max: field.max,
                    options: field.tagName === "SELECT" ? Array.from(field.options).map(o => o.textContent) : null };
                }
                return described;
                """) as? [String: [String: Any]] ?? [:]
        #expect(Set(inputs.keys) == ["APIKey", "Features", "Greeting", "LogLevel", "Maintenance", "RateLimit"])
        #expect(inputs["RateLimit"]?["type"] as? String == "number")
        #expect(inputs["RateLimit"]?["min"] as? String == "1" && inputs["RateLimit"]?["max"] as? String == "100000")
        #expect(inputs["LogLevel"]?["tag"] as? String == "SELECT")
        #expect(
            inputs["LogLevel"]?["options"] as? [String] == [
                "trace", "debug", "info", "notice", "warning", "error", "critical",
            ])
        #expect(inputs["Maintenance"]?["type"] as? String == "checkbox")
        #expect(inputs["APIKey"]?["type"] as? String == "password")
        #expect(inputs["Greeting"]?["type"] as? String == "text")
        #expect(inputs["Features"]?["tag"] as? String == "TEXTAREA")
        let text = try await browser.property("innerText", of: "body") as? String ?? ""
        #expect(text.contains("Requests per minute GET /hello serves before it answers 429."), "summaries are shown")
        #expect(text.contains("an integer in 1…100000"))
        #expect(try await browser.property("value", of: "#field-RateLimit") as? String == "60", "the default")

        // Change fields and submit: the domain file changes.
        try await browser.type("250", into: "#field-RateLimit")
        try await browser.click("#save-RateLimit")
        try await browser.wait("RateLimit 250 in the file") { stored()["RateLimit"] == .integer(250) }
        try await browser.click("#field-LogLevel option[value=\"1\"]")
        try await browser.click("#save-LogLevel")
        try await browser.wait("LogLevel debug in the file") { stored()["LogLevel"] == .string("debug") }
        try await browser.click("#field-Maintenance")
        try await browser.wait("Maintenance on in the file") { stored()["Maintenance"] == .bool(true) }
        try await browser.type(#"{"search": true, "banner": "Back at 5"}"#, into: "#field-Features")
        try await browser.click("#save-Features")
        try await browser.wait("Features in the file") {
            stored()["Features"] == .dictionary(["search": .bool(true), "banner": .string("Back at 5")])
        }

        // A shell's write changes the field live.
        #expect(try await defaults("write", "com.example.liveserver", "Greeting", "From the shell").status == 0)
        try await browser.wait("the page to show the shell's greeting") {
            try await browser.property("value", of: "#field-Greeting") as? String == "From the shell"
        }
        // The command honours the schema the server published.
        let refusedWrite = try await defaults("write", "com.example.liveserver", "RateLimit", "-int", "0")
        #expect(refusedWrite.status == 1 && refusedWrite.output.contains("an integer in 1…100000"))

        // Out of range from the page: the schema's message, and the file as it was.
        let before = FileManager.default.contents(atPath: file)
        try await browser.type("0", into: "#field-RateLimit")
        try await browser.click("#save-RateLimit")
        try await browser.wait("the refusal's message") {
            (try await browser.property("textContent", of: "#message-RateLimit") as? String)?
                .contains("accepts an integer in 1…100000; the value (integer 0) is out of range") == true
        }
        #expect(FileManager.default.contents(atPath: file) == before, "nothing was written")
        #expect(stored()["RateLimit"] == .integer(250))

        // A secret: written from the shell and from the page, never shown.
        #expect(try await defaults("write", "com.example.liveserver", "APIKey", "shell-secret-1").status == 0)
        try await browser.wait("the page to log the secret's change") {
            (try await browser.property("textContent", of: "#log") as? String)?.contains("APIKey = \"<secret>\"")
                == true
        }
        try await browser.type("page-secret-2", into: "#field-APIKey")
        try await browser.click("#save-APIKey")
        try await browser.wait("the new secret in the file") { stored()["APIKey"] == .string("page-secret-2") }
        try await browser.wait("the password field to be emptied") {
            try await browser.property("value", of: "#field-APIKey") as? String == ""
        }
        let page =
            try await browser.run("return document.documentElement.outerHTML + document.body.innerText") as? String
            ?? ""
        #expect(page.contains("&lt;secret&gt;") && !page.contains("shell-secret-1") && !page.contains("page-secret-2"))

        #expect(try await browser.run("return window.loadedOnce === true") as? Bool == true, "the page never reloaded")
    }
}
