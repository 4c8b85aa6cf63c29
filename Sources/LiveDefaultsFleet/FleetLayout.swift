#if Fleet
    public import Foundation
    public import LiveDefaults

    /// Where a domain lives in etcd and how its values are written there, so that other tools can read and
    /// write them (see Docs/Fleet.md).
    ///
    /// - One etcd key per defaults key: `<prefix><domain>/<key>`, the default prefix being `/livedefaults/`
    ///   (`/livedefaults/com.example.api/RateLimit`). The defaults key is the rest of the etcd key after the
    ///   domain's slash, as UTF-8, so it may itself contain slashes.
    /// - The value is a property list holding the one value: XML as LiveDefaults writes it
    ///   (`<plist version="1.0"><integer>50</integer></plist>` after the XML declaration and DOCTYPE); any
    ///   property-list format LiveDefaults reads is accepted: XML, binary `bplist00`, and old-style text, in
    ///   which a bare word or a quoted text is a string (`etcdctl put /livedefaults/com.example.api/Mode fast`
    ///   stores the string "fast"; a number needs XML, `<plist version="1.0"><integer>50</integer></plist>`).
    ///   A value that is no property list is logged and left out; the local key keeps its value.
    /// - A deleted etcd key is a removed defaults key.
    public struct FleetLayout: Sendable, Hashable {
        /// The prefix every domain's keys are under; it ends with `/`.
        public var prefix: String

        /// The layout under `prefix` (a missing trailing slash is added).
        public init(prefix: String = "/livedefaults/") {
            self.prefix = prefix.hasSuffix("/") ? prefix : prefix + "/"
        }

        /// The etcd key prefix of a domain: `<prefix><domain>/`.
        public func domainPrefix(_ domain: String) -> String {
            prefix + domain + "/"
        }

        /// The etcd key of a defaults key.
        public func etcdKey(domain: String, key: String) -> String {
            domainPrefix(domain) + key
        }

        /// Where the live hosts register (`<prefix>.hosts/`): one key per host, `<prefix>.hosts/<host id>`, a JSON
        /// ``FleetHostRecord`` attached to the agent's lease. A domain name never starts with a dot, so no domain's
        /// keys are under it.
        public var hostsPrefix: String { prefix + ".hosts/" }

        /// Where one host's own values of a domain's keys are (`<prefix>.targets/<domain>/<host id>/`): a value at
        /// `<prefix>.targets/<domain>/<host id>/<key>` (a property list, as a domain key's) is what that host's file
        /// holds for the key instead of the domain's value, until it is deleted; the host's agent never pushes it.
        /// What a rollout writes to the hosts of a stage.
        public func targetsPrefix(domain: String, host: String) -> String {
            prefix + ".targets/" + domain + "/" + host + "/"
        }

        /// Where the reasons of a domain's changes are (`<prefix>.reasons/<domain>`): the agent that pushes a change
        /// made with a reason (`defaults write --reason`, a transaction's `reason`) puts, in the same etcd
        /// transaction, this key's value: a property list dictionary of each changed defaults key's reason. The
        /// change and its reasons share their revision, which is how `defaults history` joins them
        /// (``FleetHistory/Change/reason``). Not under the domain's prefix: no agent applies it as a key.
        public func reasonsKey(domain: String) -> String {
            prefix + ".reasons/" + domain
        }

        /// Where the hosts' health checks report (`<prefix>.health/`): `<prefix>.health/<host id>`, a JSON
        /// ``HealthReport`` attached to the same lease.
        public var healthPrefix: String { prefix + ".health/" }

        /// The defaults key an etcd key of the domain stands for, or nil when the etcd key is not under the
        /// domain's prefix, is not UTF-8, or names no key (nothing after the prefix).
        public func defaultsKey(domain: String, etcdKey: Data) -> String? {
            let start = Data(domainPrefix(domain).utf8)
            guard etcdKey.count > start.count, etcdKey.starts(with: start) else { return nil }
            return String(bytes: etcdKey.dropFirst(start.count), encoding: .utf8)
        }

        /// The end of the range of etcd keys that start with `prefix` (etcd's `range_end`: the prefix with its last
        /// byte that is not 0xFF increased by one, bytes after it dropped).
        public static func rangeEnd(ofPrefix prefix: Data) -> Data {
            var bytes = [UInt8](prefix)
            while let last = bytes.last {
                if last < 0xFF {
                    bytes[bytes.count - 1] = last + 1
                    return Data(bytes)
                }
                bytes.removeLast()
            }
            return Data([0])  // every key: etcd's "\0" range end
        }

        /// How a value is written to etcd: an XML property list.
        ///
        /// - Throws: `PropertyListError` when the value cannot be written (a date or number XML cannot hold).
        public static func encode(_ value: PropertyList) throws -> Data {
            try value.encoded(as: .xml)
        }

        /// The value an etcd value stands for: any property-list format; bytes that are none are an error.
        ///
        /// - Throws: `PropertyListError`.
        public static func decode(_ bytes: Data) throws -> PropertyList {
            try PropertyList.decode(bytes).value
        }
    }
#endif
