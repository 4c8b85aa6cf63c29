import CoreMetrics
import Synchronization

/// A metrics backend for the benchmark: every handler adds to or stores into an atomic, as a real backend's
/// cheapest path does, so that a row with it bootstrapped measures what the library's reports cost, not a
/// backend's own bookkeeping.
final class CountingMetrics: MetricsFactory {
    final class Handler: CounterHandler, FloatingPointCounterHandler, RecorderHandler, TimerHandler, MeterHandler {
        let total = Atomic<Int64>(0)

        func increment(by amount: Int64) { total.add(amount, ordering: .relaxed) }
        func increment(by amount: Double) {
            total.add(Int64(amount.isFinite ? amount.rounded() : 0), ordering: .relaxed)
        }
        func decrement(by amount: Double) {
            total.subtract(Int64(amount.isFinite ? amount.rounded() : 0), ordering: .relaxed)
        }
        func reset() { total.store(0, ordering: .relaxed) }
        func record(_ value: Int64) { total.store(value, ordering: .relaxed) }
        func record(_ value: Double) {
            total.store(value.isFinite ? Int64(clamping: Int(value.rounded())) : 0, ordering: .relaxed)
        }
        func set(_ value: Int64) { total.store(value, ordering: .relaxed) }
        func set(_ value: Double) { record(value) }
        func recordNanoseconds(_ duration: Int64) { total.store(duration, ordering: .relaxed) }
    }

    func makeCounter(label: String, dimensions: [(String, String)]) -> CounterHandler { Handler() }
    func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> FloatingPointCounterHandler {
        Handler()
    }
    func makeMeter(label: String, dimensions: [(String, String)]) -> MeterHandler { Handler() }
    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> RecorderHandler { Handler() }
    func makeTimer(label: String, dimensions: [(String, String)]) -> TimerHandler { Handler() }
    func destroyCounter(_ handler: CounterHandler) {}
    func destroyFloatingPointCounter(_ handler: FloatingPointCounterHandler) {}
    func destroyMeter(_ handler: MeterHandler) {}
    func destroyRecorder(_ handler: RecorderHandler) {}
    func destroyTimer(_ handler: TimerHandler) {}
}
