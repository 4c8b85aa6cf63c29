public import Foundation
import LiveDefaults

/// How a program that is not LiveDefaults writes a file (``SimulatedMachine/write(_:to:as:)``).
public enum OtherWriter: Sendable, Hashable, CaseIterable {
    /// An editor's save: the new contents into a temporary beside the file, flushed (`fsync`, as vim does), renamed
    /// over it.
    case editor
    /// The file removed, created again empty, then written (`install`, `git checkout`, a script's `rm` and `cat >`).
    case unlinkAndCreate
    /// Rewritten in place: truncated, then written in two halves (a reader between them sees a torn file).
    case inPlace
    /// Foundation's write on Linux: opened, truncated and written in place, in one write.
    case foundation
}

/// One step of another writer: a file-system operation or a few, taken at once.
struct OtherWriterStep: Sendable, CustomStringConvertible {
    let description: String
    let run: @Sendable (InMemoryFileSystem) -> Void
    /// Whether the write is done after this step (its version in place, or its file gone).
    var lands = false
}

extension SimulatedMachine {
    /// Writes `data` at `path` as `writer` would (the file's directories made first), or removes the file (nil):
    /// the steps wait for the machine's next ``settle()``, and may land between two file-system calls of a process.
    public func write(_ data: Data?, to path: String, as writer: OtherWriter = .editor) {
        let directory = (path as NSString).deletingLastPathComponent
        var steps = [
            OtherWriterStep(description: "other writer: mkdir -p \(directory)") { fileSystem in
                try? fileSystem.createDirectories(directory, permissions: 0o755)
            }
        ]
        defer {
            steps[steps.count - 1].lands = true
            submit(steps)
        }
        guard let data else {
            steps.append(OtherWriterStep(description: "other writer: unlink \(path)") { try? $0.unlink(path) })
            return
        }
        switch writer {
        case .editor:
            let temporary = "\(directory)/.\((path as NSString).lastPathComponent).swp"
            steps.append(
                OtherWriterStep(description: "editor: write \(temporary)") { fileSystem in
                    fileSystem.writeWhole(data, at: temporary, truncating: true, flushing: true)
                })
            steps.append(
                OtherWriterStep(description: "editor: rename \(temporary) \(path)") { fileSystem in
                    try? fileSystem.rename(temporary, to: path)
                })
        case .unlinkAndCreate:
            steps.append(OtherWriterStep(description: "script: unlink \(path)") { try? $0.unlink(path) })
            steps.append(
                OtherWriterStep(description: "script: create \(path) empty") { fileSystem in
                    fileSystem.writeWhole(Data(), at: path, truncating: true)
                })
            steps.append(
                OtherWriterStep(description: "script: write \(path)") { fileSystem in
                    fileSystem.writeWhole(data, at: path, truncating: true)
                })
        case .inPlace:
            let half = data.count / 2
            let first = data.prefix(half)
            let rest = data.dropFirst(half)
            let descriptor = Lock<Int32?>(nil)
            steps.append(
                OtherWriterStep(description: "in place: truncate \(path), write \(half) bytes") { fileSystem in
                    let opened = try? fileSystem.open(path, [.writeOnly, .create], permissions: 0o644)
                    descriptor.withLock { $0 = opened }
                    guard let opened else { return }
                    fileSystem.truncate(opened)
                    _ = first.withUnsafeBytes { try? fileSystem.write(opened, from: $0) }
                })
            steps.append(
                OtherWriterStep(description: "in place: write \(rest.count) bytes, close \(path)") { fileSystem in
                    guard let opened = descriptor.withLock({ $0 }) else { return }
                    _ = Data(rest).withUnsafeBytes { try? fileSystem.write(opened, from: $0) }
                    fileSystem.close(opened)
                })
        case .foundation:
            steps.append(
                OtherWriterStep(description: "Foundation: rewrite \(path) in place") { fileSystem in
                    fileSystem.writeWhole(data, at: path, truncating: true)
                })
        }
    }

    /// Swaps the files of a mounted Kubernetes volume at `directory` as the kubelet does: the new files in a
    /// timestamped directory, `..data_tmp` linked to it and renamed over `..data`, each file's name a link into
    /// `..data` (made the first time), the old directory removed.
    public func swapVolume(at directory: String, files: [String: Data]) {
        let stamp = "..\(scheduler.elapsed.traceTime)"
        let names = files.keys.sorted()
        var steps = [
            OtherWriterStep(description: "kubelet: write \(directory)/\(stamp)") { fileSystem in
                try? fileSystem.createDirectories("\(directory)/\(stamp)", permissions: 0o755)
                for name in names {
                    fileSystem.writeWhole(files[name] ?? Data(), at: "\(directory)/\(stamp)/\(name)", truncating: true)
                }
            },
            OtherWriterStep(description: "kubelet: swap \(directory)/..data to \(stamp)") { fileSystem in
                let old = fileSystem.linkTarget(atPath: "\(directory)/..data")
                try? fileSystem.link("\(directory)/..data_tmp", to: stamp)
                try? fileSystem.rename("\(directory)/..data_tmp", to: "\(directory)/..data")
                for name in names where fileSystem.linkTarget(atPath: "\(directory)/\(name)") == nil {
                    try? fileSystem.link("\(directory)/\(name)", to: "..data/\(name)")
                }
                if let old { fileSystem.removeTree("\(directory)/\(old)") }
            },
        ]
        steps[1].lands = true  // the swap
        submit(steps)
    }

    /// The bytes of the file at `path` now (following links), nil when there is none.
    public func contents(atPath path: String) -> Data? {
        fileSystem.contents(atPath: path)
    }

    /// The names in the directory at `path` now, sorted.
    public func names(in path: String) -> [String] {
        fileSystem.names(in: path)
    }
}

extension InMemoryFileSystem {
    /// Opens `path` for writing (created when missing), truncates it when asked, writes `data`, flushes it when asked, closes it: the
    /// close is a close-after-write.
    func writeWhole(_ data: Data, at path: String, truncating: Bool, flushing: Bool = false) {
        guard let descriptor = try? open(path, [.writeOnly, .create], permissions: 0o644) else { return }
        if truncating { truncate(descriptor) }
        _ = data.withUnsafeBytes { try? write(descriptor, from: $0) }
        if flushing { try? synchronize(descriptor, dataOnly: true) }
        close(descriptor)
    }

    /// `ftruncate(descriptor, 0)`.
    func truncate(_ descriptor: Int32) {
        withLockHeld {
            guard let open = descriptors[descriptor] else { return }
            nodes[open.node]?.data = Data()
            nodes[open.node]?.modified = tick()
        }
    }

    /// The target of the link at `path`, nil when it is not a link.
    func linkTarget(atPath path: String) -> String? {
        withLockHeld {
            guard let resolved = try? resolve(path, followingLast: false), let id = resolved.node,
                let node = nodes[id], node.kind == .symbolicLink
            else { return nil }
            return node.target
        }
    }

    /// Removes the directory at `path` and everything in it (names only: `rm -r`).
    func removeTree(_ path: String) {
        withLockHeld {
            guard let resolved = try? resolve(path, followingLast: false), resolved.node != nil else { return }
            setEntries([(resolved.parent, resolved.name, nil)])
        }
    }
}
