import Foundation

// The store's state, and the types it is made of: the volatile domains, the search list and its persistent
// domains, the typed keys' state. Only the store's lock (``Defaults/state``) reaches them.
extension Defaults {
    /// The volatile domains by name.
    ///
    /// Kept as `.dictionary` values of a `[String: PropertyList]`, the dictionary type every file read already
    /// uses, rather than as a `[String: [String: PropertyList]]`: a second dictionary type, which the runtime
    /// instantiates on a fresh process's first open (a few microseconds, every process).
    struct VolatileDomains {
        private var storage: [String: PropertyList] = [:]

        /// A domain's contents; setting nil removes it. Changed in place (`_modify`), not copied.
        subscript(name: String) -> [String: PropertyList]? {
            get {
                guard case .dictionary(let contents)? = storage[name] else { return nil }
                return contents
            }
            set { storage[name] = newValue.map { .dictionary($0) } }
        }

        /// A domain's contents, or `fallback` when there is none (which a change then creates).
        subscript(name: String, default fallback: [String: PropertyList]) -> [String: PropertyList] {
            get { self[name] ?? fallback }
            _modify {
                var contents = self[name] ?? fallback
                // Released from the storage first, so that the change below edits it in place.
                storage[name] = nil
                defer { storage[name] = .dictionary(contents) }
                yield &contents
            }
        }

        var names: Dictionary<String, PropertyList>.Keys { storage.keys }

        mutating func removeValue(forKey name: String) {
            storage.removeValue(forKey: name)
        }
    }

    /// One place a value can come from, in search order.
    enum Source {
        /// A dictionary of values: a volatile domain's contents (a copy that shares storage with
        /// ``State/volatileDomains``), or, while the merged view is rebuilt, a file's.
        case volatile([String: PropertyList])
        /// Unretained: ``SearchList/persistent`` holds the file for as long as the flattened list names it, and a
        /// lookup then costs no reference counting (which, for an object that is also referenced weakly,
        /// takes the runtime's slow side-table path).
        case file(Unmanaged<DomainFile>)
    }

    enum SearchEntry: Hashable {
        case volatile(String)
        case persistent(String)
    }

    struct PersistentDomain {
        /// One layer's file, and the token of the store's observer of it.
        ///
        /// A struct, not a labelled tuple: an array of tuples made the runtime build the tuple's metadata
        /// (labels and all) on a fresh process's first open.
        struct LayerFile {
            var layer: PreferenceLayer
            var file: DomainFile
            var token: UInt64
        }

        /// A domain's layer files in ``PreferenceLayer/searchOrder``, built once by
        /// ``Defaults/attach(_:directories:)``: an ``IntrusiveList`` (not an array: see there), whose copies
        /// share the nodes, so a list is not appended to once copied (``inserting(_:)`` makes a new one).
        struct LayerFiles: Sequence {
            final class Node: IntrusiveListNode {
                let item: LayerFile
                var next: Node?
                init(_ item: LayerFile) { self.item = item }
            }

            struct Iterator: IteratorProtocol {
                var nodes: IntrusiveList<Node>.Iterator
                mutating func next() -> LayerFile? { nodes.next()?.item }
            }

            private var nodes = IntrusiveList<Node>()

            init() {}

            mutating func append(_ item: LayerFile) { nodes.append(Node(item)) }

            func makeIterator() -> Iterator { Iterator(nodes: nodes.makeIterator()) }

            /// This list with `item` among its files, in search order (a new list: copies share nodes).
            func inserting(_ item: LayerFile) -> LayerFiles {
                var list = LayerFiles()
                var pending: LayerFile? = item
                for current in self {
                    if let waiting = pending, waiting.layer.searchRank < current.layer.searchRank {
                        list.append(waiting)
                        pending = nil
                    }
                    list.append(current)
                }
                if let pending { list.append(pending) }
                return list
            }
        }

        /// The domain's name.
        let name: String
        /// The files of the layers whose directory existed (or could not be looked at) when the domain was
        /// attached, and of those attached since (``Defaults/attachAwaitedLayer(_:of:deferred:)``).
        var files: LayerFiles
        /// The layers not attached because their directory was missing (``PreferenceLayer/awaitedBit``): no
        /// file is made for them, only a watch of their path, until the directory appears, a write goes
        /// there, or `synchronize()` finds it.
        var awaited: UInt8 = 0
        /// The awaited layers whose path is watched. All but the per-user managed layer while the managed
        /// directory is missing: its path names the user (a read of the user database without `USER`), and
        /// the managed layer's watch stands for it until that directory appears.
        var watchedAwaited: UInt8 = 0
        /// Whether the domain is in the search list (else it is attached only for domain streams).
        var inSearchList = false
        /// How many ``Defaults/changes(inDomain:)`` iterators follow this domain.
        var streams = 0

        func file(_ layer: PreferenceLayer) -> DomainFile? {
            files.first { $0.layer == layer }?.file
        }

        /// Whether the layer is awaited: not attached, its directory missing when last looked at.
        func awaits(_ layer: PreferenceLayer) -> Bool {
            awaited & layer.awaitedBit != 0
        }

        /// Whether the layer is awaited without a watch of its path (``watchedAwaited``).
        func awaitsUnwatched(_ layer: PreferenceLayer) -> Bool {
            awaited & ~watchedAwaited & layer.awaitedBit != 0
        }

        /// Whether a managed (forced) layer of the domain has the key.
        func forces(_ key: String) -> Bool {
            files.contains { $0.layer.isManaged && $0.file.value(forKey: key) != nil }
        }

        /// The domain's own value of a key: the first layer that has it, managed layers included. With
        /// `replacing`, one layer's value is taken as given (the value before a change).
        func value(forKey key: String, replacing: (layer: PreferenceLayer, value: PropertyList?)? = nil)
            -> PropertyList?
        {
            for item in files {
                let value = item.layer == replacing?.layer ? replacing?.value : item.file.value(forKey: key)
                if let value { return value }
            }
            return nil
        }
    }

    /// The search list and what it flattens to, for lookups that hash no domain name. Part of ``State``:
    /// ``sources`` holds copies of the volatile domains' contents, so the two change in one critical section.
    struct SearchList {
        /// Suites added with ``addSuite(named:)``, in order.
        var suites: [String] = []
        /// Counts changes to ``suites``: a search-list rebuild that read an older count publishes nothing
        /// and starts over, so two concurrent `addSuite` calls cannot drop each other's suite.
        var suitesVersion = 0
        /// The attached persistent domains: those of the list, and those followed by domain streams.
        var persistent: [String: PersistentDomain] = [:]
        /// The domains in search order.
        var entries: [SearchEntry] = []
        /// The list flattened for ``resolve(_:_:)``: forced files first, then each non-empty volatile domain
        /// or file in order, so a lookup walks two arrays without hashing a domain name.
        /// The forced files are `.file` sources: the type `sources` has (an array of unretained files would be
        /// one more type for the runtime to instantiate on a fresh process's first open).
        var forcedFiles: [Source] = []
        var sources: [Source] = []
        /// The application domain's current-user file and its managed (forced) files: what every `set`
        /// needs, at hand without a lookup.
        /// Unretained, like the flattened list: the application domain is always in the search list, so
        /// ``persistent`` holds these files for the store's whole life.
        var applicationFile: Unmanaged<DomainFile>?
        /// `.file` sources, as ``forcedFiles``.
        var applicationForcedFiles: [Source] = []
    }

    /// What the store's reads come from, under one lock (``state``). Invariant: ``SearchList/sources`` is
    /// the flattening of ``SearchList/entries`` over the attached files and ``volatileDomains``, and the
    /// view's values are the merge of those sources; whoever changes one of the three brings the others in
    /// line in the same critical section (``flattenSearchList(_:)``, ``EffectiveView/apply(_:)``), or hands
    /// a newer whole view to ``rebuildMerged(changedDomain:)``, which the view's generation keeps ordered.
    struct State {
        /// Where errors found without a caller to throw to reach the log and the error handler
        /// (``record(_:deferred:)``): off the threads that found them, the watcher's among them. Made with
        /// the first such report: most stores never have one, and a queue made with every store cost its open
        /// a generic `DispatchSpecificKey` on first use and its memory a queue.
        var reports: DispatchQueue?
        /// Owned by the search-list functions (``rebuildSearchList()``, ``attach(_:)``, the suites).
        var search = SearchList()
        /// Owned by the volatile-domain functions (``Defaults/setVolatileDomain(_:forName:)`` and friends):
        /// the argument and registration domains, the languages' domains, and any the program adds.
        var volatileDomains = VolatileDomains()
        /// The effective values, the read slots, the missing-key filter, the value cache and the streams:
        /// values change only through ``EffectiveView/apply(_:)``; a read fills a slot or the cache, and a
        /// stream subscribes, through the view's other methods (Docs/Architecture.md lists the callers, and
        /// Scripts/check-architecture keeps that list true).
        var view: EffectiveView
        /// The store's judges (``Defaults/addValidator(_:)``, ``addJudge(_:)``): nil until the first is added.
        var validation: StoreValidation?
        /// The environment layer's origins, reported problems and watched files; nil until it is materialised.
        var environment: EnvironmentState?

        init(view: EffectiveView) {
            self.view = view
        }
    }

    /// What the store keeps for typed keys (Keys/), under its own lock (``typedKeys``), independent of
    /// ``State``: a suite's store is made at most once (``store(forSuite:)`` publishes the first made), and
    /// a refused value is reported once per key (``firstReports(of:)``).
    struct TypedKeyState {
        /// Stores for the suites of typed keys, made on first use.
        var suiteStores: [String: Defaults] = [:]
        /// The last stored value reported as refused or unreadable for each key.
        var reportedRefusals: [String: PropertyList] = [:]
        /// The keys of each domain whose schema this store published (``publishSchema(for:)``): a key of the
        /// domain's files outside them is reported, once.
        var declaredKeys: [String: DeclaredKeys] = [:]

        /// Records that `value` of `key` is being reported; false when it was the last one reported for the key.
        mutating func isFirstReport(of value: PropertyList, forKey key: String) -> Bool {
            guard reportedRefusals[key] != value else { return false }
            reportedRefusals[key] = value
            return true
        }
    }

    /// A domain's declared keys, the reports made of keys outside them, and how to find the declared key a
    /// key outside them most likely meant (the schema's, given by Keys/).
    struct DeclaredKeys {
        var names: Set<String>
        var nearest: @Sendable (String) -> String?
        var reported: Set<String> = []
    }
}
