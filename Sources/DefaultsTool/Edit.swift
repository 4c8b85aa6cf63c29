import ArgumentParser
import DefaultsToolSupport
import Foundation
import LiveDefaults

/// `defaults edit domain`: the domain in the person's editor, checked before it lands, applied as a change.
struct Edit: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "edit",
        abstract: "Edit a domain in your editor: checked before it lands, never over another writer's change.",
        discussion: """
            The domain's values open in $VISUAL, else $EDITOR, else vi, as typed text ("text" a string, 42 an \
            integer, 4.2 a real, true/false, 2024-01-31T09:05:00Z a date, <0fa1> data, ( ) an array, { } a \
            dictionary), each key with what the program's published schema says of it. Save and quit to apply: \
            only the keys you changed, added or removed are written, as one change onto the domain as it is \
            then, logged as "defaults edit" (or with --reason's text). A syntax error, a value the schema \
            refuses or a key it does not declare opens the editor again with the problem noted; saved again \
            unchanged, nothing is changed \
            (exit status 1). A key you changed that another writer changed meanwhile opens the editor again \
            with both values; your next save applies. To abort, quit the editor with an error (vi: :cq) or \
            empty the file: nothing is changed (exit status 1). Saved unchanged: "no changes", nothing written. \
            --wait [SECONDS] waits for the programs reading the domain as write does; a change one refuses is \
            put back and offered again in the editor with the reason. The file is a private temporary one \
            (mode 0600, in a directory of mode 0700 under $TMPDIR), removed afterwards.
            """)

    @OptionGroup var host: HostOptions
    @OptionGroup var validation: ValidationOptions
    @OptionGroup var wait: WaitOptions
    @OptionGroup var reason: ReasonOptions
    @OptionGroup var secrets: SecretOptions
    @Argument(help: "A domain name, -g, or a path to a plist file.") var domain: String

    func run() {
        perform {
            let target = try DomainTarget(domain, host: host)
            let store = try target.store()
            let schema = try target.schema()
            var session: EditSession
            do {
                session = try EditSession(
                    defaults: store.defaults, domain: target.name, layer: target.layer,
                    header: EditSession.header(domain: target.display, path: target.path), schema: schema,
                    showSecrets: secrets.showSecrets)
            } catch {
                throw ToolError("\(error)")
            }
            session.validates = !validation.noValidate
            if let reason = reason.reason { session.reason = reason }
            session.vet = { changes in
                do {
                    try target.checkRollouts(Set(changes.keys))
                    return []
                } catch {
                    return [EditText.Problem(message: "\(error)")]
                }
            }
            let file = try EditorFile(domain: target.name)
            defer { file.remove() }
            var warned = 0
            while true {
                let outcome = try session.run { text in try file.edit(text) }
                for warning in session.warnings.dropFirst(warned) {
                    FileHandle.standardError.write(Data("defaults: warning: \(warning)\n".utf8))
                }
                warned = session.warnings.count
                switch outcome {
                case .unchanged:
                    emit("no changes")
                    return
                case .aborted(let reason):
                    throw ToolError(reason)
                case .applied(let keys):
                    emit("\(target.display): changed \(keys.joined(separator: ", "))")
                    store.warnOfPinnedKeys(keys)
                    // What a refusal puts back: the version just written with the edited keys as they were.
                    let before = try wait.versionBefore(in: store).map(session.versionBefore(written:))
                    guard let failure = try wait.awaitReaders(of: store, before: before) else { return }
                    guard failure.rolledBack else { throw ToolError(failure.message) }
                    session.offerAgain(saying: failure.refusals)
                }
            }
        }
    }
}

/// The file an editor opens: in a private directory of its own (mode 0700) under the temporary directory,
/// itself mode 0600, named after the domain (an editor shows the name).
struct EditorFile {
    /// The largest text read back (a domain is far smaller; a file grown past this is not an edit of it).
    static let maximumSize = 64 << 20

    let directory: String
    let path: String

    init(domain: String) throws {
        let temporary = NSTemporaryDirectory()
        directory = (temporary as NSString).appendingPathComponent("defaults-edit-\(UUID().uuidString)")
        // Created here, never found: a directory that exists already fails the call.
        do {
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        } catch {
            throw ToolError("cannot make a temporary directory in \(temporary): \(error.localizedDescription)")
        }
        let name = domain.replacingOccurrences(of: "/", with: "_")
        path = (directory as NSString).appendingPathComponent(name + ".txt")
    }

    /// Writes `text`, runs the editor on it and waits for it, and returns what was saved, or nil when the
    /// editor exited with an error.
    func edit(_ text: String) throws -> String? {
        guard
            FileManager.default.createFile(
                atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600])
        else { throw ToolError("cannot write \(path)") }
        let environment = ProcessInfo.processInfo.environment
        let editor = [environment["VISUAL"], environment["EDITOR"]].compactMap { $0 }.first { !$0.isEmpty } ?? "vi"
        // As git runs it: the variable may hold arguments ("code --wait"), so the shell splits it.
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", editor + " \"$@\"", editor, path]
        do { try process.run() } catch {
            throw ToolError("cannot run the editor \(editor): \(error.localizedDescription)")
        }
        process.waitUntilExit()
        guard process.terminationReason == .exit, process.terminationStatus == 0 else { return nil }
        guard let handle = FileHandle(forReadingAtPath: path) else { throw ToolError("the editor removed \(path)") }
        defer { try? handle.close() }
        let data = (try? handle.read(upToCount: Self.maximumSize + 1)) ?? Data()
        guard data.count <= Self.maximumSize else {
            throw ToolError("\(path) grew past \(Self.maximumSize >> 20) MB: nothing was changed")
        }
        guard let saved = String(validating: data, as: UTF8.self) else {
            throw ToolError("\(path) is not UTF-8 text: nothing was changed")
        }
        return saved
    }

    func remove() {
        try? FileManager.default.removeItem(atPath: directory)
    }
}
