#if Fleet
    import Foundation
    import LiveDefaults
    import Logging

    // Taking etcd's values into the domain's file: the agreement first, then the file, written as one version;
    // a value this host pushed itself, whose answer was lost, comes back as its own.
    extension DomainMirror {
        /// Takes etcd's value (nil: deletion) of a key at a revision: the agreement first, then the file's new
        /// value added to `writes` (written by the caller with the others of its batch, as one version).
        ///
        /// A value the local schema refuses is not taken: the local value stays and becomes the agreement at that
        /// revision (so it is not pushed back over etcd's either); the next valid value from etcd is taken.
        ///
        /// A value this host pushed without learning the outcome (``MirrorState/inDoubt``) is its own change come
        /// back: it becomes the agreement, and a local value changed since it is not replaced but added to
        /// `toPush`, as a local change made on top of it.
        func takeFromEtcd(
            key: String, value: PropertyList?, revision: Int64, into writes: inout LocalWrites,
            toPush: inout Set<String>
        ) {
            let ownPush = state.isOwnPush(value, forKey: key)
            state.settlePushes(forKey: key)
            if isTargeted(key) {
                // This host holds its own value: etcd's becomes the agreement, taken when the target goes.
                state.keys[key] = MirrorState.Entry(revision: revision, value: value)
                return
            }
            let local = writes.value(of: key) ?? localValue(key)
            if ownPush {
                return adoptOwnPush(key: key, value: value, revision: revision, local: local, toPush: &toPush)
            }
            if let violation = schemaRefusal(key: key, value: value) {
                logError(
                    "etcd's value of \(domain) \(key) (revision \(revision)) is refused by the local schema, so the local value stays: \(violation)"
                )
                state.keys[key] = MirrorState.Entry(revision: revision, value: local)
                return
            }
            let agreed = state.keys[key]?.value
            state.keys[key] = MirrorState.Entry(revision: revision, value: value)
            guard local != value else { return }
            if local != agreed {
                logConflict(
                    "conflict on \(domain) \(key): the local change was not yet in etcd when etcd's revision \(revision) changed the key; etcd's value wins",
                    key: key)
            }
            writes.set(value, forKey: key)
        }

        /// Takes etcd's value of a key (nil: deleted) at `revision`, found to be this host's own push whose answer
        /// was lost (``MirrorState/isOwnPush(_:forKey:)``), as the agreement; a local value changed since it is not
        /// replaced but added to `toPush`, as a local change made on top of it.
        func adoptOwnPush(
            key: String, value: PropertyList?, revision: Int64, local: PropertyList?, toPush: inout Set<String>
        ) {
            logger.info(
                "\(domain) \(key): etcd's value is this host's own push, whose answer was lost (revision \(revision))")
            state.keys[key] = MirrorState.Entry(revision: revision, value: value)
            conflictsAwaitingValue.remove(key)
            if local != value { toPush.insert(key) }
        }

        func localValue(_ key: String) -> PropertyList? {
            store.persistentDomainValues(forName: domain)?[key]
        }

        func writeLocal(key: String, value: PropertyList?) {
            do {
                try store.trySet(value, forKey: key, inDomain: domain, layer: .currentUser)
                wroteLocally = true
            } catch {
                logError("cannot apply etcd's \(domain) \(key) locally: \(error)")
            }
        }

        /// Values from etcd to write into the domain's file together (a later value of a key replaces an earlier
        /// one).
        struct LocalWrites {
            private(set) var values: [String: PropertyList?] = [:]

            mutating func set(_ value: PropertyList?, forKey key: String) { values[key] = .some(value) }

            /// The value to be written for a key (`.some(nil)`: a removal), nil when none is.
            func value(of key: String) -> PropertyList?? { values[key] }

            /// The keys written, sorted (so that the log and the key-by-key fallback are in a stable order).
            var keys: [String] { values.keys.sorted() }

            var isEmpty: Bool { values.isEmpty }
        }

        /// Writes values taken from etcd as one version of the domain's file (a transaction of the library that
        /// reads nothing: it cannot conflict, and other writers' keys are kept); on disk when this returns.
        func writeLocal(_ writes: LocalWrites) {
            guard !writes.isEmpty else { return }
            do {
                // The change log records the version as the fleet's, at the revision the agent has reached (the
                // transaction commits on this thread; the key-by-key fallback below is written by the store's
                // writer and logged as this process's).
                try Defaults.attributingWrites(toFleetRevision: state.revision) {
                    try store.transaction(inDomain: domain) { tx in
                        for (key, value) in writes.values { tx.set(value, forKey: key) }
                    }
                }
            } catch {
                logError(
                    "cannot apply etcd's \(domain) \(writes.keys.joined(separator: ", ")) locally: \(error); "
                        + "trying key by key")
                for key in writes.keys { writeLocal(key: key, value: writes.values[key] ?? nil) }
            }
        }
    }
#endif
