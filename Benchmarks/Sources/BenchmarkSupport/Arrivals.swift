import Dispatch
import Foundation
import Synchronization

/// When each value of a key arrived in this process, recorded by a stream consumer (`record`) and awaited by
/// the benchmark that caused the write (`wait`).
public final class Arrivals: Sendable {
    private let times = Mutex<[Int: UInt64]>([:])
    private let recordedCount = Mutex(0)
    private let signal = DispatchSemaphore(value: 0)
    private let awaited = Mutex(Int.min)

    /// A recorder with no arrivals yet.
    public init() {}

    /// How many values arrived (a value arriving twice counts twice).
    public var count: Int { recordedCount.withLock { $0 } }

    /// Notes the arrival of a value, now; only its first arrival is kept.
    public func record(_ value: Int) {
        let time = now()
        let isAwaited = times.withLock { times in
            if times[value] == nil { times[value] = time }
            return awaited.withLock { $0 } == value
        }
        recordedCount.withLock { $0 += 1 }
        if isAwaited { signal.signal() }
    }

    /// The arrival time of a value (`CLOCK_MONOTONIC`, see ``now()``), waiting up to `seconds` for it; nil if
    /// it did not arrive.
    public func wait(for value: Int, seconds: Double) -> UInt64? {
        awaited.withLock { $0 = value }
        if let time = times.withLock({ $0[value] }) { return time }
        while signal.wait(timeout: .now() + seconds) == .success {
            if let time = times.withLock({ $0[value] }) { return time }
        }
        return times.withLock { $0[value] }
    }
}

/// One line from a pipe, without its newline; nil at the end of the input. Byte by byte, so that nothing
/// after the line is consumed.
public func readLine(from pipe: Pipe) -> String? {
    var line = Data()
    while true {
        let byte = pipe.fileHandleForReading.readData(ofLength: 1)
        if byte.isEmpty { return nil }
        if byte.first == UInt8(ascii: "\n") { return String(decoding: line, as: UTF8.self) }
        line.append(byte)
    }
}
