public import Foundation
public import LiveDefaults

/// The keys of a domain a fleet rollout is changing, as the domain's sync agent on this machine last saw them
/// (`<state directory>/<domain>.rollouts.json`): the agent (`defaults sync`) keeps the file while it runs and
/// removes it when it stops; `defaults write`, `merge` and `import` refuse these keys, whose value the rollout
/// decides (`defaults rollout --abort` ends one).
public struct KeysUnderRollout: Codable, Sendable, Equatable {
    /// Each key under rollout, with what to tell a person (`rollout r1204, stage 2 of 4`).
    public var keys: [String: String]

    /// Keys under rollout.
    public init(keys: [String: String] = [:]) {
        self.keys = keys
    }

    /// The directory of a user's sync state: `.livedefaults-sync` in the user's defaults directory
    /// (`$XDG_CONFIG_HOME/.livedefaults-sync`), a name no domain can take.
    public static func stateDirectory(for locations: DefaultsLocations) -> String {
        var directory = locations.userDirectory
        while directory.count > 1, directory.hasSuffix("/") { directory.removeLast() }
        return directory + "/.livedefaults-sync"
    }

    /// The file of a domain's keys under rollout.
    public static func path(stateDirectory: String, domain: String) -> String {
        stateDirectory + "/" + domain + ".rollouts.json"
    }

    /// The keys the file lists; none when there is no file or it cannot be read (a write is then not refused:
    /// the agent refuses to push a key under rollout whatever the file says).
    public static func load(stateDirectory: String, domain: String) -> KeysUnderRollout {
        let path = path(stateDirectory: stateDirectory, domain: domain)
        guard let handle = FileHandle(forReadingAtPath: path) else { return KeysUnderRollout() }
        defer { try? handle.close() }
        // Bounded: a file this large is none of ours.
        guard let data = try? handle.read(upToCount: 1 << 20) else { return KeysUnderRollout() }
        return decode(data)
    }

    /// The keys a file's bytes list; none when they are not such a list.
    public static func decode(_ data: Data) -> KeysUnderRollout {
        (try? JSONDecoder().decode(KeysUnderRollout.self, from: data)) ?? KeysUnderRollout()
    }

    /// Writes the file (replacing it at once), or removes it when no key is under rollout.
    public func save(stateDirectory: String, domain: String) throws {
        let path = Self.path(stateDirectory: stateDirectory, domain: domain)
        guard !keys.isEmpty else {
            if FileManager.default.fileExists(atPath: path) { try FileManager.default.removeItem(atPath: path) }
            return
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        try encoder.encode(self).write(to: URL(fileURLWithPath: path), options: .atomic)
    }
}
