/// Who a process is, as the records it leaves beside the files name it: the change log's writer and refusal lines,
/// the readers' announcements (their file names and contents), the copies a write keeps of unreadable files.
///
/// A ``StorageContext``'s: the running process's for the real one (``current``); a test's context may stand for
/// another process on the same machine with an identity of its own. Whether a named process still runs is asked
/// of the context's ``ProcessTable`` (the system's unless a test gives its own): with the system's, a test's
/// identity names the test process or another that runs.
struct ProcessIdentity: Sendable, Hashable {
    var pid: Int32
    /// When the process started (``ProcessTable/startTime(of:)``): with the id, one process for good.
    var start: UInt64
    /// The executable's file name, "?" when it cannot be read.
    var executable: String
    /// The effective user.
    var uid: UserID

    /// The running process, read on first use: the executable's path and the start time cost a fresh process
    /// two reads of `/proc` it needs only when it writes a record.
    static let current = ProcessIdentity(
        pid: CurrentProcess.id, start: CurrentProcess.startTime,
        executable: CurrentProcess.executablePath.map(PathComponents.name(of:)) ?? "?",
        uid: CurrentProcess.effectiveUserID)

    /// This process as the change log names a writer or a reader.
    var writer: ChangeLog.Writer {
        ChangeLog.Writer(executable: executable, pid: pid, uid: uid, revision: nil)
    }
}
