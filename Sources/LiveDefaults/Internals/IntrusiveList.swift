/// A node of an ``IntrusiveList``: a class whose instances carry the link to the next node themselves.
protocol IntrusiveListNode: AnyObject {
    /// The next node of the list this node is in; nil for the last node and for a node in no list.
    var next: Self? { get set }
}

/// A singly linked list of nodes that carry their own link: the short lists of the paths a process's first
/// open takes (a file's observers, a domain's layer files, the watcher's queued jobs and registrations, the
/// registry's files of a path).
///
/// Why not an array: an array of a type of ours (or of closures) is a generic type the runtime instantiates on
/// first use, and a fresh process's first open met one for each such list (Docs/Architecture.md, "Opening a
/// domain"). A node is a final class whose metadata the compiler lays out, and this struct is specialised
/// away where it is used.
///
/// - The list is a value holding its first and last node; copies share the nodes. Appending to a copy links
///   the new node after the shared last one, so a list that has been copied is not appended to (build a new
///   one: ``filter(_:copying:)``). Lists that are published to other threads (a file's observers) are never
///   changed after publication: a change builds new nodes.
/// - ``takeAll()`` empties the list and unlinks each node as it is taken, so that a long queue is never
///   released recursively (node by node through `next`, one stack frame each).
struct IntrusiveList<Node: IntrusiveListNode>: Sequence {
    private(set) var first: Node?
    private(set) var last: Node?

    init() {}

    /// The list of `first` and the nodes linked after it, its last node found by walking them (these lists
    /// are short): for a list kept as its first node, as a dictionary's value (a dictionary of lists would be
    /// one more generic type for the runtime to instantiate).
    init(startingAt first: Node?) {
        self.first = first
        var node = first
        while let current = node {
            last = current
            node = current.next
        }
    }

    var isEmpty: Bool { first == nil }

    /// Links `node` (in no list) after the last node.
    mutating func append(_ node: Node) {
        if let last { last.next = node } else { first = node }
        last = node
    }

    /// Links `node` (in no list) before the first node.
    mutating func prepend(_ node: Node) {
        node.next = first
        first = node
        if last == nil { last = node }
    }

    /// The nodes, first to last.
    struct Iterator: IteratorProtocol {
        fileprivate var node: Node?
        mutating func next() -> Node? {
            guard let current = node else { return nil }
            node = current.next
            return current
        }
    }

    func makeIterator() -> Iterator { Iterator(node: first) }

    /// Takes every node, in order, leaving the list empty; each node is unlinked as the iteration reaches it.
    mutating func takeAll() -> Taken {
        defer { (first, last) = (nil, nil) }
        return Taken(node: first)
    }

    /// The nodes of a list taken by ``takeAll()``.
    struct Taken: Sequence, IteratorProtocol {
        fileprivate var node: Node?
        /// Whether no node is left to take.
        var isEmpty: Bool { node == nil }
        mutating func next() -> Node? {
            guard let current = node else { return nil }
            node = current.next
            current.next = nil
            return current
        }
    }

    /// A new list of new nodes, `copy` of each node `isIncluded` keeps, in order: how a published list is
    /// changed (its own nodes stay as they are for the threads walking them).
    func filter(_ isIncluded: (Node) -> Bool, copying copy: (Node) -> Node) -> IntrusiveList {
        var list = IntrusiveList()
        for node in self where isIncluded(node) { list.append(copy(node)) }
        return list
    }
}

// A node type's links are `var`s: it is `@unchecked Sendable` only when its lists are never changed while
// another thread walks them, and says how it keeps to that.
extension IntrusiveList: Sendable where Node: Sendable {}
