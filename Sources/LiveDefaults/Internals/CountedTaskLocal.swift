import Synchronization

/// A task-local value that costs one relaxed atomic load to read while nothing binds it: a process-wide count of
/// the bindings under way says when no task is inside one, so that the task-local lookup — which every `set`
/// would otherwise pay — is skipped. Relaxed is enough: a task sees its own increment. The value is the
/// binding's while it lasts: a task started inside that outlives it sees nil afterwards (so only what the body
/// does before it returns is attributed).
final class CountedTaskLocal<Value: Sendable>: Sendable {
    private let local = TaskLocal<Value?>(wrappedValue: nil)
    private let bindings = Atomic<Int>(0)

    init() {}

    /// Runs `body` with ``current`` bound to `value` until it returns.
    func withValue<Result>(_ value: Value, _ body: () throws -> Result) rethrows -> Result {
        bindings.add(1, ordering: .relaxed)
        defer { bindings.subtract(1, ordering: .relaxed) }
        return try local.withValue(value, operation: body)
    }

    /// The value bound for the current task or thread, nil outside any binding.
    var current: Value? {
        bindings.load(ordering: .relaxed) == 0 ? nil : local.get()
    }
}
