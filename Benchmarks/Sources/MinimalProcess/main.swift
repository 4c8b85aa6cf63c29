// A Swift program that starts and exits, linked like the `defaults` command (Foundation): the floor that
// whole-process rows are compared with (`Benchmarks/run` times both with hyperfine).
import Foundation

exit(ProcessInfo.processInfo.arguments.isEmpty ? 1 : 0)
