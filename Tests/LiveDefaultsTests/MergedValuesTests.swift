import Testing

@testable import LiveDefaults

/// The merged view in two parts: the largest layer as it is and the keys the others add or override beside it
/// answer every question as the one dictionary they stand for, and the merge copies no layer to make them.
@Suite struct MergedValuesTests {
    @Test func theTwoPartsAnswerAsTheirOneDictionary() {
        let base: [String: PropertyList] = ["A": 1, "B": 2, "C": 3]
        let values = MergedValues(base: base, overlay: ["B": 20, "D": 4])
        #expect(values.count == 4)
        #expect(values["A"] == 1)
        #expect(values["B"] == 20)
        #expect(values["D"] == 4)
        #expect(values["E"] == nil)
        #expect(values.dictionary == ["A": 1, "B": 20, "C": 3, "D": 4])
        var keys: [String] = []
        values.forEachKey { keys.append($0) }
        #expect(keys.sorted() == ["A", "B", "C", "D"])
    }

    @Test func aChangeOfOneKeyMakesTheTwoOne() {
        var values = MergedValues(base: ["A": 1, "B": 2], overlay: ["B": 20, "C": 3])
        #expect(values.removeValue(forKey: "B") == 20)
        #expect(values.overlay.isEmpty)
        #expect(values.dictionary == ["A": 1, "C": 3])
        #expect(values.count == 2)
        #expect(values.updateValue(5, forKey: "E") == nil)
        #expect(values.updateValue(6, forKey: "A") == 1)
        #expect(values.dictionary == ["A": 6, "C": 3, "E": 5])
        #expect(values.count == 3)
        var empty = MergedValues()
        #expect(empty.isEmpty)
        #expect(empty.removeValue(forKey: "A") == nil)
    }

    @Test func theMergeKeepsTheLargestLayerAsItIsAndResolvesTheOthersKeysByPrecedence() {
        let large = Dictionary(uniqueKeysWithValues: (0..<100).map { ("Key\($0)", PropertyList.integer($0)) })
        // In precedence order: arguments over the large domain over the registration domain.
        let arguments: [String: PropertyList] = ["Key1": "argument", "Only": "argument"]
        let registration: [String: PropertyList] = ["Key1": "registered", "Key2": "registered", "Late": 7]
        let merged = Defaults.merge([.volatile(arguments), .volatile(large), .volatile(registration)])
        // Only what differs from the large layer is kept beside it; the large layer is not copied.
        #expect(merged.overlay == ["Key1": "argument", "Only": "argument", "Late": 7])
        #expect(merged.base == large)
        #expect(merged.count == 102)
        var expected = large
        expected["Key1"] = "argument"
        expected["Only"] = "argument"
        expected["Late"] = 7
        #expect(merged.dictionary == expected)
        #expect(Defaults.merge([]).isEmpty)
    }

    @Test func theDeltasBetweenTwoViewsAreThoseOfTheirOneDictionaries() {
        let large = Dictionary(uniqueKeysWithValues: (0..<50).map { ("Key\($0)", PropertyList.integer($0)) })
        var changed = large
        changed["Key3"] = "three"
        changed["Key4"] = nil
        let before = MergedValues(base: large, overlay: ["Key1": "argument", "Only": 1, "Gone": 2])
        let after = MergedValues(base: changed, overlay: ["Key1": "argument", "Only": 5, "New": 3])
        func sorted(_ deltas: [KeyDelta]) -> [KeyDelta] { deltas.sorted { $0.key < $1.key } }
        let expected = KeyDelta.between(before.dictionary, after.dictionary)
        #expect(sorted(KeyDelta.between(before, after)) == sorted(expected))
        #expect(Set(expected.map(\.key)) == ["Key3", "Key4", "Only", "Gone", "New"])
        #expect(KeyDelta.between(after, after).isEmpty)
    }

    @Test func theMissingKeyFilterHoldsTheKeysOfBothParts() {
        let filter = MissingKeyFilter()
        let base = Dictionary(uniqueKeysWithValues: (0..<500).map { ("Key\($0)", PropertyList.integer($0)) })
        let values = MergedValues(base: base, overlay: ["Extra": 1, "Key3": 9])
        filter.insert(all: values)
        for key in base.keys { #expect(filter.mayContain(key)) }
        #expect(filter.mayContain("Extra"))
    }
}
