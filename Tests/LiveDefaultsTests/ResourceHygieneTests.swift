import Foundation
import Testing
import TestProcesses

/// What a long-running program gets back when its stores go: a helper process makes and drops thousands of
/// stores (each followed by a subscription that waits for the store's write), after a warm-up round of the same
/// size, and reports its heap in use, file descriptors and inotify watches before the measured rounds and after
/// each. The heap's bound is on the smallest round's growth: a store's leftovers grow every round, while a
/// one-off allocation on a path only a loaded machine's timing takes (under a full suite) grows one.
///
/// The heap is glibc's count of bytes handed out and not freed, so the bound is on what the library keeps, not
/// on pages the allocator caches. A store per distinct domain kept about 1.2 KB each when every domain ever
/// opened stayed in the file registry: 1,000 domains came to about 0.6 MB, against this bound of 64 bytes
/// a store plus 128 KiB for the allocator's and runtime's own bookkeeping (which moves by up to about 90 KiB
/// from run to run whatever the count).
///
/// `.blockingWork`: each case waits seconds for its helper (tens of seconds in the polling-only build); on
/// Swift's cooperative pool the three cases held both of CI's threads and starved the tests that await streams.
@Suite("resource hygiene", .blockingWork)
struct ResourceHygieneTests {
    static let stores = 750
    static let bytesPerStore = 64
    static let allowance = 128 * 1024

    @Test(
        "stores made and dropped return their memory, descriptors and watches",
        arguments: ["distinct", "same", "subscriptions"])
    func storesGiveBack(kind: String) throws {
        let directory = TemporaryDirectory()
        let (status, output) = try runHelper(
            ["hygiene", directory.path, kind, "\(Self.stores)"], environment: ["XDG_CONFIG_HOME": directory.path])
        #expect(status == 0, "\(output)")
        var figures: [String: [Int]] = [:]
        for line in output.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count == 4 else { continue }
            figures[String(fields[0])] = fields.dropFirst().compactMap { Int($0) }
        }
        guard let before = figures["before"], let first = figures["after1"], let second = figures["after2"],
            [before, first, second].allSatisfy({ $0.count == 3 })
        else {
            Issue.record("no figures in \(output)")
            return
        }
        // What the library keeps per store grows the heap in every round; the smallest growth is the bound's.
        let grown = min(first[0] - before[0], second[0] - first[0])
        #expect(
            grown <= Self.bytesPerStore * Self.stores + Self.allowance,
            "\(kind): the heap grew by \(grown) bytes over \(Self.stores) stores (\(grown / Self.stores) a store)")
        for after in [first, second] {
            #expect(after[1] <= before[1], "\(kind): file descriptors \(before[1]) → \(after[1])")
            #expect(after[2] <= before[2], "\(kind): inotify watches \(before[2]) → \(after[2])")
        }
    }
}
