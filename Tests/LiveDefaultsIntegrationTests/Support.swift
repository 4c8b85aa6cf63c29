import Foundation
import LiveDefaults

/// A private configuration directory for one test, removed by `remove()` after the store's writes are on disk.
struct Sandbox {
    let path: String

    init() {
        path = NSTemporaryDirectory() + "livedefaults-integration-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    /// A store on `domain` whose files live in this directory.
    func store(_ domain: String) throws -> Defaults {
        try Defaults(configuration: .rooted(at: path, applicationDomain: domain))
    }

    func file(_ name: String) -> String { "\(path)/\(name)" }

    /// Flushes `stores`, then deletes the directory.
    func remove(after stores: Defaults...) {
        for store in stores { _ = store.synchronize() }
        try? FileManager.default.removeItem(atPath: path)
    }
}
