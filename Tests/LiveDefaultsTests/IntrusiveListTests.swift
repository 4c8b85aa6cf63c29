import Testing

@testable import LiveDefaults

/// The one linked list of the library (observers, layer files, the watcher's queues, the registry's files).
@Suite("IntrusiveList: order, taking, copies")
struct IntrusiveListTests {
    final class Node: IntrusiveListNode {
        let value: Int
        var next: Node?
        init(_ value: Int) { self.value = value }
    }

    static func values(_ list: IntrusiveList<Node>) -> [Int] { list.map(\.value) }

    @Test("append keeps order, prepend goes first, first and last follow")
    func order() {
        var list = IntrusiveList<Node>()
        #expect(list.isEmpty && list.first == nil && list.last == nil)
        list.append(Node(2))
        list.append(Node(3))
        list.prepend(Node(1))
        #expect(Self.values(list) == [1, 2, 3])
        #expect(list.first?.value == 1 && list.last?.value == 3)

        var fromFront = IntrusiveList<Node>()
        fromFront.prepend(Node(2))
        fromFront.prepend(Node(1))
        fromFront.append(Node(3))  // the first prepend set `last`
        #expect(Self.values(fromFront) == [1, 2, 3])
    }

    @Test("takeAll empties the list and unlinks each node as it is taken")
    func takeAll() {
        var list = IntrusiveList<Node>()
        let nodes = (1...4).map(Node.init)
        for node in nodes { list.append(node) }
        var taken = list.takeAll()
        #expect(list.isEmpty && list.last == nil && !taken.isEmpty)
        #expect(taken.next()?.value == 1)
        #expect(nodes[0].next == nil, "a taken node is unlinked")
        #expect(nodes[1].next === nodes[2], "a node not yet taken keeps its link")
        #expect(taken.map(\.value) == [2, 3, 4])
        #expect(nodes.allSatisfy { $0.next == nil })
        // The list can be used again.
        list.append(Node(5))
        #expect(Self.values(list) == [5])
    }

    @Test("a long queue is taken and released without recursion")
    func longQueue() {
        var list = IntrusiveList<Node>()
        for value in 0..<300_000 { list.append(Node(value)) }
        var sum = 0
        for node in list.takeAll() { sum += node.value }
        #expect(sum == 300_000 * 299_999 / 2)
    }

    @Test("filter(copying:) makes new nodes and leaves the list it was made from as it was")
    func filterCopies() {
        var list = IntrusiveList<Node>()
        for value in 1...5 { list.append(Node(value)) }
        let originals = Array(list)
        var even = list.filter({ $0.value % 2 == 0 }, copying: { Node($0.value) })
        even.append(Node(6))
        #expect(Self.values(even) == [2, 4, 6])
        #expect(Self.values(list) == [1, 2, 3, 4, 5])
        #expect(zip(Array(list), originals).allSatisfy { $0 === $1 })
        #expect(!even.contains { node in originals.contains { $0 === node } })
        #expect(Self.values(list.filter({ _ in false }, copying: { $0 })).isEmpty)
    }

    @Test("init(startingAt:) finds the last node, so a list kept as its first node can grow")
    func startingAt() {
        var list = IntrusiveList<Node>()
        for value in 1...3 { list.append(Node(value)) }
        var again = IntrusiveList(startingAt: list.first)
        #expect(again.last === list.last)
        again.append(Node(4))
        #expect(Self.values(again) == [1, 2, 3, 4])
        let none = IntrusiveList<Node>(startingAt: nil)
        #expect(none.isEmpty && none.last == nil)
    }
}
