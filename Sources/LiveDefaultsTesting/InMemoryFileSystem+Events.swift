import Foundation
package import LiveDefaults

// The kernel's inotify over the in-memory file system: the events a watcher of a simulated process reads.
extension InMemoryFileSystem {
    /// One inotify instance: its watches (one per directory, as the kernel keeps one per inode) and the events
    /// queued and not yet read.
    struct EventInstance {
        var watches: [Int32: Int] = [:]
        var nextWatch: Int32 = 1
        var queue: [Inotify.Event] = []
        var overflowed = false
    }

    /// How many events an instance queues before it drops the rest for one overflow event (the kernel's
    /// `max_queued_events` default).
    static let maximumQueuedEvents = 16_384

    /// The file system's inotify: what a simulated process's watcher reads.
    package var events: any FileEventSource { InMemoryFileEvents(fileSystem: self) }

    /// Whether the instance has events to read (what `poll` on its descriptor would say).
    package func hasEvents(_ instance: Int32) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        return !(eventInstances[instance]?.queue.isEmpty ?? true)
    }

    /// Queues `kind` for `name` in directory `parent` on every instance that watches it. Called with the lock held.
    func emit(_ kind: Inotify.Event.Kind, named name: String, in parent: Int) {
        for (descriptor, instance) in eventInstances {
            for (watch, node) in instance.watches where node == parent {
                queue(Inotify.Event(watch: watch, kind: kind, name: name), on: descriptor)
            }
        }
    }

    /// Tells the watches of directory `node` that it is gone from where it was (moved or deleted): the kernel's
    /// `IN_MOVE_SELF` or `IN_DELETE_SELF`, then `IN_IGNORED` for a deleted one. Called with the lock held.
    func emitWatchEnded(of node: Int, deleted: Bool) {
        for (descriptor, instance) in eventInstances {
            for (watch, watched) in instance.watches where watched == node {
                queue(Inotify.Event(watch: watch, kind: .watchEnded, name: ""), on: descriptor)
                if deleted { eventInstances[descriptor]?.watches.removeValue(forKey: watch) }
            }
        }
    }

    private func queue(_ event: Inotify.Event, on descriptor: Int32) {
        guard var instance = eventInstances[descriptor], !instance.overflowed else { return }
        if instance.queue.count >= Self.maximumQueuedEvents {
            instance.queue.append(Inotify.Event(watch: -1, kind: .overflow, name: ""))
            instance.overflowed = true
        } else {
            instance.queue.append(event)
        }
        eventInstances[descriptor] = instance
    }

    /// The events of entry changes (see ``setEntries(_:moving:)``). Called with the lock held, before the
    /// entries change (a removed name's node is looked up here).
    func emitEvents(of changes: [(parent: Int, name: String, node: Int?)], moving: Bool) {
        guard !eventInstances.isEmpty else { return }
        for (index, change) in changes.enumerated() {
            let previous = nodes[change.parent]?.entries[change.name]
            let subject = change.node ?? previous
            let isDirectory = subject.flatMap { nodes[$0]?.kind } == .directory
            var kind: Inotify.Event.Kind
            if moving {
                kind = index == 0 ? .movedFrom : .movedTo
            } else {
                kind = change.node == nil ? .deleted : .created
            }
            if isDirectory { kind.insert(.isDirectory) }
            emit(kind, named: change.name, in: change.parent)
            if moving, index == 0, let moved = previous, nodes[moved]?.kind == .directory {
                emitWatchEnded(of: moved, deleted: false)
            }
            // A directory replaced by a rename is deleted.
            if moving, index == 1, let replaced = previous, replaced != change.node, nodes[replaced]?.kind == .directory
            {
                emitWatchEnded(of: replaced, deleted: true)
            }
        }
    }
}

/// ``InMemoryFileSystem``'s inotify as a ``FileEventSource``: instances and watches as the kernel keeps them
/// (`inotify_add_watch` follows links, refuses what is not a directory, gives a directory's watch again).
struct InMemoryFileEvents: FileEventSource {
    let fileSystem: InMemoryFileSystem

    func open() -> Result<Int32, SystemError> {
        fileSystem.condition.lock()
        defer { fileSystem.condition.unlock() }
        let descriptor = fileSystem.nextDescriptor
        fileSystem.nextDescriptor += 1
        fileSystem.eventInstances[descriptor] = InMemoryFileSystem.EventInstance()
        return .success(descriptor)
    }

    func close(_ instance: Int32) {
        fileSystem.close(instance)
    }

    func addWatch(_ instance: Int32, directory path: String) -> Result<Int32, SystemError> {
        do throws(SystemError) {
            return .success(
                try fileSystem.locked { () throws(SystemError) -> Int32 in
                    guard var entry = fileSystem.eventInstances[instance] else {
                        throw SystemError(errno: EBADF, operation: "inotify_add_watch")
                    }
                    guard let node = try fileSystem.resolve(path, followingLast: true).node else {
                        throw SystemError(errno: ENOENT, operation: "inotify_add_watch")
                    }
                    guard fileSystem.nodes[node]?.kind == .directory else {
                        throw SystemError(errno: ENOTDIR, operation: "inotify_add_watch")
                    }
                    if let existing = entry.watches.first(where: { $0.value == node })?.key { return existing }
                    let watch = entry.nextWatch
                    entry.nextWatch += 1
                    entry.watches[watch] = node
                    fileSystem.eventInstances[instance] = entry
                    return watch
                })
        } catch {
            return .failure(error)
        }
    }

    func removeWatch(_ instance: Int32, _ watch: Int32) {
        fileSystem.condition.lock()
        defer { fileSystem.condition.unlock() }
        fileSystem.eventInstances[instance]?.watches.removeValue(forKey: watch)
    }

    func readEvents(_ instance: Int32, _ body: (Inotify.Event) -> Void) {
        // Taken under the lock, handed out after it (`body` is the watcher's code, which calls the file system).
        let events = fileSystem.withLockHeld { () -> [Inotify.Event] in
            guard var entry = fileSystem.eventInstances[instance] else { return [] }
            defer {
                entry.queue = []
                entry.overflowed = false
                fileSystem.eventInstances[instance] = entry
            }
            return entry.queue
        }
        for event in events { body(event) }
    }
}

extension InMemoryFileSystem {
    /// Runs `body` with the lock held.
    func withLockHeld<Result>(_ body: () -> Result) -> Result {
        condition.lock()
        defer { condition.unlock() }
        return body()
    }
}
