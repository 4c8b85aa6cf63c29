import Foundation
import FuzzSupport
import LiveDefaults
import LiveDefaultsTesting

/// The records beside a domain's file as any writer may have left them (torn lines, another tool's, noise): the
/// change log, read, is entries and checkpoints or nothing, never a trap, and every entry read writes back as
/// itself; the same bytes as its pending reverts (`.<d>.plist.reverts`) are entries or an error, and what is read
/// writes back as itself.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let data = fuzzInput(start, count)
    let problem = Defaults.changeLogParsingProblem(data)
    require(problem == nil, problem ?? "")
    let reverts = Defaults.pendingRevertsParsingProblem(data)
    require(reverts == nil, reverts ?? "")
    return 0
}
