import Foundation
import Testing

@testable import LiveDefaults

/// What the change log promises about the versions it lists: a reader tells its observers before anything is
/// recorded and never waits for the writers' lock; an entry is written only for a version that landed; a writer
/// stopped between its rename and its entry is named by the intent it left. Each process is a `DomainFile` of
/// its own over the same path (the state a process keeps), driven on the test's thread: no watcher, no sleep.
@Suite("The change log lists exactly the versions that landed, and reading never writes on the way")
struct ChangeLogTruthTests {
    let directory = TemporaryDirectory()
    var path: String { directory.file("com.example.truth.plist") }
    var logPath: String { ChangeLog.path(forDomainFile: path) }

    /// Writes `contents` as another program would (temp file + rename, no lock, no log); returns its version.
    @discardableResult
    func writeExternally(_ contents: [String: PropertyList]) throws -> UInt64 {
        let data = try PropertyList.dictionary(contents).encoded(as: .xml)
        _ = try SystemFileSystem.shared.replaceAtomically(path, with: data)
        return FastHash.hash(data)
    }

    /// A LiveDefaults process's write of `contents`' keys through its own state of the file.
    func writeThroughLibrary(_ contents: [String: PropertyList]) throws {
        let writer = DomainFile(path: path)
        for (key, value) in contents { try writer.set(value, forKey: key) }
        try writer.commit()
    }

    func summary(_ log: ChangeLog) -> [String] {
        log.entries.flatMap { entry in
            entry.changes.map { change in
                func text(_ value: ChangeLog.LoggedValue?) -> String {
                    switch value {
                    case nil: "-"
                    case .value(let value, _)?: "\(value)"
                    case .summary?: "summary"
                    case .unknown?: "?"
                    }
                }
                return "\(change.key) \(text(change.old))→\(text(change.new)) \(entry.writer?.executable ?? "external")"
            }
        }
    }

    @Test("a reader tells its observers first, records after, and never waits for a writer holding the lock")
    func deliveredBeforeRecorded() throws {
        try writeThroughLibrary(["A": 1])
        let reader = DomainFile(path: path)
        reader.loadIfNeeded()
        StorageContext.system.recorder.waitUntilIdle()
        let logged = ChangeLog.tail(at: logPath)
        let seen = Lock<[(delta: [String], tail: ChangeLog.Tail)]>([])
        let token = reader.addObserver { event in
            guard case .changed(let deltas, .external) = event else { return }
            let tail = ChangeLog.tail(at: logPath)
            let text = deltas.map { "\($0.key) \($0.old.map { "\($0)" } ?? "-")→\($0.new.map { "\($0)" } ?? "-")" }
            seen.withLock { $0.append((text, tail)) }
        }
        defer { reader.removeObserver(token) }

        // Another program writes while a writer holds the domain's lock: the reader is told at once, with the
        // log as it was, and records nothing (the lock's holder records the version it writes over).
        let held = try SystemFileSystem.shared.lockExclusively(reader.lockPath)
        try writeExternally(["A": 2])
        reader.reload(verifyContents: true)
        StorageContext.system.recorder.waitUntilIdle()
        #expect(seen.withLock { $0.map(\.delta) } == [["A 1→2"]])
        #expect(seen.withLock { $0.map(\.tail) } == [logged], "nothing was recorded before the observers were told")
        #expect(ChangeLog.tail(at: logPath) == logged, "the reader did not wait for the lock")
        SystemFileSystem.shared.close(held)

        // With the lock free, the next version is recorded after its delivery: one external change from the last
        // version the log knows.
        let version = try writeExternally(["A": 3])
        reader.reload(verifyContents: true)
        #expect(seen.withLock { $0.last?.tail } == logged, "told before it was recorded")
        StorageContext.system.recorder.waitUntilIdle()
        #expect(ChangeLog.tail(at: logPath) == .recorded(version))
        let me = ProcessIdentity.current.writer.executable
        #expect(summary(ChangeLog.read(at: logPath)) == ["A -→1 \(me)", "A 1→3 external"])
    }

    /// The first look's record is still waiting when the next version is read (the recorder's queue held, as a
    /// busy machine holds it): the two requests combine, and the change is recorded from the first version read,
    /// as it is when they are recorded one by one. Small: read whole; large: read through the index (the held
    /// version is then the changed keys' old values).
    @Test(
        "a change read right after the first look at a domain with no log is recorded, the two reads' records combined",
        arguments: [1, 2_000])
    func firstLookThenChangeCombined(keys: Int) throws {
        var contents = Dictionary(uniqueKeysWithValues: (0..<keys).map { ("Key\($0)", PropertyList.integer($0)) })
        let first = try writeExternally(contents)
        let reader = DomainFile(path: path)
        let second: UInt64
        do {
            // Resumed whatever happens: the records of every test in this process wait on this queue.
            StorageContext.system.recordsQueue.queue.suspend()
            defer { StorageContext.system.recordsQueue.queue.resume() }
            reader.loadIfNeeded()
            #expect(reader.isIndexed == (keys > 1), "a large XML file is read through its index the next time")
            contents["Key0"] = "changed"
            second = try writeExternally(contents)
            reader.reload(verifyContents: true)
        }
        StorageContext.system.recorder.waitUntilIdle()
        let log = ChangeLog.read(at: logPath)
        #expect(summary(log) == ["Key0 0→changed external"])
        let firstLine = try Data(contentsOf: URL(fileURLWithPath: logPath)).prefix { $0 != UInt8(ascii: "\n") }
        #expect(ChangeLog(parsing: firstLine).lastVersion == first, "the first version read is the base")
        #expect(ChangeLog.tail(at: logPath) == .recorded(second))
    }

    @Test("a writer stopped between its intent and its rename leaves no change; the next writer logs only its own")
    func intentThatNeverLanded() throws {
        try writeThroughLibrary(["A": 1])
        // A writer announced A = 42 and died before its rename: the file still holds A = 1.
        let stopped = ChangeLog.Writer(executable: "stopped-writer", pid: 99_999, uid: 0, revision: nil)
        let never = ChangeLog.Entry(
            time: Date(), origin: .local, writer: stopped, version: 0xDEAD,
            changes: [ChangeLog.Change(key: "A", old: ChangeLog.LoggedValue(1), new: ChangeLog.LoggedValue(42))])
        #expect(
            ChangeLog.appendIntent(
                never, previous: ["A": 1], previousVersion: 0, at: logPath, on: SystemFileSystem.shared) == nil)
        // A reader of the domain finds nothing to record; the next writer logs its own change only.
        let reader = DomainFile(path: path)
        reader.loadIfNeeded()
        StorageContext.system.recorder.waitUntilIdle()
        try writeThroughLibrary(["B": 1])
        let me = ProcessIdentity.current.writer.executable
        #expect(summary(ChangeLog.read(at: logPath)) == ["A -→1 \(me)", "B -→1 \(me)"])
    }

    @Test("a writer stopped between its rename and its entry is named by its intent, and only for that version")
    func intentNamesTheWriter() throws {
        try writeThroughLibrary(["A": 1])
        // A writer announced A = 2, renamed it into place and died before its entry.
        let data = try PropertyList.dictionary(["A": 2]).encoded(as: .xml)
        let version = FastHash.hash(data)
        let stopped = ChangeLog.Writer(executable: "stopped-writer", pid: 99_999, uid: 0, revision: nil)
        let landed = ChangeLog.Entry(
            time: Date(), origin: .local, writer: stopped, version: version,
            changes: [ChangeLog.Change(key: "A", old: ChangeLog.LoggedValue(1), new: ChangeLog.LoggedValue(2))])
        #expect(
            ChangeLog.appendIntent(
                landed, previous: ["A": 1], previousVersion: 0, at: logPath, on: SystemFileSystem.shared) == nil)
        _ = try SystemFileSystem.shared.replaceAtomically(path, with: data)
        // The next process that reads it records it, as the stopped writer's.
        let reader = DomainFile(path: path)
        reader.loadIfNeeded()
        StorageContext.system.recorder.waitUntilIdle()
        let me = ProcessIdentity.current.writer.executable
        #expect(summary(ChangeLog.read(at: logPath)) == ["A -→1 \(me)", "A 1→2 stopped-writer"])
        #expect(ChangeLog.read(at: logPath).entries.last?.origin == .local)
        // The intent was for that landing only: the same bytes written again later by an editor are external.
        try writeThroughLibrary(["A": 1])
        try writeExternally(["A": 2])
        let later = DomainFile(path: path)
        later.loadIfNeeded()
        StorageContext.system.recorder.waitUntilIdle()
        #expect(
            summary(ChangeLog.read(at: logPath)) == [
                "A -→1 \(me)", "A 1→2 stopped-writer", "A 2→1 \(me)", "A 1→2 external",
            ])
    }
}
