import Foundation
package import LiveDefaults

/// A file system in memory, for tests that check the library's own logic without the disk: stores configured
/// with it (``LiveDefaults/Defaults/Configuration/fileSystem``) read, write, lock and rename here, exactly as
/// they would on the system's (the same calls, the same errno values).
///
/// It also keeps what a power loss would keep. A file's data is durable once `fdatasync`ed; a directory's
/// entries once the directory is `fsync`ed. ``powerLossOutcomes(limit:)`` gives every state a power loss could
/// leave under this model: each directory keeps its entries as last flushed plus any prefix of the changes
/// made since (a journal replays in order; a rename is one change), and each file keeps either its flushed
/// data or its latest. It is stricter than ext4 in `data=ordered` mode, which also flushes a file renamed
/// over another (`auto_da_alloc`): a writer proven here does not lean on that.
///
/// ```swift
/// let fileSystem = InMemoryFileSystem()
/// var configuration = Defaults.Configuration.rooted(at: "/home/u/.config", applicationDomain: "com.example.app")
/// configuration.fileSystem = fileSystem
/// let defaults = try Defaults(configuration: configuration)
/// defaults.set(1, forKey: "A")
/// defaults.synchronize()
/// for outcome in fileSystem.powerLossOutcomes() { … }   // each a file system after a power loss
/// ```
///
/// A store on it does not watch (nothing tells it of another writer's change): it reads its files again on
/// ``LiveDefaults/Defaults/synchronize()``. Paths are absolute; a relative one is taken from `/`.
package final class InMemoryFileSystem: DefaultsFileSystem, @unchecked Sendable {
    // @unchecked: every stored property is read and written only with `condition` locked (here and in
    // InMemoryFileSystem+Testing.swift, which reach them from an extension: internal, not private).

    struct Node {
        enum Kind { case file, directory, symbolicLink }
        var kind: Kind
        var data = Data()
        /// What a power loss keeps for sure: the data as last flushed.
        var durableData = Data()
        var entries: [String: Int] = [:]
        /// The entries as last flushed, and the changes made since (each a rename, a creation or a removal: one
        /// or two names and the node each now names, nil when removed).
        var durableEntries: [String: Int] = [:]
        var unflushed: [[(String, Int?)]] = []
        var target = ""
        var user: UInt32 = 0
        var group: UInt32 = 0
        var modified = 0
    }

    struct OpenFile {
        var node: Int
        var offset: Int64 = 0
        var options: FileOpenOptions
        /// The directory and name it was opened by: where its close-after-write is reported.
        var parent: Int
        var name: String
    }

    let condition = NSCondition()
    var nodes: [Int: Node] = [:]
    var nextNode = 2
    var descriptors: [Int32: OpenFile] = [:]
    var nextDescriptor: Int32 = 3
    /// The descriptor holding each node's `flock`.
    var locks: [Int: Int32] = [:]
    var clock = 0
    /// The file-system types `statfs` reports, by mount point (``mount(type:at:)``).
    var mounts: [String: UInt] = [:]
    /// The inotify instances made on this file system, by descriptor (InMemoryFileSystem+Events.swift).
    var eventInstances: [Int32: EventInstance] = [:]
    static let root = 1
    /// As many links as the kernel follows before `ELOOP`.
    static let maximumLinks = 40

    /// An empty file system: `/` and nothing else.
    package init() {
        nodes[Self.root] = Node(kind: .directory)
    }

    init(nodes: [Int: Node], nextNode: Int, clock: Int) {
        self.nodes = nodes
        self.nextNode = nextNode
        self.clock = clock
    }

    func locked<Result>(_ body: () throws(SystemError) -> Result) throws(SystemError) -> Result {
        condition.lock()
        defer { condition.unlock() }
        return try body()
    }

    func tick() -> Int {
        clock += 1
        return clock
    }

    // MARK: Paths

    struct Resolved {
        var parent: Int
        var name: String
        var node: Int?
    }

    func components(_ path: String) -> [String] {
        // Split on the bytes: a path's slashes are single bytes in UTF-8, and walking its characters (grapheme
        // clusters) made this the machine's costliest step.
        path.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: true).map {
            String(decoding: $0, as: UTF8.self)
        }
    }

    /// Walks `path` from `/`, following links on the way (and the last one when `followingLast`).
    func resolve(_ path: String, followingLast: Bool) throws(SystemError) -> Resolved {
        var pending = Array(components(path).reversed())
        var stack = [Self.root]
        var links = 0
        if pending.isEmpty { return Resolved(parent: Self.root, name: ".", node: Self.root) }
        while let component = pending.popLast() {
            let directory = stack[stack.count - 1]
            guard let node = nodes[directory], node.kind == .directory else {
                throw SystemError(errno: ENOTDIR, operation: "resolve")
            }
            if component == "." || component == ".." {
                if component == ".." && stack.count > 1 { stack.removeLast() }
                if pending.isEmpty {
                    let current = stack[stack.count - 1]
                    return Resolved(
                        parent: stack.count > 1 ? stack[stack.count - 2] : Self.root, name: ".", node: current)
                }
                continue
            }
            let child = node.entries[component]
            let isLast = pending.isEmpty
            if let child, let childNode = nodes[child], childNode.kind == .symbolicLink, !isLast || followingLast {
                links += 1
                guard links <= Self.maximumLinks else { throw SystemError(errno: ELOOP, operation: "resolve") }
                if childNode.target.hasPrefix("/") { stack = [Self.root] }
                pending += components(childNode.target).reversed()
                if pending.isEmpty { return Resolved(parent: directory, name: ".", node: stack[stack.count - 1]) }
                continue
            }
            if isLast { return Resolved(parent: directory, name: component, node: child) }
            guard let child else { throw SystemError(errno: ENOENT, operation: "resolve") }
            stack.append(child)
        }
        throw SystemError(errno: ENOENT, operation: "resolve")
    }

    /// Sets `name` in directory `parent` to `node` (nil: removes it), as one change a power loss keeps or not,
    /// with the events the kernel gives for it (`moving`: a rename, the first change its source).
    func setEntries(_ changes: [(parent: Int, name: String, node: Int?)], moving: Bool = false) {
        var byParent: [Int: [(String, Int?)]] = [:]
        emitEvents(of: changes, moving: moving)
        for change in changes {
            if let node = change.node {
                nodes[change.parent]?.entries[change.name] = node
            } else {
                nodes[change.parent]?.entries.removeValue(forKey: change.name)
            }
            byParent[change.parent, default: []].append((change.name, change.node))
            nodes[change.parent]?.modified = tick()
        }
        for (parent, list) in byParent { nodes[parent]?.unflushed.append(list) }
    }

    func makeNode(_ kind: Node.Kind) -> Int {
        let id = nextNode
        nextNode += 1
        nodes[id] = Node(kind: kind, modified: tick())
        return id
    }

    func openFile(_ descriptor: Int32) throws(SystemError) -> OpenFile {
        guard let open = descriptors[descriptor] else { throw SystemError(errno: EBADF, operation: "descriptor") }
        return open
    }

    func status(of id: Int) -> FileStatus {
        let node = nodes[id] ?? Node(kind: .file)
        let kind: FileStatus.Kind =
            switch node.kind {
            case .file: .regular
            case .directory: .directory
            case .symbolicLink: .symbolicLink
            }
        let size: Int =
            switch node.kind {
            case .file: node.data.count
            case .directory: 4096
            case .symbolicLink: node.target.utf8.count
            }
        let stamp = FileStamp(
            device: 1, inode: UInt64(id), size: Int64(size), modifiedSeconds: 1_700_000_000 + node.modified / 1000,
            modifiedNanoseconds: node.modified % 1000)
        return FileStatus(kind: kind, stamp: stamp, user: node.user, group: node.group)
    }

    // MARK: The calls

    package func open(_ path: String, _ options: FileOpenOptions, permissions: UInt32) throws(SystemError) -> Int32 {
        try locked { () throws(SystemError) -> Int32 in
            let resolved = try resolve(path, followingLast: !options.contains(.noFollow))
            let writing = options.contains(.writeOnly) || options.contains(.readWrite)
            let id: Int
            if let existing = resolved.node, let node = nodes[existing] {
                if options.contains(.create) && options.contains(.exclusive) {
                    throw SystemError(errno: EEXIST, operation: "open")
                }
                if node.kind == .symbolicLink { throw SystemError(errno: ELOOP, operation: "open") }
                if options.contains(.directory) && node.kind != .directory {
                    throw SystemError(errno: ENOTDIR, operation: "open")
                }
                if writing && node.kind == .directory { throw SystemError(errno: EISDIR, operation: "open") }
                id = existing
            } else {
                guard options.contains(.create), !options.contains(.directory) else {
                    throw SystemError(errno: ENOENT, operation: "open")
                }
                guard nodes[resolved.parent]?.kind == .directory else {
                    throw SystemError(errno: ENOENT, operation: "open")
                }
                id = makeNode(.file)
                setEntries([(resolved.parent, resolved.name, id)])
            }
            let descriptor = nextDescriptor
            nextDescriptor += 1
            descriptors[descriptor] = OpenFile(
                node: id, options: options, parent: resolved.parent, name: resolved.name)
            return descriptor
        }
    }

    package func close(_ descriptor: Int32) {
        condition.lock()
        defer { condition.unlock() }
        if eventInstances.removeValue(forKey: descriptor) != nil { return }
        guard let open = descriptors.removeValue(forKey: descriptor) else { return }
        if locks[open.node] == descriptor {
            locks.removeValue(forKey: open.node)
            condition.broadcast()
        }
        if open.options.contains(.writeOnly) || open.options.contains(.readWrite), nodes[open.node]?.kind == .file {
            emit(.closedAfterWriting, named: open.name, in: open.parent)
        }
    }

    package func read(_ descriptor: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64?)
        throws(SystemError) -> Int
    {
        try locked { () throws(SystemError) -> Int in
            var open = try openFile(descriptor)
            guard let node = nodes[open.node], node.kind == .file else {
                throw SystemError(errno: EISDIR, operation: "read")
            }
            guard !open.options.contains(.writeOnly) else { throw SystemError(errno: EBADF, operation: "read") }
            let start = Int(clamping: offset ?? open.offset)
            guard start >= 0 else { throw SystemError(errno: EINVAL, operation: "read") }
            let count = max(0, min(buffer.count, node.data.count - start))
            if count > 0 {
                node.data.withUnsafeBytes { bytes in
                    buffer.baseAddress!.copyMemory(from: bytes.baseAddress! + start, byteCount: count)
                }
            }
            if offset == nil {
                open.offset += Int64(count)
                descriptors[descriptor] = open
            }
            return count
        }
    }

    package func write(_ descriptor: Int32, from buffer: UnsafeRawBufferPointer) throws(SystemError) -> Int {
        try locked { () throws(SystemError) -> Int in
            var open = try openFile(descriptor)
            guard open.options.contains(.writeOnly) || open.options.contains(.readWrite),
                var node = nodes[open.node], node.kind == .file
            else { throw SystemError(errno: EBADF, operation: "write") }
            if open.options.contains(.append) { open.offset = Int64(node.data.count) }
            let start = Int(open.offset)
            if start > node.data.count { node.data.append(Data(count: start - node.data.count)) }
            let end = start + buffer.count
            node.data.replaceSubrange(start..<min(end, node.data.count), with: buffer)
            node.modified = tick()
            nodes[open.node] = node
            open.offset = Int64(end)
            descriptors[descriptor] = open
            return buffer.count
        }
    }

    package func status(ofDescriptor descriptor: Int32) throws(SystemError) -> FileStatus {
        try locked { () throws(SystemError) -> FileStatus in status(of: try openFile(descriptor).node) }
    }

    package func status(atPath path: String, followingLinks: Bool) throws(SystemError) -> FileStatus {
        try locked { () throws(SystemError) -> FileStatus in
            guard let id = try resolve(path, followingLast: followingLinks).node else {
                throw SystemError(errno: ENOENT, operation: "stat")
            }
            return status(of: id)
        }
    }

    package func synchronize(_ descriptor: Int32, dataOnly: Bool) throws(SystemError) {
        try locked { () throws(SystemError) in
            let id = try openFile(descriptor).node
            guard var node = nodes[id] else { return }
            switch node.kind {
            case .file: node.durableData = node.data
            case .directory:
                node.durableEntries = node.entries
                node.unflushed = []
            case .symbolicLink: break
            }
            nodes[id] = node
        }
    }

    package func rename(_ source: String, to destination: String) throws(SystemError) {
        try locked { () throws(SystemError) in
            let from = try resolve(source, followingLast: false)
            guard let moved = from.node, from.name != "." else { throw SystemError(errno: ENOENT, operation: "rename") }
            let to = try resolve(destination, followingLast: false)
            if let replaced = to.node, nodes[replaced]?.kind == .directory, nodes[moved]?.kind != .directory {
                throw SystemError(errno: EISDIR, operation: "rename")
            }
            if to.parent == from.parent && to.name == from.name { return }
            setEntries([(from.parent, from.name, nil), (to.parent, to.name, moved)], moving: true)
        }
    }

    package func unlink(_ path: String) throws(SystemError) {
        try locked { () throws(SystemError) in
            let resolved = try resolve(path, followingLast: false)
            guard let id = resolved.node else { throw SystemError(errno: ENOENT, operation: "unlink") }
            if nodes[id]?.kind == .directory { throw SystemError(errno: EISDIR, operation: "unlink") }
            setEntries([(resolved.parent, resolved.name, nil)])
        }
    }

    package func makeDirectory(_ path: String, permissions: UInt32) throws(SystemError) {
        try locked { () throws(SystemError) in
            let resolved = try resolve(path, followingLast: false)
            if resolved.node != nil { throw SystemError(errno: EEXIST, operation: "mkdir") }
            let id = makeNode(.directory)
            setEntries([(resolved.parent, resolved.name, id)])
        }
    }

    package func lock(_ descriptor: Int32, waiting: Bool) throws(SystemError) {
        try locked { () throws(SystemError) in
            let id = try openFile(descriptor).node
            while let holder = locks[id], holder != descriptor {
                guard waiting else { throw SystemError(errno: EWOULDBLOCK, operation: "flock") }
                condition.wait()
                _ = try openFile(descriptor)
            }
            locks[id] = descriptor
        }
    }

    package func readLink(_ path: String, into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> Int {
        try locked { () throws(SystemError) -> Int in
            guard let id = try resolve(path, followingLast: false).node else {
                throw SystemError(errno: ENOENT, operation: "readlink")
            }
            guard let node = nodes[id], node.kind == .symbolicLink else {
                throw SystemError(errno: EINVAL, operation: "readlink")
            }
            let bytes = Array(node.target.utf8.prefix(buffer.count))
            bytes.withUnsafeBytes { buffer.copyMemory(from: $0) }
            return bytes.count
        }
    }

    package func scanDirectory(_ path: String, until stop: (UnsafeRawBufferPointer) -> Bool) throws(SystemError)
        -> Bool
    {
        // The names are taken under the lock and handed out after it (`stop` is the caller's code).
        let names = try locked { () throws(SystemError) -> [String] in
            guard let id = try resolve(path, followingLast: true).node else {
                throw SystemError(errno: ENOENT, operation: "opendir")
            }
            guard let node = nodes[id], node.kind == .directory else {
                throw SystemError(errno: ENOTDIR, operation: "opendir")
            }
            return node.entries.keys.sorted()
        }
        for name in names {
            let found = Array(name.utf8).withUnsafeBytes { stop($0) }
            if found { return true }
        }
        return false
    }

    package func changeOwner(_ descriptor: Int32, user: UInt32, group: UInt32) throws(SystemError) {
        try locked { () throws(SystemError) in
            let id = try openFile(descriptor).node
            nodes[id]?.user = user
            nodes[id]?.group = group
        }
    }

    package func canSearch(_ path: String) -> Bool {
        (try? status(atPath: path, followingLinks: true).kind) == .directory
    }

    /// The type of the mount that holds `path` (``mount(type:at:)``); tmpfs's (`0x01021994`) elsewhere.
    package func fileSystemType(atPath path: String) throws(SystemError) -> UInt {
        _ = try status(atPath: path, followingLinks: true)
        return try locked { () throws(SystemError) in
            let holding = mounts.keys.filter { path == $0 || path.hasPrefix($0 == "/" ? "/" : $0 + "/") }
            return holding.max { $0.count < $1.count }.flatMap { mounts[$0] } ?? 0x0102_1994
        }
    }

    /// Makes `statfs` report `type` for `path` and everything below it: a network file system's mount (NFS's
    /// `0x6969`), which a watcher polls.
    package func mount(type: UInt, at path: String) {
        condition.lock()
        defer { condition.unlock() }
        mounts[path] = type
    }
}
