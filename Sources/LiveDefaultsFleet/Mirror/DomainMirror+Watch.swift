#if Fleet
    import Foundation
    import LiveDefaults
    import Logging

    // etcd's watch of the domain's prefix: started per connection, its events applied in the mirror's loop.
    extension DomainMirror {
        /// Starts the watch of this generation and its health check in `group`; both report into the inbox. They
        /// end when one of them fails, when the returned continuation is finished (a newer connection replaces
        /// them), or when the group is cancelled.
        func startWatch(in group: inout DiscardingTaskGroup, generation: Int, endpoint: Int)
            -> AsyncStream<Void>.Continuation
        {
            let start = state.revision + 1
            let (client, inbox, key, rangeEnd, heartbeat) = (
                self.client, self.inbox, keyPrefix, keyRangeEnd, timing.heartbeat
            )
            let targets = targetPrefix.map { (key: $0, rangeEnd: targetRangeEnd, start: targetsRevision + 1) }
            let (rollouts, rolloutsEnd, rolloutsChanged) = (
                rolloutsPrefix, Self.rolloutsRangeEnd(rolloutsPrefix), self.rolloutsChanged
            )
            let (stopped, stop) = AsyncStream.makeStream(of: Void.self)
            // One watch of this connection: its responses go to `post`, its end (unless cancelled) is a failure.
            @Sendable func watch(
                _ key: Data, _ rangeEnd: Data?, from start: Int64,
                post: @escaping @Sendable (EtcdWatchResponse) -> Void
            ) async {
                do {
                    try await client.watch(key: key, rangeEnd: rangeEnd, from: start, endpoint: endpoint) { post($0) }
                } catch let error as FleetError {
                    inbox.postWatchFailed(generation: generation, error)
                } catch {
                    if !Task.isCancelled {
                        inbox.postWatchFailed(generation: generation, FleetError(.unreachable, "\(error)"))
                    }
                }
            }
            group.addTask {
                await withTaskGroup(of: Void.self) { connection in
                    connection.addTask {
                        await watch(key, rangeEnd, from: start) { inbox.postWatched(generation: generation, $0) }
                    }
                    if let targets {
                        connection.addTask {
                            await watch(targets.key, targets.rangeEnd, from: targets.start) {
                                inbox.postTargets(generation: generation, $0)
                            }
                        }
                    }
                    if let rolloutsChanged {
                        // From the current revision: once the watch is made, a read of the records covers every
                        // change before it, and each event after wakes another.
                        connection.addTask {
                            await watch(rollouts, rolloutsEnd, from: 0) { response in
                                if response.created == true || response.events?.isEmpty == false {
                                    rolloutsChanged.yield()
                                }
                            }
                        }
                    }
                    // A member cut off from the others, or one that stopped answering without closing the
                    // connection, may leave the watch silent: a linearizable read on the same member says whether
                    // it still serves.
                    connection.addTask {
                        while !Task.isCancelled {
                            do { try await Task.sleep(for: heartbeat) } catch { return }
                            do throws(FleetError) {
                                let summary = try await client.checkHealth(
                                    key: key, rangeEnd: rangeEnd, endpoint: endpoint)
                                inbox.postHealth(generation: generation, summary)
                            } catch {
                                if !Task.isCancelled { inbox.postWatchFailed(generation: generation, error) }
                                return
                            }
                        }
                    }
                    connection.addTask {
                        for await _ in stopped {}
                    }
                    // Whichever ends first (a failure reported, or the stop) ends the others.
                    _ = await connection.next()
                    connection.cancelAll()
                }
            }
            return stop
        }

        /// Takes the watched events into the agreement and the domain's file: every value of the batch (all the
        /// events of each etcd revision it holds: another host's transaction) in one local transaction, one
        /// version of the file, so that programs on this host never see part of a change.
        ///
        /// - Returns: The keys to push: those whose event was this host's own push in doubt and whose local value
        ///   changed again since.
        func applyWatched(_ events: [EtcdEvent], progress: Int64?) -> Set<String> {
            var writes = LocalWrites()
            var toPush = Set<String>()
            for event in events {
                guard let kv = event.kv, let etcdKey = kv.key, let revision = kv.mod_revision?.value else { continue }
                state.revision = max(state.revision, revision)
                if event.type == "DELETE" { etcdKeys.remove(etcdKey) } else { etcdKeys.insert(etcdKey) }
                guard let key = layout.defaultsKey(domain: domain, etcdKey: etcdKey) else {
                    logger.debug("ignored an etcd key under \(domain)'s prefix that names no defaults key")
                    continue
                }
                if let known = state.keys[key], known.revision >= revision { continue }  // our own push, echoed
                if event.type == "DELETE" {
                    takeFromEtcd(key: key, value: nil, revision: revision, into: &writes, toPush: &toPush)
                } else {
                    guard let value = decodeValue(kv.value, key: key, revision: revision) else {
                        state.settlePushes(forKey: key)
                        continue
                    }
                    takeFromEtcd(key: key, value: value, revision: revision, into: &writes, toPush: &toPush)
                }
            }
            writeLocal(writes)
            if let progress {
                // A progress notification: nothing up to this revision concerns the domain.
                state.revision = max(state.revision, progress)
            }
            return toPush
        }

        func decodeValue(_ bytes: Data?, key: String, revision: Int64) -> PropertyList? {
            do {
                return try FleetLayout.decode(bytes ?? Data())
            } catch {
                logError(
                    "etcd's value of \(domain) \(key) (revision \(revision)) is not a property list; the key is left as it is: \(error)"
                )
                return nil
            }
        }

        /// Why the domain's published schema (as this machine has it) refuses a value, if it does. Looked up
        /// each time (a value from etcd is rare next to the file's reads), so that a schema published after the
        /// agent started applies at once; one that cannot be read is logged and refuses nothing.
        func schemaRefusal(key: String, value: PropertyList?) -> SchemaViolation? {
            guard let value else { return nil }
            do {
                return try store.publishedSchema(inDomain: domain)?.violation(forKey: key, value: value)
            } catch {
                logger.warning("the schema of \(domain) cannot be read, so values are not checked: \(error)")
                return nil
            }
        }
    }
#endif
