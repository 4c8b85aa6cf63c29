package import Foundation
package import LiveDefaults

// What a test does to an in-memory file system: place files as another program would, lose power.
extension InMemoryFileSystem {
    /// Writes `data` at `path` as a program that is not LiveDefaults would (`path`'s directories made, the
    /// file replaced in place or created), flushed; nil `data` removes it.
    package func place(_ data: Data?, at path: String) throws(SystemError) {
        let directory = (path as NSString).deletingLastPathComponent
        try createDirectories(directory, permissions: 0o755)
        guard let data else {
            try unlink(path)
            return
        }
        let descriptor = try open(path, [.writeOnly, .create], permissions: 0o644)
        defer { close(descriptor) }
        try locked { () throws(SystemError) in
            let id = try openFile(descriptor).node
            nodes[id]?.data = data
            nodes[id]?.durableData = data
            nodes[id]?.modified = tick()
        }
        try synchronize(descriptor, dataOnly: false)
        flushDirectory(directory)
    }

    /// Makes `path` a symbolic link to `target` (its directories made), flushed.
    package func link(_ path: String, to target: String) throws(SystemError) {
        let directory = (path as NSString).deletingLastPathComponent
        try createDirectories(directory, permissions: 0o755)
        try locked { () throws(SystemError) in
            let resolved = try resolve(path, followingLast: false)
            if resolved.node != nil { throw SystemError(errno: EEXIST, operation: "symlink") }
            let id = makeNode(.symbolicLink)
            nodes[id]?.target = target
            setEntries([(resolved.parent, resolved.name, id)])
        }
        flushDirectory(directory)
    }

    /// A file system holding what this one holds now (flushed and not), with no descriptor open: a test prepares
    /// files once and runs each case on a copy.
    package func copy() -> InMemoryFileSystem {
        condition.lock()
        defer { condition.unlock() }
        return InMemoryFileSystem(nodes: nodes, nextNode: nextNode, clock: clock)
    }

    /// The bytes of the file at `path` (following links), nil when there is none.
    package func contents(atPath path: String) -> Data? {
        try? read(atPath: path)?.data
    }

    /// The names in the directory at `path`, sorted; empty when there is none.
    package func names(in path: String) -> [String] {
        namesInDirectory(path).sorted()
    }

    /// How many descriptors are open: a test that ends with stores dropped and nothing running expects none
    /// left behind.
    package var openDescriptorCount: Int {
        condition.lock()
        defer { condition.unlock() }
        return descriptors.count
    }

    /// The file systems a power loss now could leave (see the type's description): every combination when
    /// there are at most `limit`, else `limit` of them, evenly spaced through the combinations from nothing
    /// unflushed kept to everything kept. Each is a new file system with no descriptor open.
    package func powerLossOutcomes(limit: Int = 4096) -> [InMemoryFileSystem] {
        let plan = powerLoss(limit: limit)
        return (0..<plan.count).map(plan.outcome)
    }

    /// The outcomes of ``powerLossOutcomes(limit:)``, made one at a time: a power loss that keeps one of them builds
    /// only that one.
    package func powerLoss(limit: Int = 4096) -> PowerLoss {
        condition.lock()
        let (nodes, nextNode, clock) = (self.nodes, self.nextNode, self.clock)
        condition.unlock()
        return PowerLoss(nodes: nodes, nextNode: nextNode, clock: clock, limit: limit)
    }

    /// What a power loss may keep of one file system: its outcomes, counted, and each made on demand.
    package struct PowerLoss {
        private let nodes: [Int: Node]
        private let nextNode: Int
        private let clock: Int
        private let directories: [Int]
        private let files: [Int]
        /// The choices of the outcomes given (one digit per unflushed thing), in order.
        private let choices: [[Int]]

        /// How many outcomes there are (within the limit).
        package var count: Int { choices.count }

        fileprivate init(nodes: [Int: Node], nextNode: Int, clock: Int, limit: Int) {
            (self.nodes, self.nextNode, self.clock) = (nodes, nextNode, clock)
            // One choice per unflushed thing: a directory keeps 0...n of its changes, a file its flushed or its
            // latest data.
            directories = nodes.keys.sorted().filter { !(nodes[$0]?.unflushed.isEmpty ?? true) }
            files = nodes.keys.sorted().filter {
                nodes[$0].map { $0.kind == .file && $0.data != $0.durableData } ?? false
            }
            let radices = directories.map { nodes[$0]!.unflushed.count + 1 } + files.map { _ in 2 }
            var total = 1
            for radix in radices {
                let (product, overflow) = total.multipliedReportingOverflow(by: radix)
                total = overflow ? Int.max : product
            }
            func digits(_ number: Int) -> [Int] {
                var rest = number
                return radices.map { radix in
                    defer { rest /= radix }
                    return rest % radix
                }
            }
            if total <= limit || limit < 3 {
                choices = (0..<min(total, max(limit, 0))).map(digits)
            } else {
                // Evenly spaced through the combinations, so the same on every run: the first keeps nothing
                // unflushed, the last keeps everything.
                let step = total / (limit - 1)
                choices = (0..<(limit - 1)).map { digits($0 * step) } + [radices.map { $0 - 1 }]
            }
        }

        /// The outcome at `index` (below ``count``).
        package func outcome(_ index: Int) -> InMemoryFileSystem {
            let choice = choices[index]
            var crashed = nodes
            for (index, id) in directories.enumerated() {
                var node = crashed[id]!
                var entries = node.durableEntries
                for change in node.unflushed.prefix(choice[index]) {
                    for (name, target) in change {
                        if let target { entries[name] = target } else { entries.removeValue(forKey: name) }
                    }
                }
                node.entries = entries
                node.durableEntries = entries
                node.unflushed = []
                crashed[id] = node
            }
            for (offset, id) in files.enumerated() {
                var node = crashed[id]!
                if choice[directories.count + offset] == 0 { node.data = node.durableData }
                node.durableData = node.data
                crashed[id] = node
            }
            return InMemoryFileSystem(nodes: crashed, nextNode: nextNode, clock: clock + 1)
        }
    }

    /// How many outcomes ``powerLossOutcomes(limit:)`` has in all (before its limit).
    package var powerLossOutcomeCount: Int {
        condition.lock()
        defer { condition.unlock() }
        var total = 1
        for node in nodes.values {
            var radix = node.unflushed.count + 1
            if node.kind == .file && node.data != node.durableData { radix *= 2 }
            let (product, overflow) = total.multipliedReportingOverflow(by: radix)
            total = overflow ? Int.max : product
        }
        return total
    }
}
