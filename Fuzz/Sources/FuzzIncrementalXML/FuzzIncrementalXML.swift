import Foundation
import FuzzSupport

import LiveDefaults
import LiveDefaultsTesting

/// Reading a large XML domain file's next version through the previous version's index (only the entries
/// around the changed bytes are parsed) must give exactly what reading it whole gives, or fall back to that.
///
/// The input is two versions: `old`, a 0 byte, `new`. Without a 0 byte, `old` is the input and `new` the same
/// with its middle byte removed, so that every XML seed of the corpus is an edit to start from.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let input = fuzzInput(start, count)
    let old: Data
    var new: Data
    if let split = input.firstIndex(of: 0) {
        old = input[..<split]
        new = input[(split + 1)...]
    } else {
        old = input
        new = input
        if !new.isEmpty { new.remove(at: new.startIndex + new.count / 2) }
    }
    // Rebased copies: the reader indexes from 0.
    let disagreement = PropertyList.incrementalXMLReadDisagreement(old: Data(old), new: Data(new))
    require(disagreement == nil, disagreement ?? "")
    return 0
}
