#if Fleet
    public import Foundation

    /// How to reach an etcd cluster: its client URLs (tried in turn: when one fails, the next), and the TLS files
    /// and credentials etcd asks for — the same as etcdctl's `--endpoints`, `--cacert`, `--cert`, `--key`, `--user`.
    ///
    /// ```swift
    /// let etcd = try EtcdConnection(endpoints: "https://10.0.0.1:2379,https://10.0.0.2:2379",
    ///                               caCertificate: "/etc/etcd/ca.pem")
    /// ```
    public struct EtcdConnection: Sendable, Hashable {
        /// The members' client URLs (`http://host:port` or `https://host:port`), in the order they are tried.
        public var endpoints: [URL]
        /// A PEM file of the certificate authorities that sign the members' certificates (`--cacert`); without
        /// it, HTTPS endpoints are checked against the system's trust store.
        public var caCertificate: String?
        /// A PEM file with this client's certificate chain, for etcd's client-certificate authentication
        /// (`--cert`).
        public var certificate: String?
        /// The PEM file of the private key of ``certificate`` (`--key`).
        public var privateKey: String?
        /// A user name and password for etcd's role-based authentication (`--user name:password`).
        public var user: (name: String, password: String)? {
            get { credentials.map { ($0.name, $0.password) } }
            set { credentials = newValue.map { Credentials(name: $0.name, password: $0.password) } }
        }
        /// How long one request (not a watch) may take before the next endpoint is tried.
        public var requestTimeout: Duration

        var credentials: Credentials?

        struct Credentials: Sendable, Hashable {
            var name: String
            var password: String
        }

        /// A connection to the given endpoints.
        ///
        /// - Throws: ``FleetError`` with ``FleetError/Code-swift.enum/invalidOption`` when there is no endpoint,
        ///   or one is not an `http` or `https` URL with a host, or a certificate is given without its key.
        public init(
            endpoints: [URL], caCertificate: String? = nil, certificate: String? = nil, privateKey: String? = nil,
            user: (name: String, password: String)? = nil, requestTimeout: Duration = .seconds(5)
        ) throws(FleetError) {
            guard !endpoints.isEmpty else { throw FleetError(.invalidOption, "no etcd endpoint was given") }
            for endpoint in endpoints {
                guard let scheme = endpoint.scheme?.lowercased(), scheme == "http" || scheme == "https",
                    endpoint.host?.isEmpty == false
                else {
                    throw FleetError(
                        .invalidOption,
                        "the etcd endpoint \"\(endpoint.absoluteString)\" is not an http:// or https:// URL with a host"
                    )
                }
            }
            if (certificate == nil) != (privateKey == nil) {
                throw FleetError(
                    .invalidOption, "a client certificate (--cert) needs its private key (--key), and back")
            }
            if let user, user.name.isEmpty {
                throw FleetError(.invalidOption, "the etcd user name is empty (--user NAME:PASSWORD)")
            }
            self.endpoints = endpoints
            self.caCertificate = caCertificate
            self.certificate = certificate
            self.privateKey = privateKey
            self.credentials = user.map { Credentials(name: $0.name, password: $0.password) }
            self.requestTimeout = requestTimeout
        }

        /// A connection to endpoints given as etcdctl takes them: URLs separated by commas
        /// (`http://127.0.0.1:2379,http://127.0.0.1:22379`); a URL without a scheme is taken as `http://`.
        ///
        /// - Throws: ``FleetError`` with ``FleetError/Code-swift.enum/invalidOption`` (see
        ///   ``init(endpoints:caCertificate:certificate:privateKey:user:requestTimeout:)``).
        public init(
            endpoints list: String, caCertificate: String? = nil, certificate: String? = nil, privateKey: String? = nil,
            user: (name: String, password: String)? = nil, requestTimeout: Duration = .seconds(5)
        ) throws(FleetError) {
            var endpoints: [URL] = []
            for item in list.split(separator: ",", omittingEmptySubsequences: true) {
                let text = item.trimmingCharacters(in: .whitespaces)
                guard !text.isEmpty else { continue }
                let spelled = text.contains("://") ? text : "http://" + text
                guard let url = URL(string: spelled) else {
                    throw FleetError(.invalidOption, "the etcd endpoint \"\(text)\" is not a URL")
                }
                endpoints.append(url)
            }
            try self.init(
                endpoints: endpoints, caCertificate: caCertificate, certificate: certificate, privateKey: privateKey,
                user: user, requestTimeout: requestTimeout)
        }

        /// Splits `name:password` as etcdctl's `--user` does (the password may contain colons).
        ///
        /// - Throws: ``FleetError`` with ``FleetError/Code-swift.enum/invalidOption`` when there is no colon.
        public static func user(fromOption text: String) throws(FleetError) -> (name: String, password: String) {
            guard let colon = text.firstIndex(of: ":") else {
                throw FleetError(.invalidOption, "--user takes NAME:PASSWORD")
            }
            return (String(text[..<colon]), String(text[text.index(after: colon)...]))
        }
    }
#endif
