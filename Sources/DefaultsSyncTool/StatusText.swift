#if Fleet
    import DefaultsToolSupport
    import Foundation
    import LiveDefaults
    import LiveDefaultsFleet

    /// How `defaults sync --status` prints a domain's status: for people, and as JSON for programs.
    enum StatusText {
        static func text(_ report: SyncStatusReport) -> String {
            var lines = ["\(report.domain): \(report.inStep ? "in step" : "NOT in step")"]
            for problem in report.problems { lines.append("  ! \(problem)") }
            guard let status = report.status else { return lines.joined(separator: "\n") + "\n" }
            let agent: String
            switch report.agent {
            case .running: agent = "process \(status.processID), running since \(time(status.started))"
            case .notResponding(let seconds):
                agent = "process \(status.processID), not responding for \(Int(seconds.rounded())) s"
            case .stopped:
                agent = "not running (process \(status.processID) stopped; status of \(time(status.updated)))"
            case .neverRan: agent = "none"
            }
            lines.append("  agent:       \(agent)")
            if let endpoint = status.connectedEndpoint {
                lines.append(
                    "  etcd:        connected to \(endpoint)\(status.connectedSince.map { " since \(time($0))" } ?? "")"
                )
            } else {
                let since = status.disconnectedSince.map { " since \(time($0))" } ?? ""
                lines.append("  etcd:        disconnected\(since)\(status.disconnectReason.map { ": \($0)" } ?? "")")
            }
            var revision = "applied up to \(status.appliedRevision)"
            if let etcd = status.etcdRevision, let newest = status.domainRevision {
                revision += "; at the last check etcd was at \(etcd), the domain's newest change \(newest)"
            }
            lines.append("  revision:    \(revision)")
            lines.append(
                "  pending:     \(status.pendingKeys.isEmpty ? "nothing" : status.pendingKeys.joined(separator: ", "))")
            lines.append("  conflicts:   \(status.conflicts) since the agent started")
            if let error = status.lastError {
                lines.append("  last error:  \(status.lastErrorTime.map { "\(time($0)): " } ?? "")\(error)")
            } else {
                lines.append("  last error:  none")
            }
            return lines.joined(separator: "\n") + "\n"
        }

        static func jsonObject(_ report: SyncStatusReport) -> Any {
            var object: [String: Any] = [
                "domain": report.domain, "inStep": report.inStep, "problems": report.problems,
            ]
            switch report.agent {
            case .running: object["agent"] = "running"
            case .notResponding(let seconds):
                object["agent"] = "not responding"
                if seconds.isFinite { object["silentSeconds"] = seconds }
            case .stopped: object["agent"] = "stopped"
            case .neverRan: object["agent"] = "none"
            }
            if !report.refusals.isEmpty {
                object["refusals"] = report.refusals.mapValues { $0.map(\.jsonObject) }
            }
            if let status = report.status,
                let data = try? status.encoded(),
                let fields = try? JSONSerialization.jsonObject(with: data)
            {
                object["status"] = fields
            }
            return object
        }

        static func time(_ date: Date) -> String {
            date.formatted(.iso8601)
        }
    }

    extension VersionRefusal {
        /// The refusal in `defaults sync --status --json` and `defaults hosts --json`.
        var jsonObject: [String: Any] {
            [
                "processID": Int(processID), "executable": executable, "version": version.description, "reason": reason,
                "time": time.formatted(.iso8601),
            ]
        }
    }
#endif
