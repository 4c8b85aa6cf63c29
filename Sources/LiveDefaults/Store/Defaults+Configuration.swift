import Foundation
public import Logging

extension Defaults {
    /// Everything that shapes a store's search list and files, and the pieces it works with: where files
    /// live, the logger, the file watcher, the clock. ``Defaults/standard`` reads it all from the process
    /// (arguments, environment, executable name); tests and tools override what they need.
    ///
    /// ```swift
    /// var configuration = Defaults.Configuration(applicationDomain: "com.example.server")
    /// configuration.logger = logger                       // the application's logger, its level
    /// configuration.watching = .polling(interval: .milliseconds(100))  // a file system inotify cannot see
    /// let defaults = try Defaults(configuration: configuration)
    /// ```
    public struct Configuration: Sendable {
        /// Where the domain files live.
        public var locations: DefaultsLocations
        /// The domain that writes go to and that follows the argument domain in the search list: the
        /// application domain (bundle identifier, else the process name) or a suite name.
        public var applicationDomain: String
        /// Command-line arguments parsed into the argument domain (`-Key value` pairs).
        public var arguments: [String]
        /// Preferred languages, most preferred first; each names a volatile domain in the search list.
        public var languages: [String]
        /// The prefix of the environment variables that set keys, nil for none (the default): with `MYSERVER_`,
        /// `MYSERVER_RATE_LIMIT=200` sets `RateLimit`, and `MYSERVER_API_KEY_FILE=/run/secrets/api_key` sets
        /// `APIKey` to that file's contents, followed live. The variables form a volatile domain,
        /// ``Defaults/environmentDomain``, directly below the argument domain and above every file (values an
        /// administrator forces excepted): a deployment's environment pins a key against `defaults write`.
        /// Names, typing by the published schema and what is reported: Docs/Deployment.md.
        public var environmentPrefix: String?
        /// Directories of one file per key (a Kubernetes ConfigMap or Secret volume, systemd's
        /// `$CREDENTIALS_DIRECTORY`): each regular file is a key, its name the key's, its text the value, typed by
        /// the published schema. They form a volatile domain, ``Defaults/keyFileDomain``, directly below the
        /// application domain's files: a deployment's base that `defaults write` overrides. Followed live: a
        /// ConfigMap's update arrives as one change. Empty (the default) for none. See Docs/Deployment.md.
        public var keyFileDirectories: [String] = []
        /// The environment variables ``environmentPrefix`` selects from: nil (the default) for the process's own,
        /// read when the store opens; a program's tests pass theirs here rather than change the process's
        /// environment.
        public var environmentVariables: [String: String]?
        /// Called for every error that has no caller to throw to: a corrupt file found while loading, a
        /// failed background write. Errors are also logged, at `.info` (they are reported through
        /// ``Defaults/lastError`` and this handler, so the log is not the only place), or at `.notice` for a
        /// file that broke while the store keeps serving its last known good version
        /// (``DefaultsError/keepsLastKnownGood``).
        ///
        /// An error found by a call of yours (a refused `set`) is handled on your thread before the call
        /// returns. One found in the background (another program's broken file, a failed background write)
        /// is kept in ``Defaults/lastError`` at once, then logged and handled on a serial queue of the
        /// store's, in the order found: never on the thread that watches files, so a handler that blocks
        /// delays no change of any domain. ``Defaults/synchronize()`` and ``Defaults/flush()`` return after
        /// the errors found before them were handled (except when called from the handler itself).
        public var errorHandler: (@Sendable (DefaultsError) -> Void)?
        /// What adds the store's validators (``validators``, in the typed layer above) to a new store before it is
        /// returned: the store calls them without knowing the validators' type.
        package var validatorInstallers: [@Sendable (Defaults) -> Void] = []
        /// The validators as given (``validators``), for its getter.
        package var givenValidators: [any Sendable] = []
        /// Where the store logs (label `LiveDefaults` unless you pass your own). Conditions a caller also
        /// hears of through the API are logged at `.info`; a stored value a typed key cannot read, and a file
        /// that broke while the store keeps serving its last known good version, at `.notice`; trouble
        /// watching files (polling instead of inotify), at `.warning`. Nothing is logged at
        /// `.error` or above.
        ///
        /// The default logger is made when first asked for (something is logged), not with the
        /// configuration: swift-log's first `Logger` sets up its logging system, a noticeable part of a fresh
        /// process's first open, and most stores never log. So it also follows a `LoggingSystem.bootstrap`
        /// made after the configuration.
        public var logger: Logger {
            get { givenLogger ?? Logger(label: "LiveDefaults") }
            set { givenLogger = newValue }
        }
        private var givenLogger: Logger?
        /// Watches the store's files for other processes' writes, when ``watching`` is ``Watching/automatic``:
        /// the process's watcher unless a test of this package sets its own (one with a manual clock, a
        /// watch limit). Programs choose with ``watching``.
        ///
        /// The process's watcher is made only when a store that watches asks for it: making it opens inotify
        /// and starts the watcher's thread, which a program that opens its stores with
        /// ``Watching/off`` (the `defaults` command) never needs.
        package var watcher: FileWatcher {
            get { chosenWatcher ?? context.watcher }
            set { chosenWatcher = newValue }
        }
        private var chosenWatcher: FileWatcher?
        /// How the store follows other processes' writes: ``Watching/automatic`` (inotify) unless you choose
        /// polling, or no watching at all for a program that reads once and exits.
        public var watching: Watching = .automatic
        /// The time the store follows: the gathering of its change notifications, the background writer's
        /// waits for its files, the pauses while another program rewrites a file, the timestamp of a kept
        /// corrupt file (see ``DefaultsClock``). The real time unless you pass another clock, such as `ManualDefaultsClock` (in
        /// the `LiveDefaultsTesting` product) in a test. Stores with different clocks keep files of their
        /// own, which meet through the disk (see Docs/Architecture.md). Polling follows the real time.
        public var clock: any DefaultsClock {
            get { chosenClock ?? context.clock }
            set { chosenClock = newValue }
        }
        /// The clock given, if any; else the context's (the real time for the real process).
        private var chosenClock: (any DefaultsClock)?
        /// The file system the store's files live on: the system's unless a test of this package gives another
        /// (`InMemoryFileSystem`, `FaultInjectingFileSystem` in `LiveDefaultsTesting`). Stores on different file
        /// systems never share a file. A store on any file system but the system's does not watch (inotify and
        /// polling look at the system's files): it reads its files again on ``Defaults/synchronize()``.
        package var fileSystem: any DefaultsFileSystem {
            get { chosenFileSystem ?? context.fileSystem }
            set { chosenFileSystem = newValue }
        }
        private var chosenFileSystem: (any DefaultsFileSystem)?
        /// What the process holds once for all its stores (``ProcessContext``): the real process's unless a test
        /// of this package gives another, which stands for another process on the same machine.
        package var context: ProcessContext = .system

        /// How a store follows other processes' writes to its files.
        public enum Watching: Sendable, Hashable {
            /// The process's one watcher: inotify, polling only where inotify cannot see (a network file
            /// system, no watches left, `LIVEDEFAULTS_WATCHER=poll`). The default.
            case automatic
            /// Every file's directory checked at this interval (at least a millisecond), without inotify: for
            /// file systems whose changes inotify misses. Stores polling at the same interval share one watcher.
            case polling(interval: Duration)
            /// Not at all: the store reads a file when it first needs it and again on ``Defaults/synchronize()``
            /// and ``Defaults/flush()``; its own writes are seen at once, as always. For a program that reads
            /// or writes once and exits, such as the `defaults` command: watching costs it nothing while it
            /// runs, but Linux waits for an RCU grace period when a process that added inotify watches exits
            /// (Docs/Benchmarks.md).
            case off
        }

        /// A configuration with explicit values; the rest default to the process's (`clock`: nil for the
        /// process's time, see ``clock``).
        public init(
            locations: DefaultsLocations = .current,
            applicationDomain: String = Configuration.processApplicationDomain,
            arguments: [String] = Configuration.processArguments,
            languages: [String] = Configuration.processLanguages,
            errorHandler: (@Sendable (DefaultsError) -> Void)? = nil,
            logger: Logger? = nil,
            watching: Watching = .automatic,
            clock: (any DefaultsClock)? = nil
        ) {
            self.locations = locations
            self.applicationDomain = applicationDomain
            self.arguments = arguments
            self.languages = languages
            self.errorHandler = errorHandler
            givenLogger = logger
            self.watching = watching
            chosenClock = clock
        }

        /// A configuration whose files all live below `directory` (see ``DefaultsLocations/rooted(at:)``).
        public static func rooted(at directory: String, applicationDomain: String, arguments: [String] = [])
            -> Configuration
        {
            Configuration(
                locations: .rooted(at: directory), applicationDomain: applicationDomain, arguments: arguments,
                languages: [])
        }

        /// The bundle identifier when the process has one, else the executable's name, as Foundation uses.
        ///
        /// Foundation's `Bundle.main` is only asked when the executable's directory could hold a bundle's
        /// `Info.plist`; otherwise the name is the executable's file name (`/proc/self/exe`), which is
        /// Foundation's `ProcessInfo.processName` — unless the program has assigned that property, which this
        /// does not follow. Asking Foundation costs a fresh process more than the rest of an open (see
        /// `MainBundleLayout`).
        @usableFromInline static var processApplicationDomain: String {
            if let path = CurrentProcess.executablePath,
                MainBundleLayout.certainlyHasNoInfo(executablePath: path, on: ProcessContext.system.fileSystem),
                let name = MainBundleLayout.executableName(of: path)
            {
                return name
            }
            if let identifier = Bundle.main.bundleIdentifier, !identifier.isEmpty { return identifier }
            return ProcessInfo.processInfo.processName
        }

        /// The process's language variables (`LANGUAGE`, `LC_ALL`, `LC_MESSAGES`, `LANG`), each read with
        /// `getenv`: the default of ``preferredLanguages(environment:)``. `ProcessInfo`'s whole environment
        /// would cost a fresh process more than an open on its first use.
        @usableFromInline static var languageEnvironment: [String: String] {
            var environment: [String: String] = [:]
            for name: StaticString in ["LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG"] {
                if let value = Environment.value(name) { environment[name.description] = value }
            }
            return environment
        }

        /// The process's arguments after its name: a configuration's default. `CommandLine.arguments` (every
        /// argument made a String on its first use) only when there are any.
        @usableFromInline static var processArguments: [String] {
            CommandLine.argc > 1 ? Array(CommandLine.arguments.dropFirst()) : []
        }

        /// The process's languages (``preferredLanguages(environment:)`` of its own environment): a
        /// configuration's default. Each variable read with `getenv`, and no dictionary made of them: a fresh
        /// process's first dictionary costs its first open the runtime's setting up of one more generic type.
        @usableFromInline static var processLanguages: [String] {
            preferredLanguages(lookup: Environment.value)
        }

        /// The user's languages from `LANGUAGE` (a colon-separated list), else the first of `LC_ALL`,
        /// `LC_MESSAGES` and `LANG`; each locale such as `de_DE.UTF-8` gives `de_DE` then `de`. The `C` and
        /// `POSIX` locales give none.
        static func preferredLanguages(environment: [String: String] = Configuration.languageEnvironment)
            -> [String]
        {
            preferredLanguages(lookup: { environment[$0.description] })
        }

        /// ``preferredLanguages(environment:)`` with each variable's value from `lookup`.
        static func preferredLanguages(lookup: (StaticString) -> String?) -> [String] {
            // Scanned as UTF-8 bytes rather than Characters: a fresh process's first grapheme breaking (`split`,
            // `prefix(while:)`, even a String subscripted at a UTF-8 index) pages Unicode tables in on its first open.
            // Each candidate is taken as it is found rather than gathered into an array of slices first: that
            // array's type was one more for the runtime to make in a fresh process.
            typealias Bytes = ArraySlice<UInt8>
            func upTo(_ text: Bytes, stoppingAt stop: (UInt8) -> Bool) -> Bytes {
                text[..<(text.firstIndex(where: stop) ?? text.endIndex)]
            }
            var languages: [String] = []
            func add(_ bytes: Bytes) {
                guard !bytes.isEmpty else { return }
                let name = String(decoding: bytes, as: UTF8.self)
                if !languages.contains(name) && (try? DomainName.validate(name)) != nil { languages.append(name) }
            }
            func consider(_ candidate: Bytes) {
                let locale = upTo(candidate) { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "@") }
                guard !locale.isEmpty, !locale.elementsEqual("C".utf8), !locale.elementsEqual("POSIX".utf8) else {
                    return
                }
                add(locale)
                add(upTo(locale) { $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-") })
            }
            if let list = lookup("LANGUAGE"), !list.isEmpty {
                var rest = Array(list.utf8)[...]
                while let colon = rest.firstIndex(of: UInt8(ascii: ":")) {
                    consider(rest[..<colon])
                    rest = rest[(colon + 1)...]
                }
                consider(rest)
            }
            // The first of the three set and not empty (no array of names: another type to make).
            func nonEmpty(_ variable: StaticString) -> String? { lookup(variable).flatMap { $0.isEmpty ? nil : $0 } }
            if let value = nonEmpty("LC_ALL") ?? nonEmpty("LC_MESSAGES") ?? nonEmpty("LANG") {
                consider(Array(value.utf8)[...])
            }
            return languages
        }
    }

    /// Parses `-Key value` pairs as Foundation does: a pair is an argument starting with `-` followed by one
    /// that does not; a value starting with `{`, `(`, `[`, `<` or `"` is parsed as a property list (old-style
    /// or XML) and kept as a string when that fails; any other value is a string.
    ///
    /// ```
    /// -Numbers '(1, 2)'   → ["1", "2"]
    /// -Name "A B"         → "A B"
    /// -Flag YES           → "YES" (which bool(forKey:) reads as true)
    /// ```
    package static func parseArguments(_ arguments: [String]) -> [String: PropertyList] {
        var result: [String: PropertyList] = [:]
        var index = 0
        while index + 1 < arguments.count {
            let current = arguments[index]
            let next = arguments[index + 1]
            guard ArgumentText.startsWith(current, "-"), ArgumentText.hasMoreThanOneCharacter(current),
                !ArgumentText.startsWith(next, "-")
            else {
                index += 1
                continue
            }
            let key = ArgumentText.droppingFirstCharacter(current)
            let value = ArgumentText.trimmingWhitespace(next)
            if ArgumentText.startsWithBracketOrQuote(value), let parsed = try? PropertyList(parsing: value) {
                result[key] = parsed
            } else {
                result[key] = .string(value)
            }
            index += 2
        }
        return result
    }
}

/// The Character tests ``Defaults/parseArguments(_:)`` makes, answered from the UTF-8 bytes where the answer is
/// certain and by Swift's Character and Foundation's trimming otherwise.
///
/// A process's first grapheme breaking and Foundation's first `CharacterSet` cost its first open more than
/// reading the domain (60% of it in a profile of a program with four arguments). An ASCII byte never joins
/// the character before it (but for a line feed after a carriage return), and no other character's
/// canonical form starts with an ASCII one, so a string whose first two bytes are ASCII has that first byte
/// as its whole first Character.
private enum ArgumentText {
    /// `text.hasPrefix(ascii)` for a one-byte ASCII `ascii`.
    static func startsWith(_ text: String, _ ascii: StaticString) -> Bool {
        let byte = ascii.utf8Start.pointee
        var bytes = text.utf8.makeIterator()
        guard let first = bytes.next(), first == byte else { return false }
        guard let second = bytes.next(), second >= 0x80 else { return true }
        return text.hasPrefix(String(UnicodeScalar(byte)))
    }

    /// `text.count > 1`.
    static func hasMoreThanOneCharacter(_ text: String) -> Bool {
        let utf8 = text.utf8
        guard utf8.count > 1 else { return false }
        let (first, second) = (utf8.first!, utf8[utf8.index(after: utf8.startIndex)])
        if first < 0x80 && second < 0x80 && !(first == 0x0D && second == 0x0A) { return true }
        return text.count > 1
    }

    /// `String(text.dropFirst())`.
    static func droppingFirstCharacter(_ text: String) -> String {
        let utf8 = text.utf8
        if let first = utf8.first, first < 0x80, first != 0x0D,
            utf8.count == 1 || utf8[utf8.index(after: utf8.startIndex)] < 0x80
        {
            return String(decoding: utf8.dropFirst(), as: UTF8.self)
        }
        return String(text.dropFirst())
    }

    /// `text.trimmingCharacters(in: .whitespacesAndNewlines)`: the text itself when its first and last bytes
    /// are ASCII other than whitespace (so its first and last scalars are not white space).
    static func trimmingWhitespace(_ text: String) -> String {
        func isPlainASCII(_ byte: UInt8) -> Bool {
            byte < 0x80 && byte != 0x20 && !(0x09...0x0D).contains(byte)
        }
        guard let first = text.utf8.first, let last = text.utf8.last else { return text }
        if isPlainASCII(first) && isPlainASCII(last) { return text }
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Whether the first Character is one of `{`, `(`, `[`, `<`, `"`.
    static func startsWithBracketOrQuote(_ text: String) -> Bool {
        startsWith(text, "{") || startsWith(text, "(") || startsWith(text, "[") || startsWith(text, "<")
            || startsWith(text, "\"")
    }
}

extension Defaults.Configuration.Watching {
    /// The watcher a store configured so uses: `automatic` (the configuration's watcher) for
    /// ``automatic``, the context's polling watcher of the interval (made on first use, kept for the process)
    /// for ``polling(interval:)``, none for ``off``.
    func watcher(automatic: @autoclosure () -> FileWatcher, context: ProcessContext) -> FileWatcher? {
        switch self {
        case .automatic: automatic()
        case .off: nil
        case .polling(let interval): context.pollingWatcher(interval: interval)
        }
    }
}
