import Glibc

/// A user account from the system's user database (`/etc/passwd`, or NSS).
///
/// Looked up with `getpwnam_r`, which writes into a buffer of ours: `getpwnam` returns a static record that
/// another thread's lookup (ours or any library's) may overwrite while it is read.
struct UserAccount: Sendable, Equatable {
    var name: String
    var home: String
    var uid: uid_t
    var gid: gid_t

    /// The largest buffer a lookup grows to (`ERANGE` doubles it from `sysconf(_SC_GETPW_R_SIZE_MAX)`).
    static let bufferLimit = 1 << 20

    /// The account named `name`; nil when there is none, the name holds a NUL, or the lookup failed.
    init?(named name: String) {
        guard !name.isEmpty, !name.utf8.contains(0) else { return nil }
        let suggested = sysconf(Int32(_SC_GETPW_R_SIZE_MAX))
        var size = suggested > 0 ? min(Int(suggested), Self.bufferLimit) : 1024
        while true {
            var record = passwd()
            var result: UnsafeMutablePointer<passwd>?
            var found: (home: String, uid: uid_t, gid: gid_t)?
            let status = withUnsafeTemporaryAllocation(of: CChar.self, capacity: size) { buffer -> Int32 in
                guard let base = buffer.baseAddress else { return ENOMEM }
                let status = getpwnam_r(name, &record, base, size, &result)
                if status == 0, result != nil, let directory = record.pw_dir {
                    found = (String(cString: directory), record.pw_uid, record.pw_gid)
                }
                return status
            }
            if let found {
                self.name = name
                home = found.home
                uid = found.uid
                gid = found.gid
                return
            }
            guard status == ERANGE, size < Self.bufferLimit else { return nil }
            size = min(size * 2, Self.bufferLimit)
        }
    }
}
