import Foundation
import FuzzSupport
import LiveDefaults
import LiveDefaultsTesting

/// An environment variable's text as an operator may set it, typed by each schema type, and any key's name
/// turned into a variable's: a value of the type or a reason, never a trap; names of `A`–`Z`, `0`–`9`, `_`.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let problem = Defaults.environmentParsingProblem(fuzzInput(start, count))
    require(problem == nil, problem ?? "")
    return 0
}
