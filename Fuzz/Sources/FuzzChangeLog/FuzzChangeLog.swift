import Foundation
import FuzzSupport
import LiveDefaults
import LiveDefaultsTesting

/// A domain's change log as any writer may have left it (torn lines, another tool's, noise): read, it is
/// entries and checkpoints or nothing, never a trap, and every entry read writes back as itself.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let problem = Defaults.changeLogParsingProblem(fuzzInput(start, count))
    require(problem == nil, problem ?? "")
    return 0
}
