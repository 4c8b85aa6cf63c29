import Foundation
import LiveDefaultsTesting
import Testing

@testable import LiveDefaults

/// Validators over a whole version (``Defaults/addValidator(_:)``): another process's version that one refuses
/// is not applied at all, this process's own change that one refuses is not made, and a version that passes
/// is applied as any other. "Another process" is a `DomainFile` of its own over the same path (the state a
/// process keeps); the store does not watch, and `synchronize()` is when it looks; its background writer waits
/// on a manual clock that never moves, so its writes happen at `synchronize()` too: no watcher, no sleep.
@Suite("Validators refuse a version as a whole")
struct ValidatorTests {
    static let domain = "com.example.validated"
    static let minPool = DefaultsKey<Int>("MinPool", default: 1)
    static let maxPool = DefaultsKey<Int>("MaxPool", default: 10)

    struct PoolError: Error, CustomStringConvertible {
        var description: String
    }

    let directory = TemporaryDirectory()
    let errors = Lock<[DefaultsError]>([])
    let validations = Lock<Int>(0)
    var path: String { directory.file("\(Self.domain).plist") }

    /// A store of the domain (its files in `root`, the test's directory unless given), not watching, with a
    /// validator: MinPool ≤ MaxPool.
    func store(root: String? = nil) throws -> (Defaults, DefaultsValidation) {
        var configuration = Defaults.Configuration.rooted(at: root ?? directory.path, applicationDomain: Self.domain)
        configuration.watching = .off
        configuration.clock = ManualDefaultsClock()
        configuration.errorHandler = { [errors] error in errors.withLock { $0.append(error) } }
        let defaults = try Defaults(configuration: configuration)
        let validation = defaults.addValidator { [validations] candidate in
            validations.withLock { $0 += 1 }
            guard candidate[Self.minPool] <= candidate[Self.maxPool] else {
                throw PoolError(
                    description: "MinPool \(candidate[Self.minPool]) is above MaxPool \(candidate[Self.maxPool])")
            }
        }
        return (defaults, validation)
    }

    /// Another process writes `values` over the file (through its own state of it, under the file lock).
    func writeElsewhere(_ values: [String: PropertyList?]) throws {
        let other = DomainFile(path: path)
        for (key, value) in values { try other.set(value, forKey: key) }
        try other.commit()
    }

    func onDisk() throws -> [String: PropertyList] {
        guard let data = FileManager.default.contents(atPath: path) else { return [:] }
        guard case .dictionary(let contents) = try PropertyList.decode(data).value else { return [:] }
        return contents
    }

    var refusals: [DefaultsError] { errors.withLock { $0 }.filter { $0.code == .versionRefused } }

    @Test("another process's refused version is not applied at all, is reported once, and a later one that passes is")
    func externalVersionRefusedWhole() throws {
        try writeElsewhere(["MinPool": 2, "MaxPool": 20, "Banner": "first"])
        let (defaults, _) = try store()
        #expect(defaults[Self.maxPool] == 20)
        let stream = defaults.snapshot(of: Self.minPool, Self.maxPool)
        // MaxPool below MinPool, and a key the rule does not read changed with it.
        try writeElsewhere(["MaxPool": 1, "Banner": "second"])
        _ = defaults.synchronize()
        #expect(defaults[Self.maxPool] == 20)
        #expect(defaults.string(forKey: "Banner") == "first", "no key of the refused version is applied")
        #expect(defaults.snapshot(of: Self.minPool, Self.maxPool) == stream)
        #expect(refusals.count == 1)
        #expect(refusals.first?.keepsLastKnownGood == true)
        #expect(refusals.first?.detail == "MinPool 2 is above MaxPool 1")
        #expect(refusals.first?.path == path)
        #expect(defaults.lastError?.code == .versionRefused)
        #expect("\(refusals.first!)".contains("keeps serving the last version it accepted"))
        // Looked at again, the same version is neither judged nor reported again.
        let judged = validations.withLock { $0 }
        _ = defaults.synchronize()
        #expect(validations.withLock { $0 } == judged)
        #expect(refusals.count == 1)
        // A later version that passes is applied whole.
        try writeElsewhere(["MinPool": 1, "Banner": "third"])
        _ = defaults.synchronize()
        #expect(defaults[Self.maxPool] == 1)
        #expect(defaults[Self.minPool] == 1)
        #expect(defaults.string(forKey: "Banner") == "third")
        #expect(refusals.count == 1)
    }

    @Test("this process's refused set, trySet, transaction and domain replacement change nothing, here or on disk")
    func localChangesRefused() throws {
        try writeElsewhere(["MinPool": 2, "MaxPool": 20])
        let (defaults, _) = try store()
        defaults.set(30, forKey: "MinPool")
        #expect(defaults[Self.minPool] == 2)
        #expect(refusals.count == 1)
        #expect(refusals.first?.keepsLastKnownGood == false)
        #expect(throws: DefaultsError.self) { try defaults.trySet(1, for: Self.maxPool) }
        #expect(defaults[Self.maxPool] == 20)
        let refused = #expect(throws: DefaultsError.self) {
            try defaults.transaction { tx in
                tx[Self.minPool] = 50
                tx[Self.maxPool] = 40
            }
        }
        #expect(refused?.code == .versionRefused)
        #expect(throws: DefaultsError.self) {
            try defaults.trySetPersistentDomain(["MinPool": 9, "MaxPool": 3], forName: Self.domain)
        }
        #expect(defaults.synchronize())
        #expect(try onDisk() == ["MinPool": 2, "MaxPool": 20])
        // What passes is made.
        try defaults.transaction { tx in
            tx[Self.minPool] = 50
            tx[Self.maxPool] = 60
        }
        #expect(try onDisk() == ["MinPool": 50, "MaxPool": 60])
    }

    @Test("a write goes onto the version on disk, refused or not, and is judged on top of it")
    func writeJudgedOnTheFileAsItIs() throws {
        try writeElsewhere(["MinPool": 2, "MaxPool": 20])
        let (defaults, _) = try store()
        // Another process's version this one refuses...
        try writeElsewhere(["MinPool": 30, "Owner": "ops"])
        _ = defaults.synchronize()
        #expect(defaults[Self.minPool] == 2)
        // ...is not overwritten with the version this process serves: a change that makes it pass goes on top.
        try defaults.trySet(40, for: Self.maxPool)
        #expect(defaults.synchronize())
        #expect(try onDisk() == ["MinPool": 30, "MaxPool": 40, "Owner": "ops"])
        #expect(defaults[Self.minPool] == 30)
        #expect(defaults.string(forKey: "Owner") == "ops")
        // A set judged on the version this process holds, whose write meets a newer version on disk it does not
        // pass on (this process has not read it: it does not watch): the write is judged again on top of that
        // version, refused, and its edit dropped. (Whichever synchronize() of the process writes it: the outcome,
        // not the call, is checked.)
        let other = DomainFile(path: path)
        try other.set(33, forKey: "MaxPool")
        try other.commit()
        defaults.set(35, forKey: "MinPool")
        #expect(defaults[Self.minPool] == 35, "judged on the version held, 30/40: accepted for now")
        _ = defaults.synchronize()
        #expect(try onDisk() == ["MinPool": 30, "MaxPool": 33, "Owner": "ops"])
        #expect(defaults[Self.minPool] == 30)
        #expect(defaults[Self.maxPool] == 33)
        #expect(refusals.last?.detail == "MinPool 35 is above MaxPool 33")
    }

    @Test("a layer whose directory appears under a store with validators is judged from its first version")
    func layerAppearingLater() throws {
        let root = directory.file("later")
        let (defaults, _) = try store(root: root)
        #expect(defaults[Self.maxPool] == 10)
        let file = "\(root)/\(Self.domain).plist"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        try PropertyList.dictionary(["MinPool": 30, "Banner": "new"]).encoded(as: .xml).write(
            to: URL(fileURLWithPath: file))
        _ = defaults.synchronize()
        #expect(defaults[Self.minPool] == 1, "the first version of the new layer is refused: MinPool 30 > MaxPool 10")
        #expect(defaults.string(forKey: "Banner") == nil)
        #expect(refusals.count == 1)
        let other = DomainFile(path: file)
        try other.set(40, forKey: "MaxPool")
        try other.commit()
        _ = defaults.synchronize()
        #expect(defaults[Self.minPool] == 30)
        #expect(defaults[Self.maxPool] == 40)
        #expect(defaults.string(forKey: "Banner") == "new")
    }

    @Test("a removed validator judges nothing more; validators may read the store (no lock of ours is held)")
    func removeAndReadInside() throws {
        try writeElsewhere(["MinPool": 2, "MaxPool": 20])
        let (defaults, validation) = try store()
        let seen = Lock<[Int]>([])
        defaults.addValidator { [weak defaults] _ in
            // A read of the store from inside a validator: a lock of ours held here would deadlock.
            seen.withLock { $0.append(defaults?[Self.maxPool] ?? -1) }
        }
        try writeElsewhere(["MaxPool": 21])
        _ = defaults.synchronize()
        #expect(defaults[Self.maxPool] == 21)
        // Judged when added (the version held, MaxPool 20), then the new version.
        #expect(seen.withLock { $0 } == [20, 20])
        validation.remove()
        validation.remove()
        try writeElsewhere(["MaxPool": 1])
        _ = defaults.synchronize()
        #expect(defaults[Self.maxPool] == 1, "the pool rule was removed; the other validator accepts")
        #expect(refusals.isEmpty)
    }
}
