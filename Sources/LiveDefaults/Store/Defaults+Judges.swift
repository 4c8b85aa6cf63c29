import Foundation

/// The store's side of validators (``Defaults/addValidator(_:)``): judges of the whole set of values a new
/// version of one of its domain's files would make, asked by the files (``FileJudges``) with no lock held.
extension Defaults {
    /// A judge of the store's values: why it refuses them, or nil.
    typealias ValuesJudge = @Sendable (_ values: [String: PropertyList]) -> String?

    /// Adds a judge of the store's values as a new version of its domain's files would make them; returns its
    /// id. The first one makes the store a judge of each file of its application domain (or suite) in its search
    /// list.
    func addJudge(_ judge: @escaping ValuesJudge) -> UInt64 {
        let id = Self.nextJudgeID.withLock { id in
            id += 1
            return id
        }
        let (files, newlyJudged): ([DomainFile], Bool) = state.withLock { state in
            var validation = state.validation ?? StoreValidation()
            defer { state.validation = validation }
            validation.judges.append((id, judge))
            guard validation.judgedFiles.isEmpty else { return (validation.judgedFiles, false) }
            let files = Array(state.search.persistent[configuration.applicationDomain]?.files.map(\.file) ?? [])
            validation.judgedFiles = files
            return (files, true)
        }
        if newlyJudged {
            for file in files { startJudging(file) }
        }
        // The versions served so far were judged without this judge: a version it refuses is served no more.
        for file in files { file.judgeHeldVersion() }
        return id
    }

    /// Makes the store a judge of `file` (one of its application domain's files, in ``StoreValidation``'s
    /// list): when its first judge is added, and when a layer of the domain is attached later (its directory
    /// appeared).
    func startJudging(_ file: DomainFile) {
        file.addJudge(
            { [weak self, weak file] candidate in
                guard let self, let file else { return nil }
                return self.verdict(on: candidate, for: file)
            }, id: fileJudgeID)
    }

    /// Removes the judge `id`; the last one removed takes the store's judge off its files.
    func removeJudge(id: UInt64) {
        let files: [DomainFile] = state.withLock { state in
            guard var validation = state.validation else { return [] }
            validation.judges.removeAll { $0.id == id }
            guard validation.judges.isEmpty else {
                state.validation = validation
                return []
            }
            state.validation = nil
            return validation.judgedFiles
        }
        for file in files { file.removeJudge(id: fileJudgeID) }
    }

    /// Why the store's judges refuse the values that `file` holding `candidate` would make, or nil: every key of
    /// the search list, with the file's in the file's place. The values are taken under the store's lock; the
    /// judges are asked after it.
    func verdict(on candidate: [String: PropertyList], for file: DomainFile) -> String? {
        let (values, judges) = state.withLock { state -> ([String: PropertyList], [Judge]) in
            guard let judges = state.validation?.judges, !judges.isEmpty else { return ([:], []) }
            var values = state.view.merged.dictionary
            for key in Set(file.contents.keys).union(candidate.keys) {
                values[key] = resolve(key, state, replacing: file, with: candidate[key])
            }
            return (values, judges)
        }
        for (_, judge) in judges {
            if let reason = judge(values) { return reason }
        }
        return nil
    }

    /// This store's id as a judge of its files (one per store, whatever its number of judges).
    var fileJudgeID: UInt64 { UInt64(UInt(bitPattern: ObjectIdentifier(self).hashValue)) }

    typealias Judge = (id: UInt64, judge: ValuesJudge)

    /// Ids of judges, for the process.
    private static let nextJudgeID = Lock<UInt64>(0)
}

/// A store's judges, and the files it asked to judge (part of its state, under its lock).
struct StoreValidation {
    var judges: [Defaults.Judge] = []
    var judgedFiles: [DomainFile] = []
}
