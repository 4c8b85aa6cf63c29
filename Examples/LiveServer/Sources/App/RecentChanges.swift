import Foundation
import LiveDefaults

/// The domain's recent changes for the settings page (`GET /changes`), from its change log: who changed which
/// setting from what to what, and why when they said (`defaults write --reason`) — this page, the `defaults`
/// command, the fleet agent, an editor. Secret values show as `<secret>`.
struct RecentChanges {
    let catalog: SettingsCatalog

    /// The newest `limit` changes, newest first, as the page's JSON.
    func json(limit: Int) -> [[String: Any]] {
        let schema = catalog.schema()
        let domain = catalog.defaults.configuration.applicationDomain
        return catalog.defaults.loggedChanges(inDomain: domain, limit: limit).map { change in
            let secret = schema.keys[change.key]?.isSecret == true
            var object: [String: Any] = [
                "time": change.time.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true)),
                "key": change.key, "origin": change.origin.rawValue,
                "old": Self.json(change.oldValue, secret: secret), "new": Self.json(change.newValue, secret: secret),
            ]
            if let executable = change.executable {
                object["who"] =
                    "\(executable) (pid \(change.processID.map(String.init) ?? "?"))"
                    + (change.revision.map { ", etcd revision \($0)" } ?? "")
            }
            if let reason = change.reason { object["reason"] = reason }
            return object
        }
    }

    /// A logged value as JSON: absent is null; a large value its type and size; an unknown old value a note.
    static func json(_ value: LoggedChange.Value, secret: Bool) -> Any {
        switch value {
        case .absent: NSNull()
        case .unknown: "(unknown)"
        case _ where secret: "<secret>"
        case .value(let value): JSONValues.json(value)
        case .summary(let type, let size): "(\(type), \(size) bytes)"
        }
    }
}
