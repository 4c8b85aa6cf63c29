import Foundation
import LiveDefaultsTesting
import Testing

@testable import LiveDefaults

/// What the library's own tests do on a simulated machine, in one line each.
extension SimulatedMachine {
    /// The path of `domain`'s file in the machine's user directory.
    func path(ofDomain domain: String) -> String {
        "\(userDirectory)/\(domain).plist"
    }

    /// Another program saves `values` as `domain`'s file (an editor's rename unless `writer` says otherwise), and the
    /// machine settles: every process watching it has read it.
    func save(
        _ values: [String: PropertyList], toDomain domain: String, as writer: OtherWriter = .editor,
        format: PropertyList.Format = .xml
    ) async throws {
        write(try PropertyList.dictionary(values).encoded(as: format), to: path(ofDomain: domain), as: writer)
        await settle()
    }
}

extension Defaults {
    /// Waits until the reports this store deferred (those found by its watcher or its writer) reached its error
    /// handler: they run on a real queue, as user code does, outside the machine's seed.
    func reportsDelivered() {
        deliverReports()
    }
}

/// Runs `attempt` with a process stopped at file-system call 1, 2, 3, … of what it does, until `attempt` says the
/// work met every call before its stop (it returns true): each call of the work is then a stop some run tried.
/// Fails the test when 200 stops did not reach the end (the work, or how `attempt` sees its end, has changed).
func atEveryFileSystemCall(
    _ what: String = "the work", sourceLocation: SourceLocation = #_sourceLocation,
    _ attempt: (_ call: Int) async throws -> Bool
) async throws {
    for call in 1..<200 {
        if try await attempt(call) { return }
    }
    Issue.record("200 stops did not reach the end of \(what)", sourceLocation: sourceLocation)
}
