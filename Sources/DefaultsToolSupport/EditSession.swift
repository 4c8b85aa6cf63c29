import Foundation
public import LiveDefaults

/// One `defaults edit`: a domain's values shown in an editor (``EditText``), what the person saved checked, and
/// only what they changed applied, as one transaction onto the version current when they save.
///
/// - A syntax error, a value the schema refuses or a key it does not declare (with the declared key it most
///   likely meant): the editor opens again with the person's text and each problem noted at the top and at
///   its line. Saved again unchanged, the edit is aborted.
/// - A key the person changed that another writer changed meanwhile: nothing is applied; the editor opens
///   again with both values noted, and the next save applies (the other value is then the one shown).
/// - Another writer's change to other keys is kept: only the person's keys are written.
///
/// The editor is a function, so that the command runs a program (`$VISUAL`, `$EDITOR`, `vi`) and a test
/// scripts one, on real files or on a simulated machine alike.
public struct EditSession: Sendable {
    /// How an edit ended.
    public enum Outcome: Sendable, Hashable {
        /// The text was saved with no change: nothing was written.
        case unchanged
        /// The changes were written as one version: the keys set or removed.
        case applied(changed: [String])
        /// Nothing was written, for the reason given (the editor failed, the text was emptied, a problem was
        /// saved again unchanged).
        case aborted(String)
    }

    /// An editor: given the text to show, the text the person saved, or nil when the editor failed (exited
    /// with an error).
    public typealias Editor = (String) throws -> String?

    /// The store the domain is read and written through.
    public let defaults: Defaults
    /// The domain's name.
    public let domain: String
    /// The domain's file.
    public let layer: PreferenceLayer
    /// The program's published schema for the domain, if any.
    public let schema: DomainSchema?
    /// Whether a value the schema refuses, or a key it does not declare, sends the person back to the editor;
    /// false (`--no-validate`) writes it with a warning in ``warnings``.
    public var validates = true
    /// Refusals beyond the schema, which `--no-validate` does not lift: the command refuses keys a fleet
    /// rollout is changing. Given the changes (nil: a removal), a problem for each refused key.
    public var vet: @Sendable ([String: PropertyList?]) -> [EditText.Problem] = { _ in [] }
    /// Why the change log says the version was written (`defaults edit --reason` gives its own).
    public var reason = "defaults edit"
    /// What was let through that the schema refuses (with ``validates`` off), for the command to print.
    public private(set) var warnings: [String] = []

    /// Each key the last applied edit changed, with its value before (nil: not set).
    public private(set) var replaced: [String: PropertyList?] = [:]

    /// The values the person was shown, secrets left out: what their text is compared with.
    private var base: [String: PropertyList]
    /// Keys left out of the text (secrets, unless shown): never removed by their absence.
    private let hidden: Set<String>
    /// The text the editor opens with next.
    private var text: String
    /// The text the person saved last.
    private var saved: String?
    /// The problems of the person's making (or a running program's refusal) the text shown holds, for the
    /// message when it is saved unchanged, which aborts; nil when saving it unchanged applies it.
    private var problemsShown: [String]?

    /// A session on the domain as it is now.
    ///
    /// - Parameters:
    ///   - header: Lines of comment above the values (``header(domain:path:)``).
    ///   - showSecrets: Whether keys the schema marks secret are shown and editable; else they are left out
    ///     and kept as they are.
    /// - Throws: ``EditText/Problem`` when the domain's file cannot be read (it is never replaced unseen).
    public init(
        defaults: Defaults, domain: String, layer: PreferenceLayer = .currentUser, header: [String],
        schema: DomainSchema?, showSecrets: Bool = false
    ) throws(EditText.Problem) {
        if let problem = defaults.problem(inDomain: domain, layer: layer) {
            throw EditText.Problem(message: "\(problem)")
        }
        let values = defaults.persistentDomainValues(forName: domain, layer: layer) ?? [:]
        let hidden = showSecrets ? [] : Set(values.keys.filter { schema?.keys[$0]?.isSecret == true })
        self.defaults = defaults
        self.domain = domain
        self.layer = layer
        self.schema = schema
        self.hidden = hidden
        self.base = values.filter { !hidden.contains($0.key) }
        self.text = EditText.render(values, header: header, schema: schema, hidden: hidden)
    }

    /// The header the command shows above a domain's values: which domain and file, how to apply and how to
    /// abort, and how each type is written.
    public static func header(domain: String, path: String) -> [String] {
        [
            "defaults edit \(domain)",
            "File: \(path)",
            "Change, add or remove keys, then save and quit: only what you change is written, onto the domain",
            "as it is when you save. To abort, quit the editor with an error (vi: :cq) or empty this file.",
            "\"text\" is a string, 42 an integer, 4.2 a real, true and false Booleans, 2024-01-31T09:05:00Z a date,",
            "<0fa1> data, ( a, b ) an array, { Key = value; } a dictionary.",
        ].map(EditText.commentLine)
    }

    /// Opens the editor until the edit is applied, unchanged or aborted.
    ///
    /// - Throws: what `editor` throws, and ``DefaultsError`` when the change could not be written (nothing was).
    public mutating func run(editor: Editor) throws -> Outcome {
        while true {
            let shown = text
            guard let saved = try editor(shown) else {
                return .aborted("the editor exited with an error: nothing was changed")
            }
            self.saved = saved
            if let problemsShown, saved == shown {
                let listed = problemsShown.joined(separator: "; ")
                return .aborted("saved again unchanged (\(listed)): nothing was changed")
            }
            let edited: [String: PropertyList]
            do {
                guard let values = try EditText.parse(saved) else {
                    return .aborted("the text was emptied: nothing was changed")
                }
                edited = values
            } catch {
                reopen(saved, problems: [error])
                continue
            }
            var changes: [String: PropertyList?] = [:]
            for (key, value) in edited where base[key].map(EditText.canonical) != EditText.canonical(value) {
                changes[key] = .some(value)
            }
            for key in base.keys where edited[key] == nil { changes[key] = .some(nil) }
            if changes.isEmpty { return .unchanged }
            var problems = schemaProblems(changes)
            if !validates {
                warnings += problems.map { "written anyway (--no-validate): \($0)" }
                problems = []
            }
            problems += vet(changes)
            if !problems.isEmpty {
                reopen(saved, problems: problems)
                continue
            }
            let conflict = try apply(changes)
            if conflict.now.isEmpty {
                replaced = Dictionary(uniqueKeysWithValues: changes.keys.map { ($0, base[$0]) })
                return .applied(changed: changes.keys.sorted())
            }
            reopen(saved, conflict: conflict)
        }
    }

    /// The version before the last applied edit, given the version it wrote: `written` with each key the edit
    /// changed as it was (what `--wait` puts back when a running program refuses the edit; another writer's
    /// keys are the version's own).
    public func versionBefore(written: [String: PropertyList]) -> [String: PropertyList] {
        var values = written
        for (key, value) in replaced { values[key] = value }
        return values
    }

    /// After the change was applied and a running program refused it (and the command put the version before
    /// back): the next ``run(editor:)`` opens the person's text again with `notes` at the top, on the domain as
    /// it is now. Saved unchanged, it aborts.
    public mutating func offerAgain(saying notes: [String]) {
        let values = defaults.persistentDomainValues(forName: domain, layer: layer) ?? [:]
        base = values.filter { !hidden.contains($0.key) }
        text = EditText.annotate(
            saved ?? text,
            general: ["Applied, then refused by a running program; the version before was put back:"] + notes
                + [Self.how])
        problemsShown = notes
    }

    /// How to go on, at the end of a round's notes.
    private static let how =
        "Fix what is marked //! and save, or quit the editor with an error (vi: :cq) or empty the file to abort."

    /// What the schema refuses of the changes: values it refuses, keys it does not declare (with the key most
    /// likely meant). Removals are never refused.
    private func schemaProblems(_ changes: [String: PropertyList?]) -> [EditText.Problem] {
        guard let schema else { return [] }
        return changes.keys.sorted().compactMap { key -> EditText.Problem? in
            guard case .some(.some(let value)) = changes[key] else { return nil }
            guard schema.keys[key] != nil else {
                let error = DefaultsError.undeclaredKey(key, domain: domain, suggestion: schema.nearestKey(to: key))
                return EditText.Problem(key: key, message: "\(error)")
            }
            return schema.violation(forKey: key, value: value).map { EditText.Problem(key: key, message: "\($0)") }
        }
    }

    /// A key another writer changed while the person edited it: its value now and the one shown (nil: not set).
    struct Conflict: Error {
        var now: [String: (now: PropertyList?, shown: PropertyList?)] = [:]
    }

    /// Writes the changes as one transaction, unless a key among them was changed by another writer since the
    /// person was shown it (and not to the person's value): then nothing is written, and each such key is
    /// returned with its current value and the one shown.
    private mutating func apply(_ changes: [String: PropertyList?]) throws -> Conflict {
        var conflict = Conflict()
        let base = base
        do {
            try defaults.transaction(inDomain: domain, layer: layer, reason: reason) { transaction in
                // Runs again on a newer version when a key read here changes before the commit.
                conflict = Conflict()
                for (key, value) in changes {
                    // Read through the transaction: the commit writes only if the key still holds it.
                    let current = transaction.domainValue(forKey: key)
                    let currentText = current.map(EditText.canonical)
                    if currentText == base[key].map(EditText.canonical) {
                        transaction.set(value, forKey: key)
                    } else if currentText != value.map(EditText.canonical) {
                        conflict.now[key] = (current, base[key])
                    }
                }
                if !conflict.now.isEmpty { throw conflict }
            }
        } catch is Conflict {
            // What the next save is compared with: the other writer's value, now shown beside the person's.
            for (key, values) in conflict.now { self.base[key] = values.now }
            return conflict
        }
        return Conflict()
    }

    /// The next opening: the person's saved text with the problems noted.
    private mutating func reopen(_ saved: String, problems: [EditText.Problem]) {
        var atKeys: [String: [String]] = [:]
        var atLines: [Int: [String]] = [:]
        for problem in problems {
            if let key = problem.key {
                atKeys[key, default: []].append(problem.message)
            } else if let line = problem.line {
                atLines[line, default: []].append("the line below: " + problem.message)
            }
        }
        text = EditText.annotate(
            saved,
            general: ["Not applied:"]
                + problems.map { problem in
                    // A line's problem is marked at its line: a number would be off by the notes above it.
                    let marked = problem.key == nil && problem.line != nil ? " (marked below)" : ""
                    return "  " + (problem.key.map { "\($0): " } ?? "") + problem.message + marked
                }
                + [Self.how],
            atKeys: atKeys, atLines: atLines)
        problemsShown = problems.map(\.description)
    }

    /// The next opening after a conflict: both values of each key noted; saved as it is, the person's apply.
    private mutating func reopen(_ saved: String, conflict: Conflict) {
        var atKeys: [String: [String]] = [:]
        var general = ["Not applied: another writer changed what you changed while you edited."]
        for key in conflict.now.keys.sorted() {
            guard let values = conflict.now[key] else { continue }
            let isSecret = schema?.keys[key]?.isSecret == true
            func written(_ value: PropertyList?) -> String {
                guard let value else { return "not set" }
                return isSecret ? "a secret value" : EditText.oneLine(value)
            }
            let what = "now \(written(values.now)) (you were shown \(written(values.shown)))"
            general.append("  \(PropertyList.typedTextKey(key)): \(what)")
            atKeys[key, default: []].append("another writer changed this while you edited: \(what); yours is below")
        }
        general.append("Save to apply yours (over the other writer's), or change them; to abort, quit the editor with")
        general.append("an error (vi: :cq) or empty the file.")
        text = EditText.annotate(saved, general: general, atKeys: atKeys)
        problemsShown = nil
    }
}
