/// The symbolic links a path goes through, and what it resolves to now.
///
/// A Kubernetes ConfigMap or Secret volume never changes a file in place: every file is a link
/// `name -> ..data/name`, `..data` is a link to a timestamped directory, and an update renames a new `..data`
/// link over the old one. No event ever names the file, so a watcher must watch every link on the way (and
/// the file the path resolves to), and work the chain out again whenever one of them changes.
///
/// ```swift
/// let chain = SymlinkChain.resolve("/etc/config/com.example.api.plist")
/// // chain.links: ["/etc/config/com.example.api.plist", "/etc/config/..data"]
/// // chain.target: "/etc/config/..2026_11_24_19_00_01.1001/com.example.api.plist"
/// ```
package struct SymlinkChain: Sendable, Hashable {
    /// Every symbolic link met on the way, in the order met, each as an absolute path with no link before
    /// its last component (so its directory is a real one, which a watch can follow).
    package var links: [String]
    /// The path the chain ends at, with no link in it; it may not exist.
    package var target: String
    /// Why the chain could not be followed to its end, if it could not (a loop, a link that cannot be read).
    package var problem: String?
    /// The error that stopped the walk, when a link could not be looked at or read (not a loop): a writer then
    /// fails rather than replace a link it could not follow.
    var failedErrno: Int32? = nil

    /// Whether the path and every directory on its way are plain (no link anywhere).
    package var isPlain: Bool { links.isEmpty }

    /// The most links followed before giving up, as the kernel does (`ELOOP` after 40).
    static let maximumLinks = 40

    /// ``resolve(_:)`` on a store's file system.
    static func resolve(_ path: String, on fileSystem: any DefaultsFileSystem) -> SymlinkChain {
        guard path.hasPrefix("/") else { return SymlinkChain(links: [], target: path, problem: nil) }
        var resolved: [Substring] = []
        // Components still to walk, the next one last.
        var pending = Array(path.split(separator: "/", omittingEmptySubsequences: true).reversed())
        var links: [String] = []
        var problem: String?
        var failedErrno: Int32?
        func absolute(_ components: [Substring]) -> String { "/" + components.joined(separator: "/") }
        while let component = pending.popLast() {
            if component == "." { continue }
            if component == ".." {
                _ = resolved.popLast()
                continue
            }
            let candidate = absolute(resolved + [component])
            let isLink: Bool
            do throws(SystemError) {
                isLink = problem == nil ? try fileSystem.checkedIsSymbolicLink(candidate) : false
            } catch {
                problem = "cannot look at \(candidate): \(systemErrorText(error.errno))"
                failedErrno = error.errno
                isLink = false
            }
            guard isLink else {
                resolved.append(component)
                continue
            }
            guard links.count < maximumLinks else {
                problem = "more than \(maximumLinks) symbolic links (a loop?) at \(candidate)"
                resolved.append(component)
                continue
            }
            let destination: String
            do throws(SystemError) { destination = try fileSystem.readLink(candidate) } catch {
                problem = "cannot read the symbolic link \(candidate): \(systemErrorText(error.errno))"
                failedErrno = error.errno
                resolved.append(component)
                continue
            }
            links.append(candidate)
            if destination.hasPrefix("/") { resolved.removeAll() }
            pending += destination.split(separator: "/", omittingEmptySubsequences: true).reversed()
        }
        return SymlinkChain(links: links, target: absolute(resolved), problem: problem, failedErrno: failedErrno)
    }
}
