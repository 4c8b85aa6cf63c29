import Foundation
import LiveDefaults

/// The domain's temporary changes still to undo, for the settings page (`GET /temporary`): which settings a
/// `defaults write --for` (or `transaction(for:)`) holds, until when, the value each returns to, and why. The
/// library undoes them at their end; the page shows what is coming. Secret values show as `<secret>`.
struct TemporaryChanges {
    let catalog: SettingsCatalog

    /// Each pending change, soonest first, as the page's JSON; an unreadable file of pending reverts, as its error.
    func json() -> Any {
        let schema = catalog.schema()
        let pending: [PendingRevert]
        do { pending = try catalog.defaults.pendingReverts() } catch { return ["error": "\(error)"] }
        let style = Date.ISO8601FormatStyle(includingFractionalSeconds: false)
        return pending.sorted { $0.expiry < $1.expiry }.map { revert in
            var object: [String: Any] = [
                "expires": revert.expiry.formatted(style), "made": revert.made.formatted(style),
                "keys": Dictionary(
                    uniqueKeysWithValues: revert.keys.map { key, change in
                        let secret = schema.keys[key]?.isSecret == true
                        let shown = { (value: PropertyList?) -> Any in
                            guard let value else { return NSNull() }
                            return secret ? "<secret>" : JSONValues.json(value)
                        }
                        return (key, ["returnsTo": shown(change.before), "now": shown(change.set)])
                    }),
            ]
            if let reason = revert.reason { object["reason"] = reason }
            return object
        }
    }
}
