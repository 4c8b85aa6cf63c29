import Foundation
import LiveDefaultsTesting

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
