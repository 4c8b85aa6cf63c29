#if Fleet
    import Foundation
    import LiveDefaults

    #if canImport(Glibc)
        import Glibc
    #elseif canImport(Musl)
        import Musl
    #endif

    /// What a mirror knows of its last agreement with etcd, kept in a file so that a restarted agent can tell
    /// who changed a key while it was away: for each key, the value both sides had and the etcd revision that
    /// wrote it; the cluster it was agreed with; the revision up to which etcd's events were applied.
    ///
    /// The file is `<state directory>/<domain>.plist` (binary property list); beside it `<domain>.lock` is held
    /// (``StateLock``) for as long as a mirror runs, so that two agents never mirror the same domain of one user at
    /// once. A missing, unreadable or foreign (other cluster, other prefix) file means "never synced": etcd's
    /// keys are taken and local keys etcd lacks are pushed.
    struct MirrorState: Equatable {
        struct Entry: Equatable {
            /// The etcd revision that last wrote the key (`mod_revision`).
            var revision: Int64
            /// The value both sides had at that revision; nil when the revision deleted the key (kept until
            /// every event up to it was applied, so that the deletion's echo is known as ours).
            var value: PropertyList?
        }

        /// The revision a transaction expects the key at: the agreed one, or 0 (no such key) after a deletion.
        func agreedRevision(_ key: String) -> Int64 {
            guard let entry = keys[key], entry.value != nil else { return 0 }
            return entry.revision
        }

        /// Forgets deletions whose events were all applied.
        mutating func pruneDeletions() {
            keys = keys.filter { $0.value.value != nil || $0.value.revision > revision }
        }

        var clusterID: UInt64?
        var prefix: String
        /// All of etcd's events up to this revision were applied.
        var revision: Int64 = 0
        var keys: [String: Entry] = [:]
        /// The keys this host holds a value of its own for (a host-targeted value, `<prefix>.targets/…`), with
        /// that value: never pushed, and given back to etcd's value when the target goes. Kept in the file
        /// before the value reaches the domain's file, so that a restarted agent never takes a target's value
        /// for a local change to push.
        var targets: [String: PropertyList] = [:]
        /// Values (nil: a deletion) this host pushed without learning whether etcd applied them: the request
        /// failed after it was sent (a lost answer, a member killed or quorum lost mid-request, the agent
        /// killed while it waited), and etcd may apply such a transaction all the same. Recorded before the
        /// request goes out and kept in the file, so that when one of them comes back — through the watch, or
        /// at a restarted agent's reconciliation — it is known as this host's own change whose answer was lost,
        /// not another host's: a local change made after it is pushed instead of losing to it as a conflict.
        var inDoubt: [String: [PropertyList?]] = [:]

        static let formatVersion = 1

        /// Records a value about to be pushed for a key (before its request is sent). False when it was in doubt
        /// already: an earlier request of the same value may still apply, so a refusal of this one says nothing
        /// about it (``answered(_:forKey:applied:)`` is then only for an applied answer).
        @discardableResult
        mutating func pushing(_ value: PropertyList?, forKey key: String) -> Bool {
            guard inDoubt[key]?.contains(value) != true else { return false }
            inDoubt[key, default: []].append(value)
            return true
        }

        /// Whether etcd's value of a key (nil: deleted) is one this host pushed and never learnt the fate of.
        func isOwnPush(_ value: PropertyList?, forKey key: String) -> Bool {
            inDoubt[key]?.contains(value) ?? false
        }

        /// Forgets a key's pushes in doubt once etcd changed the key: each of them held only while the key kept
        /// the revision it was pushed against, so one is that change or none can ever apply.
        mutating func settlePushes(forKey key: String) {
            inDoubt[key] = nil
        }

        /// Forgets a value pushed for a key whose answer came: `applied` (the transaction held, so the pushes
        /// before it can no longer apply) forgets all of the key's; a refusal only that value — and only when
        /// this request put it in doubt: a value pushed again while an earlier request of it was in doubt may be
        /// refused because that earlier request applied (a retry after a lost answer, under a quorum loss).
        mutating func answered(_ value: PropertyList?, forKey key: String, applied: Bool) {
            guard !applied else { return settlePushes(forKey: key) }
            inDoubt[key]?.removeAll { $0 == value }
            if inDoubt[key]?.isEmpty == true { inDoubt[key] = nil }
        }

        init(prefix: String) {
            self.prefix = prefix
        }

        // MARK: File

        func encoded() throws -> Data {
            var entries: [String: PropertyList] = [:]
            for (key, entry) in keys {
                var fields: [String: PropertyList] = ["Revision": .integer(Int(entry.revision))]
                fields["Value"] = entry.value
                entries[key] = .dictionary(fields)
            }
            var root: [String: PropertyList] = [
                "Format": .integer(Self.formatVersion), "Prefix": .string(prefix),
                "Revision": .integer(Int(revision)), "Keys": .dictionary(entries),
            ]
            if let clusterID { root["Cluster"] = .string(String(clusterID)) }
            if !targets.isEmpty { root["Targets"] = .dictionary(targets) }
            if !inDoubt.isEmpty {
                // Each value as a dictionary, so that a deletion (no "Value") has a place in the list.
                root["InDoubt"] = .dictionary(
                    inDoubt.mapValues { values in .array(values.map { .dictionary($0.map { ["Value": $0] } ?? [:]) }) })
            }
            return try PropertyList.dictionary(root).encoded(as: .binary)
        }

        /// The state a file holds, or nil when it is not a state file of this version and prefix.
        static func decode(_ data: Data, prefix: String) -> MirrorState? {
            guard case .dictionary(let root)? = try? PropertyList.decode(data).value,
                case .integer(Self.formatVersion)? = root["Format"],
                case .string(prefix)? = root["Prefix"],
                case .integer(let revision)? = root["Revision"], revision >= 0,
                case .dictionary(let entries)? = root["Keys"]
            else { return nil }
            var state = MirrorState(prefix: prefix)
            state.revision = Int64(revision)
            if case .string(let text)? = root["Cluster"] { state.clusterID = UInt64(text) }
            if case .dictionary(let targets)? = root["Targets"] { state.targets = targets }
            if case .dictionary(let inDoubt)? = root["InDoubt"] {
                for (key, item) in inDoubt {
                    guard case .array(let values) = item else { return nil }
                    var pushed: [PropertyList?] = []
                    for value in values {
                        guard case .dictionary(let fields) = value else { return nil }
                        pushed.append(fields["Value"])
                    }
                    state.inDoubt[key] = pushed
                }
            }
            for (key, item) in entries {
                guard case .dictionary(let fields) = item, case .integer(let revision)? = fields["Revision"],
                    revision > 0
                else { return nil }
                state.keys[key] = Entry(revision: Int64(revision), value: fields["Value"])
            }
            return state
        }
    }

    /// The file of a mirror's state and the lock that keeps a second agent away from the domain.
    final class MirrorStateFile {
        let path: String
        private let lockDescriptor: Int32

        /// Opens (creating the directory) and locks the state file of a domain.
        ///
        /// - Throws: ``FleetError/Code-swift.enum/stateUnavailable`` when the directory cannot be made or another
        ///   process mirrors the domain already.
        init(directory: String, domain: String) throws(FleetError) {
            do {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            } catch {
                throw FleetError(.stateUnavailable, "cannot create the sync state directory \(directory): \(error)")
            }
            path = directory + "/" + domain + ".plist"
            let lockPath = StateLock.path(stateDirectory: directory, domain: domain)
            let descriptor = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
            guard descriptor >= 0 else {
                throw FleetError(.stateUnavailable, "cannot open \(lockPath): \(String(cString: strerror(errno)))")
            }
            guard StateLock.tryLock(descriptor) else {
                close(descriptor)
                throw FleetError(
                    .stateUnavailable,
                    "another agent is mirroring \(domain) for this user already (it holds \(lockPath))")
            }
            lockDescriptor = descriptor
        }

        deinit {
            close(lockDescriptor)  // releases the lock
        }

        func load(prefix: String) -> MirrorState? {
            guard let data = FileManager.default.contents(atPath: path) else { return nil }
            return MirrorState.decode(data, prefix: prefix)
        }

        /// Replaces the file atomically (a temporary file renamed over it). Not synced to disk: a state lost in a
        /// crash only makes the next reconciliation compare values instead of revisions (see Docs/Fleet.md).
        func save(_ state: MirrorState) throws(FleetError) {
            do {
                try state.encoded().write(to: URL(fileURLWithPath: path), options: .atomic)
            } catch {
                throw FleetError(.stateUnavailable, "cannot write the sync state \(path): \(error)")
            }
        }
    }
#endif
