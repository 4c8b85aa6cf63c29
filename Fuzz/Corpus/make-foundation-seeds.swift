// Writes the seed corpus's Foundation-written files into seeds/: PropertyListSerialization in XML and
// binary, and a domain file written by Foundation.UserDefaults itself.
// From this directory (Foundation reads XDG_CONFIG_HOME once, at start, so it is set outside):
// swiftc make-foundation-seeds.swift -o /tmp/seeds && XDG_CONFIG_HOME=$PWD/seeds-home /tmp/seeds
import Foundation

let domain: [String: Any] = [
    "RateLimit": 100, "Greeting": "Hello from Foundation", "Verbose": true, "Ratio": 0.25,
    "Launched": Date(timeIntervalSince1970: 1_795_000_000.5), "Token": Data([0, 1, 2, 254, 255]),
    "Hosts": ["a", "b", "ü"], "Limits": ["perMinute": 60, "nested": ["deep": [1, 2, 3]]],
    "Empty": [String: Any](), "None": [Any](), "Negative": -7, "Max": Int.max, "Min": Int.min,
]
for (name, format) in [("xml", PropertyListSerialization.PropertyListFormat.xml), ("binary", .binary)] {
    let data = try PropertyListSerialization.data(fromPropertyList: domain, format: format, options: 0)
    try data.write(to: URL(fileURLWithPath: "seeds/foundation-serialization.\(name).plist"))
}
guard let directory = ProcessInfo.processInfo.environment["XDG_CONFIG_HOME"], directory.hasSuffix("/seeds-home") else {
    fatalError("run with XDG_CONFIG_HOME=$PWD/seeds-home, never against the real home")
}
let defaults = UserDefaults(suiteName: "foundation-userdefaults")!
for (key, value) in domain { defaults.set(value, forKey: key) }
defaults.synchronize()
try FileManager.default.moveItem(
    atPath: directory + "/foundation-userdefaults.plist", toPath: "seeds/foundation-userdefaults.xml.plist")
try FileManager.default.removeItem(atPath: directory)
