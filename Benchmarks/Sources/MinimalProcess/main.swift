// A Swift program that only prints (the standard library, no Foundation): the floor that whole-process rows are
// compared with (`Benchmarks/run` times it beside `defaults read` with hyperfine).
print(CommandLine.arguments.count)
