import Foundation
import Testing

@testable import LiveDefaults

/// A fresh temporary directory per test, removed when the test process exits.
///
/// Not in `deinit`: Swift may release a local right after its last use, which in a test is often
/// `directory.store()`, long before the test is done with the files.
final class TemporaryDirectory: Sendable {
    let path: String

    private static let created = Lock<[String]>([])

    init() {
        let path = NSTemporaryDirectory() + "livedefaults-tests-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        self.path = path
        let first = Self.created.withLock { created in
            created.append(path)
            return created.count == 1
        }
        if first {
            atexit {
                // Pending writes first, or the writer's own exit handler would recreate the directories.
                StorageContext.system.writer.writeAll()
                for path in TemporaryDirectory.created.withLock({ $0 }) {
                    try? FileManager.default.removeItem(atPath: path)
                }
            }
        }
    }

    func store(
        _ domain: String = "com.example.test", arguments: [String] = [], languages: [String] = [],
        clock: any DefaultsClock = SystemDefaultsClock.shared
    ) throws -> Defaults {
        var configuration = Defaults.Configuration.rooted(at: path, applicationDomain: domain, arguments: arguments)
        configuration.languages = languages
        configuration.clock = clock
        return try Defaults(configuration: configuration)
    }

    func file(_ name: String) -> String { "\(path)/\(name)" }

    func write(_ name: String, _ contents: String) throws {
        try Data(contents.utf8).write(to: URL(fileURLWithPath: file(name)))
    }
}
