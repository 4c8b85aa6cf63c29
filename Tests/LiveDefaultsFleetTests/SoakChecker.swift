#if Fleet
    import Foundation

    /// Decides a soak run: whether every host ended with etcd's values, and whether every write a host
    /// acknowledged (its writer saw it reach the file) is accounted for.
    ///
    /// A set's value is unique (`<host>-<n>`), so etcd's history (every revision of every key, from `defaults
    /// history`) tells where each went. An acknowledged write is accounted for when
    ///
    /// 1. **it reached etcd**: its value (or, for a deletion, a deletion of the value it replaced) is in etcd's
    ///    history — then it is the key's value now, or etcd's order put a later change after it;
    /// 2. **it was replaced on its host** by a later operation of the same host on the same key, before its agent
    ///    pushed it (an agent pushes a key's current value, not each step);
    /// 3. **it lost a conflict**: etcd has a change of the key, made by another host (or a deletion), after the
    ///    revision of the value the writer had replaced — a change the host had not applied yet, so etcd won
    ///    (Docs/Fleet.md, "Semantics").
    ///
    /// Anything else is a lost write. Rule 3 is generous where the writer read an older value than the file
    /// held (the writer reads before its locked write), never strict: a write the rules call lost was lost.
    struct SoakChecker {
        /// One acknowledged operation of a writer.
        struct Operation: Equatable {
            var host: String
            var sequence: Int
            var key: String
            /// The value set; nil for a deletion.
            var value: String?
            /// The value the writer read before it wrote; nil when the key was absent.
            var previous: String?
        }

        /// One revision of a key in etcd.
        struct Revision: Equatable {
            var revision: Int64
            var key: String
            /// The value; nil for a deletion.
            var value: String?
        }

        struct Verdict {
            var reachedEtcd = 0
            var replacedOnHost = 0
            var lostConflicts = 0
            var lost: [String] = []
            /// Hosts whose file differs from etcd's values: host, key, file's value, etcd's value.
            var divergent: [String] = []
        }

        /// Parses a writer's log (`n TAB key TAB value|- TAB previous|-` per line).
        static func operations(host: String, log: String) -> [Operation] {
            log.split(separator: "\n").compactMap { line in
                let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
                guard fields.count == 4, let sequence = Int(fields[0]) else { return nil }
                return Operation(
                    host: host, sequence: sequence, key: fields[1], value: fields[2] == "-" ? nil : fields[2],
                    previous: fields[3] == "-" ? nil : fields[3])
            }
        }

        static func host(ofValue value: String) -> String? {
            value.split(separator: "-", maxSplits: 1).first.map(String.init)
        }

        /// - Parameters:
        ///   - history: Every revision of the domain's keys, oldest first.
        ///   - etcd: etcd's values at the end.
        ///   - files: Each host's file at the end.
        static func check(
            operations: [Operation], history: [Revision], etcd: [String: String], files: [String: [String: String]]
        ) -> Verdict {
            var verdict = Verdict()
            for (host, file) in files.sorted(by: { $0.key < $1.key }) where file != etcd {
                for key in Set(file.keys).union(etcd.keys).sorted() where file[key] != etcd[key] {
                    verdict.divergent.append(
                        "\(host) \(key): file \(file[key] ?? "absent"), etcd \(etcd[key] ?? "absent")")
                }
            }
            let byKey = Dictionary(grouping: history, by: \.key).mapValues { $0.sorted { $0.revision < $1.revision } }
            var lastSequence: [String: Int] = [:]  // host + key → its last operation
            for operation in operations {
                let id = operation.host + "\t" + operation.key
                lastSequence[id] = max(lastSequence[id] ?? 0, operation.sequence)
            }
            for operation in operations {
                let revisions = byKey[operation.key] ?? []
                let replacedLater = (lastSequence[operation.host + "\t" + operation.key] ?? 0) > operation.sequence
                // The revision of the value the writer replaced (0: absent, or never in etcd).
                let base =
                    operation.previous.flatMap { previous in revisions.first { $0.value == previous } }?.revision ?? 0
                let concurrent = revisions.contains { revision in
                    revision.revision > base
                        && (revision.value == nil || revision.value.flatMap(host(ofValue:)) != operation.host)
                }
                let reached: Bool
                if let value = operation.value {
                    reached = revisions.contains { $0.value == value }
                } else {
                    guard let previous = operation.previous else { continue }  // deleting nothing changes nothing
                    if let index = revisions.firstIndex(where: { $0.value == previous }) {
                        reached = index + 1 < revisions.count && revisions[index + 1].value == nil
                    } else {
                        // It deleted a value that never left its host: nothing for etcd to do.
                        reached = true
                    }
                }
                if reached {
                    verdict.reachedEtcd += 1
                } else if replacedLater {
                    verdict.replacedOnHost += 1
                } else if concurrent {
                    verdict.lostConflicts += 1
                } else {
                    let what = operation.value.map { "set \(operation.key) = \($0)" } ?? "delete \(operation.key)"
                    verdict.lost.append(
                        "host \(operation.host) #\(operation.sequence): \(what) (replacing \(operation.previous ?? "nothing")) is neither in etcd nor replaced"
                    )
                }
            }
            return verdict
        }
    }
#endif
