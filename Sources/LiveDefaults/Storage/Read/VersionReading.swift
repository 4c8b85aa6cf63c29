import Foundation

/// Reading a domain file: one read (``readOnce(_:on:knownCorrupt:emptyMayBeInProgress:indexing:previous:)``),
/// reads a few milliseconds apart while the file may be mid-write
/// (``readContents(_:on:knownCorrupt:clock:indexing:previous:)``), and what they find. Used by a reload and by
/// the write pipeline's look at the current version (``CurrentVersion``): a step of its own, which knows nothing of
/// the ``DomainFile`` that holds a version.
enum VersionReading {
    /// How long a writer waits, without the file lock, for a file that another program may be rewriting in
    /// place (Foundation truncates, then writes, without a lock) before it calls the file corrupt.
    static let settleAttempts = 5
    /// The pause between two reads of a file that may be mid-write, on the file's clock.
    static let settlePause: Duration = .milliseconds(4)

    /// A version of a domain file as read: what it holds, in which format, and which version it is.
    struct Loaded {
        enum Contents {
            /// The file parsed whole.
            case whole([String: PropertyList])
            /// Only the entries that changed since the version the caller's index describes.
            case changed(XMLDictionaryIndex.Reread)
        }
        var contents: Contents
        var format: PropertyList.Format
        var version: FileVersion
        /// The index of a large XML file read whole (``readOnce(_:knownCorrupt:emptyMayBeInProgress:indexing:previous:)``
        /// with `indexing`); a changed-entries read carries its own.
        var wholeIndex: XMLDictionaryIndex? = nil

        /// The new version's index (large XML files), for reading the next one.
        var index: XMLDictionaryIndex? {
            switch contents {
            case .whole: wholeIndex
            case .changed(let reread): reread.index
            }
        }
    }

    /// The version a reload starts from, when it can read only what changed: its index, and whether it holds
    /// a key (its contents are in `state.disk`).
    struct Previous {
        var index: XMLDictionaryIndex
        var isKey: (String) -> Bool
    }

    struct LoadFailure: Error {
        var error: DefaultsError
        var stamp: FileStamp?
    }

    /// What reading a domain file found: its version (nil when it does not exist), or why it could not be read.
    ///
    /// Not `Result<Loaded?, LoadFailure>`: a generic type over our own types is instantiated by the runtime
    /// on first use, and `Result`'s `Failure: Error` requirement made that a scan of every protocol conformance
    /// the process has loaded, on a fresh process's first open.
    enum ReadResult {
        case success(Loaded?)
        case failure(LoadFailure)
    }

    /// Reads and parses a domain file; nil when it does not exist.
    ///
    /// Foundation.UserDefaults rewrites files in place (truncate, then write) without a lock, so an empty or
    /// unparseable file may be a write in progress rather than a corrupt one: it is read again a few times,
    /// a few milliseconds apart, before it is declared corrupt. A version already known to be corrupt
    /// (`knownCorrupt`) is not waited for again.
    static func readContents(
        _ path: String, on fileSystem: any DefaultsFileSystem, knownCorrupt: FileStamp?,
        clock: any DefaultsClock = SystemDefaultsClock.shared,
        indexing: Bool = false, previous: Previous? = nil
    ) -> ReadResult {
        var lastFailure = LoadFailure(error: .corruptFile(path: path, .unrecognizedFormat, keptAs: nil), stamp: nil)
        for attempt in 0..<settleAttempts {
            if attempt > 0 { clock.pause(for: settlePause) }
            switch readOnce(
                path, on: fileSystem, knownCorrupt: knownCorrupt, emptyMayBeInProgress: attempt < 2, indexing: indexing,
                previous: previous
            ) {
            case .done(let result): return result
            case .unsettled(let failure): lastFailure = failure
            }
        }
        return .failure(lastFailure)
    }

    /// What one read of a domain file tells.
    enum ReadAttempt {
        /// The answer: the contents, no file, or a failure that waiting cannot change.
        case done(ReadResult)
        /// Unreadable (or empty) in a way that a writer in progress explains: read again after a pause.
        case unsettled(LoadFailure)
    }

    /// Reads and parses a domain file once. An empty file is an empty domain unless `emptyMayBeInProgress`.
    /// With a `previous` version's index, a large XML file is read as the entries that changed when it can be;
    /// with `indexing`, a large XML file read whole is indexed for the next read.
    static func readOnce(
        _ path: String, on fileSystem: any DefaultsFileSystem, knownCorrupt: FileStamp?, emptyMayBeInProgress: Bool,
        indexing: Bool = false,
        previous: Previous? = nil
    ) -> ReadAttempt {
        let read: FileContents?
        do throws(SystemError) {
            read = try fileSystem.read(atPath: path)
        } catch {
            return .done(
                .failure(
                    LoadFailure(error: .readFailed(path: path, errno: error.errno, message: error.message), stamp: nil))
            )
        }
        guard let read else { return .done(.success(nil)) }
        let (data, stamp) = (read.data, read.stamp)
        if data.isEmpty {
            // A truncating writer may be about to fill it; an empty file that stays empty is an empty domain.
            if emptyMayBeInProgress {
                return .unsettled(
                    LoadFailure(error: .corruptFile(path: path, .unrecognizedFormat, keptAs: nil), stamp: stamp))
            }
            return .done(
                .success(Loaded(contents: .whole([:]), format: .xml, version: FileVersion(stamp: stamp, bytes: data))))
        }
        if let previous, let reread = previous.index.reread(data, isKey: previous.isKey) {
            return .done(
                .success(
                    Loaded(contents: .changed(reread), format: .xml, version: FileVersion(stamp: stamp, bytes: data))))
        }
        let failure: LoadFailure
        do throws(PropertyListError) {
            let (value, format, index) = try PropertyList.decode(data, indexing: indexing)
            if case .dictionary(let contents) = value {
                return .done(
                    .success(
                        Loaded(
                            contents: .whole(contents), format: format, version: FileVersion(stamp: stamp, bytes: data),
                            wholeIndex: index)))
            }
            failure = LoadFailure(error: .notADictionary(path: path, found: value.typeName), stamp: stamp)
        } catch {
            failure = LoadFailure(error: .corruptFile(path: path, error, keptAs: nil), stamp: stamp)
        }
        // A version already known to be corrupt is not waited for again.
        return failure.stamp == knownCorrupt ? .done(.failure(failure)) : .unsettled(failure)
    }
}
