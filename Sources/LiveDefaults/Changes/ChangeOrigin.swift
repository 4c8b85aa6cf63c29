/// Who made a change, as the one that reports it saw it: a store's change streams (``KeyChange/origin``), a
/// domain's change log (``LoggedChange/origin``) and the metrics of applied changes name it alike.
///
/// What reports a change is a process: the one whose store streams it, or, in the change log, the one that
/// recorded the entry (a writer records its own versions; a reader records a version nobody recorded).
public enum ChangeOrigin: String, Sendable, Hashable, Codable {
    /// The reporting process, through the library: a store's own `set`, removal, registration or replaced domain;
    /// in the change log, the program or `defaults` command that wrote the version (``LoggedChange/executable``
    /// names it).
    case local
    /// The reporting process as the fleet agent (`defaults sync`), applying etcd's change: in the agent's own
    /// store, the changes of the versions it writes for the fleet; in the change log, those versions
    /// (``LoggedChange/revision`` says which revision of etcd).
    case fleet
    /// Someone else, seen in the file: in a store's streams, another process or a person editing the file; in the
    /// change log, a writer that is not LiveDefaults (an editor, another tool), noticed by a LiveDefaults process
    /// that read its version.
    case external
}
