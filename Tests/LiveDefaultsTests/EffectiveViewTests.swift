import Foundation
import Testing

@testable import LiveDefaults

/// The effective view as a unit: one apply function keeps the merged values, the read slots, the missing-key
/// filter and the streams in step, and a full view computed from older sources is refused.
@Suite struct EffectiveViewTests {
    private func makeView() -> EffectiveView {
        EffectiveView(
            readSlots: ScalarReadSlots(), missingKeys: MissingKeyFilter(), valueCache: ValueReadCache(),
            gate: ViewGate())
    }

    @Test func aFullViewComputedBeforeANewerChangeIsRefused() {
        var view = makeView()
        let first = view.apply(.all(["A": 1], domain: "d", basedOn: view.generation))
        #expect(first?.changed == true)
        let computedAt = view.generation
        // A file change lands while a rebuild is computing its view from the sources at `computedAt`.
        _ = view.apply(.keys([.init(key: "B", value: 2)], domain: "d", origin: .external))
        #expect(view.generation != computedAt)
        let stale = view.apply(.all(["A": 5], domain: "d", basedOn: computedAt))
        #expect(stale == nil)
        #expect(view.merged.dictionary == ["A": 1, "B": 2])
        // Computed again from the current sources, it is taken.
        let current = view.apply(.all(["A": 5, "B": 2], domain: "d", basedOn: view.generation))
        #expect(current != nil)
        #expect(view.merged.dictionary == ["A": 5, "B": 2])
    }

    @Test func aKeyResolvedToItsCurrentValueIsNoChange() {
        var view = makeView()
        _ = view.apply(.all(["A": 1], domain: "d", basedOn: view.generation))
        let generation = view.generation
        let applied = view.apply(.keys([.init(key: "A", value: 1)], domain: "d", origin: .local))
        #expect(applied?.changed == false)
        #expect(view.generation == generation)
    }

    @Test func guardedSlotsHoldBackRefusedValues() {
        var view = makeView()
        let validate: @Sendable (PropertyList) -> SchemaViolation? = { value in
            value == "bad" || value == 0
                ? SchemaViolation(key: "Mode", value: value, reason: .notAChoice, accepted: "a good value") : nil
        }
        _ = view.apply(.all(["Mode": "good"], domain: "d", basedOn: view.generation))
        #expect(view.fillSlot(3, forKey: "Mode", validate: validate).value == "good")
        #expect(view.readSlots.read(3)?.tag == .other)
        let refused = view.apply(.keys([.init(key: "Mode", value: "bad")], domain: "d", origin: .external))
        #expect(refused?.refusals.map(\.value) == ["bad"])
        #expect(view.readSlots.read(3)?.tag == .held, "a string held back: read under the lock")
        #expect(view.typedValue(3, forKey: "Mode") == "good")
        #expect(view.merged["Mode"] == "bad", "the untyped view shows what is stored")
        // A rebuild that keeps the refused value does not report it again.
        let rebuilt = view.apply(.all(["Mode": "bad"], domain: "d", basedOn: view.generation))
        #expect(rebuilt?.refusals.isEmpty == true)
        _ = view.apply(.keys([.init(key: "Mode", value: 1)], domain: "d", origin: .external))
        #expect(view.readSlots.read(3)?.tag == .integer && view.typedValue(3, forKey: "Mode") == 1)
        _ = view.apply(.keys([.init(key: "Mode", value: 0)], domain: "d", origin: .external))
        #expect(view.readSlots.read(3)?.payload == 1, "a scalar held back sits in the slot itself")
        _ = view.apply(.keys([.init(key: "Mode", value: nil)], domain: "d", origin: .external))
        #expect(view.readSlots.read(3)?.tag == .missing && view.typedValue(3, forKey: "Mode") == nil)
    }

    @Test func readSlotsFollowEveryKindOfChange() {
        var view = makeView()
        _ = view.apply(.all(["Count": 1], domain: "d", basedOn: view.generation))
        let filled = view.fillSlot(7, forKey: "Count", validate: { _ in nil })
        #expect(filled.value == 1 && filled.refusals.isEmpty)
        #expect(view.readSlots.read(7)?.payload == 1)

        _ = view.apply(.keys([.init(key: "Count", value: 2)], domain: "d", origin: .external))
        #expect(view.readSlots.read(7).map { ScalarReadSlots.decode($0.tag, $0.payload) } == 2)

        _ = view.apply(.all([:], domain: "registration", basedOn: view.generation))
        #expect(view.readSlots.read(7)?.tag == .missing)

        _ = view.apply(.keys([.init(key: "Count", value: "text")], domain: "d", origin: .local))
        #expect(view.readSlots.read(7)?.tag == .other)
    }

    @Test func theMissingKeyFilterHoldsEveryKeyTheViewGains() {
        var view = makeView()
        _ = view.apply(.all(["A": 1], domain: "d", basedOn: view.generation))
        #expect(!view.missingKeys.mayContain("Absent"))
        // Enough keys, one by one, to make the filter grow: every one stays visible.
        let keys = (0..<5_000).map { "Key\($0)" }
        for key in keys { _ = view.apply(.keys([.init(key: key, value: 1)], domain: "d", origin: .external)) }
        #expect(keys.allSatisfy { view.missingKeys.mayContain($0) })
        #expect(view.missingKeys.mayContain("A"))
    }

    @Test func streamsGetEffectiveChangesAndTheirResumptionsRunOutsideTheView() async throws {
        var view = makeView()
        _ = view.apply(.all(["A": 1], domain: "d", basedOn: view.generation))
        let values = ValueBuffer()
        let changes = ChangeBuffer()
        let valueID = view.subscribeValue(forKey: "A", buffer: values, emitCurrentValue: false)
        _ = view.subscribeChanges(buffer: changes)
        #expect(view.subscribers.count == 2)

        let change2 = view.apply(.keys([.init(key: "A", value: 2)], domain: "d", origin: .external))
        let applied = try #require(change2)
        #expect(applied.changed)
        for resume in applied.resumptions { resume() }
        #expect(await values.next() == .some(.some(2)))
        let change = await changes.next()
        #expect(change == KeyChange(domain: "d", key: "A", oldValue: 1, newValue: 2, origin: .external))

        // A rebuild is reported key by key, attributed to the domain that caused it.
        _ = view.apply(.all(["A": 2, "B": 3], domain: "registration", basedOn: view.generation))
        #expect(
            await changes.next()
                == KeyChange(domain: "registration", key: "B", oldValue: nil, newValue: 3, origin: .local))

        let ended = view.unsubscribe(valueID)
        guard case .none = ended else {
            Issue.record("a value stream is not a domain stream")
            return
        }
        #expect(view.subscribers.count == 1)
    }

    @Test func domainStreamsAreToldOnlyOfTheirDomain() async {
        var view = makeView()
        let buffer = ChangeBuffer()
        let id = view.subscribeChanges(inDomain: "com.example.other", buffer: buffer)
        #expect(view.followsDomain("com.example.other"))
        #expect(!view.followsDomain("com.example.app"))
        let change = KeyChange(domain: "com.example.other", key: "K", oldValue: nil, newValue: 1, origin: .external)
        for resume in view.deliverDomainChange(change) { resume() }
        #expect(await buffer.next() == change)
        let ended = view.unsubscribe(id)
        guard case .domain(let domain, _) = ended else {
            Issue.record("a domain stream's end names its domain")
            return
        }
        #expect(domain == "com.example.other")
        #expect(!view.followsDomain("com.example.other"))
    }
}
