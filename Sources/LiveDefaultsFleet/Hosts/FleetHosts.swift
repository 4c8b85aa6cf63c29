#if Fleet
    import Foundation

    /// The fleet's live hosts as etcd knows them: what `defaults hosts` prints and what a rollout addresses.
    public enum FleetHosts {
        /// Every registered host (its agent's lease is alive), with its latest health report, sorted by ID.
        ///
        /// A record that is not a host record (written by another tool) is left out.
        ///
        /// - Throws: ``FleetError`` when etcd cannot be reached or answers with an error.
        public static func live(etcd: EtcdConnection, layout: FleetLayout = FleetLayout()) async throws(FleetError)
            -> [FleetHostRecord]
        {
            try await EtcdClient.using(etcd) { client throws(FleetError) in
                try await live(client: client, layout: layout)
            }
        }

        /// The same, with a client already open.
        static func live(client: EtcdClient, layout: FleetLayout) async throws(FleetError) -> [FleetHostRecord] {
            let hostsPrefix = Data(layout.hostsPrefix.utf8)
            let healthPrefix = Data(layout.healthPrefix.utf8)
            // Both ranges from one revision, so a host's record and its health are of the same moment.
            let hosts = try await client.range(key: hostsPrefix, rangeEnd: FleetLayout.rangeEnd(ofPrefix: hostsPrefix))
            let revision = hosts.header?.revision?.value
            let health = try await client.range(
                key: healthPrefix, rangeEnd: FleetLayout.rangeEnd(ofPrefix: healthPrefix), revision: revision)
            var reports: [String: HealthReport] = [:]
            for entry in health.kvs ?? [] {
                guard let key = entry.key, let id = String(bytes: key.dropFirst(healthPrefix.count), encoding: .utf8),
                    let value = entry.value,
                    let report = HealthReport.decode(value)
                else { continue }
                reports[id] = report
            }
            var records: [FleetHostRecord] = []
            for entry in hosts.kvs ?? [] {
                guard let value = entry.value,
                    var record = FleetHostRecord.decode(value)
                else { continue }
                record.health = reports[record.id]
                records.append(record)
            }
            return records.sorted { $0.id < $1.id }
        }
    }
#endif
