import Foundation

/// The temporary changes of one domain file still to be undone (Docs/OnDisk.md, "Pending reverts"):
/// `.<d>.plist.reverts` beside the domain's file, an XML property list that only writers holding the domain's
/// file lock replace (temporary file, flush, rename), so that a reader sees the list before or after a change,
/// never half of one.
///
/// A temporary change writes its entry before its version (``DomainWrite``); a revert writes its version before
/// it drops the entry (``DomainFile/applyExpiredReverts()``). So a crash, a power loss or a failed write between
/// the two never loses a revert, and a revert applied twice writes nothing the second time: it changes only keys
/// that still hold the value the change set.
struct PendingReverts: Sendable, Equatable {
    /// One temporary change: what it set, what was there before, and when it ends.
    struct Entry: Sendable, Equatable {
        /// The version the change wrote (its digest, as the change log names it).
        var version: UInt64
        /// When the change was made and when it is undone (wall-clock time).
        var made: Date
        var expiry: Date
        /// Why the change was made, as recorded with it.
        var reason: String?
        /// Each key the change changed: its value before (nil: absent) and the value it set (nil: removed).
        var keys: [String: Change]

        struct Change: Sendable, Equatable {
            var before: PropertyList?
            var set: PropertyList?
        }
    }

    /// The entries, in the order they were made.
    var entries: [Entry] = []

    /// The file of `domainFile`'s pending reverts.
    static func path(forDomainFile path: String) -> String {
        "\(PathComponents.directory(of: path))/.\(PathComponents.name(of: path)).reverts"
    }

    /// The largest file read: a list of temporary changes is small; a larger file is not one (reported, left as
    /// it is).
    static let maximumSize = 8 << 20

    /// Why a file of pending reverts cannot be used.
    struct Unreadable: Error, Equatable {
        var reason: String
        /// Whether a system call failed (an I/O error, no memory): reading it again later may work, where a file
        /// that is not a list of pending reverts stays so until someone replaces it.
        var mayPass = false
    }

    /// The pending reverts of `domainFile`: none when the file is absent.
    static func read(domainFile path: String, on fileSystem: any DefaultsFileSystem) -> Result<Self, Unreadable> {
        let file: SmallFile
        do throws(SystemError) {
            file = try fileSystem.readSmallFile(atPath: Self.path(forDomainFile: path), maximumBytes: maximumSize)
        } catch {
            return .failure(Unreadable(reason: error.message, mayPass: true))
        }
        switch file {
        case .absent: return .success(Self())
        case .notRegular: return .failure(Unreadable(reason: "not a regular file"))
        case .tooLarge(let size): return .failure(Unreadable(reason: "\(size) bytes, more than \(maximumSize)"))
        case .contents(let data): return decode(data)
        }
    }

    /// Replaces the file with `self` (removes it when no entry is left). The caller holds the domain's file lock.
    func write(
        domainFile path: String, on fileSystem: any DefaultsFileSystem, owner: (UserID, GroupID)?, pid: Int32
    ) throws(SystemError) {
        let file = Self.path(forDomainFile: path)
        guard !entries.isEmpty else {
            do throws(SystemError) { try fileSystem.remove(file, flush: true) } catch  where error.isNoSuchFile {}
            return
        }
        let data: Data
        do throws(PropertyListError) { data = try encoded() } catch {
            throw SystemError.invalid("encode the pending reverts (\(error))")
        }
        // Flushed: the entry must be on the disk before the version it undoes can be.
        _ = try fileSystem.replaceAtomically(file, with: data, owner: owner, flush: true, pid: pid)
    }

    // MARK: The format

    /// The file's bytes: `{Format = 1; Reverts = ({Version, Made, Expires, Reason?, Keys = {key: {Before?,
    /// Set?}}}, …)}` as a binary property list, which holds every value a domain file may hold (XML cannot hold a
    /// date past the year 9999).
    func encoded() throws(PropertyListError) -> Data {
        let list = entries.map { entry -> PropertyList in
            var fields: [String: PropertyList] = [
                "Version": .string(FileVersion.hex(entry.version)), "Made": .date(entry.made),
                "Expires": .date(entry.expiry),
                "Keys": .dictionary(
                    entry.keys.mapValues { change in
                        var values: [String: PropertyList] = [:]
                        values["Before"] = change.before
                        values["Set"] = change.set
                        return .dictionary(values)
                    }),
            ]
            fields["Reason"] = entry.reason.map(PropertyList.string)
            return .dictionary(fields)
        }
        return try PropertyList.dictionary(["Format": .integer(1), "Reverts": .array(list)]).encoded(as: .binary)
    }

    /// The pending reverts `data` holds (any format the domain files are read in), or why it holds none.
    static func decode(_ data: Data) -> Result<Self, Unreadable> {
        let document: PropertyList
        do throws(PropertyListError) { document = try PropertyList.decode(data).value } catch {
            return .failure(Unreadable(reason: "\(error)"))
        }
        guard case .dictionary(let fields) = document, fields["Format"] == .integer(1),
            case .array(let list)? = fields["Reverts"]
        else { return .failure(Unreadable(reason: "not a list of pending reverts (Format 1)")) }
        var reverts = Self()
        for item in list {
            guard let entry = Entry(item) else {
                return .failure(Unreadable(reason: "an entry without its version, times or keys"))
            }
            reverts.entries.append(entry)
        }
        return .success(reverts)
    }
}

extension PendingReverts.Entry {
    /// An entry as ``PendingReverts/encoded()`` writes it; nil for anything else.
    fileprivate init?(_ item: PropertyList) {
        guard case .dictionary(let fields) = item, case .string(let hex)? = fields["Version"],
            let version = FileVersion.number(hex: hex), case .date(let made)? = fields["Made"],
            case .date(let expiry)? = fields["Expires"], case .dictionary(let keys)? = fields["Keys"]
        else { return nil }
        var changes: [String: Change] = [:]
        for (key, value) in keys {
            guard case .dictionary(let values) = value else { return nil }
            changes[key] = Change(before: values["Before"], set: values["Set"])
        }
        let reason: String?
        switch fields["Reason"] {
        case .string(let text)?: reason = text
        case nil: reason = nil
        default: return nil
        }
        self.init(version: version, made: made, expiry: expiry, reason: reason, keys: changes)
    }
}

/// A transaction made temporary (``Defaults/transaction(for:inDomain:layer:reason:_:)``): what its write needs to
/// record its revert.
struct TemporaryChange: Sendable {
    /// When its keys return to their values before it.
    var expiry: Date
    var reason: String?
    /// The keys the transaction writes: this process's earlier edits, written in the same version, stay.
    var keys: Set<String>
    /// Those earlier edits: a key's value before the change is the file's with them on top.
    var earlier = DomainEdits()
}
