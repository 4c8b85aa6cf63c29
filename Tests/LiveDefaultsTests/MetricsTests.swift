import CoreMetrics
import Foundation
import LiveDefaultsTesting
import MetricsTestKit
import TestProcesses
import Testing

@testable import LiveDefaults

/// The metrics a store reports through swift-metrics, read back from MetricsTestKit's factory, bootstrapped once
/// for the whole test process (swift-metrics takes one bootstrap a process). Each test uses a domain of its own,
/// so that its metrics are its own.
@Suite("Metrics through swift-metrics: changes by origin, reloads, refusals, writes", .blockingWork)
struct MetricsTests {
    static let metrics: TestMetrics = {
        let metrics = TestMetrics()
        MetricsSystem.bootstrap(metrics)
        return metrics
    }()

    func total(_ label: String, _ dimensions: [(String, String)]) -> Int64 {
        (try? Self.metrics.expectCounter(label, dimensions).totalValue) ?? 0
    }

    @Test("every series of a domain exists at its initial value as soon as a store holds it, before any event")
    func exportedFromTheStart() async throws {
        let metrics = Self.metrics
        let machine = SimulatedMachine(seed: 43)
        let domain = "com.example.metrics.start.\(UUID().uuidString.prefix(8))"
        // No file at all: nothing read, nothing changed — and every series there, at 0.
        let defaults = try #require(machine.process("server").defaults(suiteName: domain))
        _ = defaults.integer(forKey: "RateLimit")
        let labels = [("domain", domain)]
        // Made by the watcher's work right after the open, or by any report of the process before that (see
        // `DefaultsMetrics`).
        await machine.settle()
        #expect((try? metrics.expectGauge("livedefaults_last_known_good", labels)) != nil)
        for origin in ["local", "fleet", "external"] {
            #expect(
                try metrics.expectCounter("livedefaults_changes_total", labels + [("origin", origin)]).totalValue == 0)
        }
        #expect(try metrics.expectCounter("livedefaults_reloads_total", labels).totalValue == 0)
        #expect(try metrics.expectCounter("livedefaults_reload_failures_total", labels).totalValue == 0)
        for reason in ["type", "schema"] {
            #expect(
                try metrics.expectCounter("livedefaults_refused_values_total", labels + [("reason", reason)])
                    .totalValue == 0)
        }
        #expect(try metrics.expectGauge("livedefaults_last_known_good", labels).lastValue == 0)
        withExtendedLifetime(defaults) {}
    }

    @Test("an open's reports wait for its end and are made in order; a store that does not watch makes them itself")
    func openReportsWait() throws {
        let metrics = Self.metrics
        let domain = "com.example.metrics.order.\(UUID().uuidString.prefix(8))"
        let labels = [("domain", domain)]
        // Reports of its own, not the process's (other tests' stores make reports meanwhile, which make the
        // process's waiting ones).
        let waiting = WaitingReports()
        // Inside an open (on this thread): kept waiting, not made.
        DefaultsMetrics.deferringReports {
            DefaultsMetrics.report(
                { Gauge(label: "livedefaults_last_known_good", dimensions: labels).record(1) }, waiting: waiting)
            DefaultsMetrics.report(
                { Counter(label: "livedefaults_reloads_total", dimensions: labels).increment() }, waiting: waiting)
        }
        #expect(throws: (any Error).self) { try metrics.expectGauge("livedefaults_last_known_good", labels) }
        // Another report, outside any open: the waiting ones first, then its own (the gauge ends at its value).
        DefaultsMetrics.report(
            { Gauge(label: "livedefaults_last_known_good", dimensions: labels).record(0) }, waiting: waiting)
        #expect(try metrics.expectGauge("livedefaults_last_known_good", labels).values == [1, 0])
        #expect(total("livedefaults_reloads_total", labels) == 1)

        // A store without a watcher: its open's series exist when the open returns.
        let directory = TemporaryDirectory()
        let unwatched = "com.example.metrics.unwatched.\(UUID().uuidString.prefix(8))"
        var configuration = Defaults.Configuration.rooted(at: directory.path, applicationDomain: unwatched)
        configuration.watching = .off
        let defaults = try Defaults(configuration: configuration)
        #expect(try metrics.expectCounter("livedefaults_reloads_total", [("domain", unwatched)]).totalValue == 0)
        withExtendedLifetime(defaults) {}
    }

    @Test("a write here, another process's write, a broken file and its repair, a refused value")
    func reported() async throws {
        let metrics = Self.metrics
        let machine = SimulatedMachine(seed: 42)
        let domain = "com.example.metrics.\(UUID().uuidString.prefix(8))"
        let defaults = try #require(machine.process("server").defaults(suiteName: domain))
        let other = try #require(machine.process("other").defaults(suiteName: domain))
        let labels = [("domain", domain)]

        // This process's write: its keys as local changes, its duration.
        defaults.set(5, forKey: "RateLimit")
        defaults.set("dark", forKey: "Theme")
        #expect(defaults.synchronize())
        #expect(total("livedefaults_changes_total", labels + [("origin", "local")]) == 2)
        #expect(try metrics.expectTimer("livedefaults_write_duration_seconds", labels).values.allSatisfy { $0 > 0 })

        // Another process's write: read by the watcher, counted as an external change and a reload.
        await machine.settle()
        let reloadsBefore = total("livedefaults_reloads_total", labels)
        other.set(3, forKey: "RateLimit")
        #expect(other.synchronize())
        await machine.settle()
        #expect(defaults.integer(forKey: "RateLimit") == 3)
        #expect(total("livedefaults_changes_total", labels + [("origin", "external")]) >= 1)
        #expect(total("livedefaults_reloads_total", labels) > reloadsBefore)
        let stamp = try #require(
            try metrics.expectGauge("livedefaults_last_reload_success_timestamp_seconds", labels).lastValue)
        #expect(abs(stamp - machine.now.timeIntervalSince1970) < 60, "on the machine's clock")

        // A broken version: a failed reload, the last known good version served; repaired, it is not any more.
        machine.write(Data("<plist><dict><key>RateLimit".utf8), to: machine.path(ofDomain: domain), as: .foundation)
        await machine.settle()
        // Both of the machine's processes read it: they report to this test process's one metrics backend.
        #expect(total("livedefaults_reload_failures_total", labels) == 2)
        #expect(try metrics.expectGauge("livedefaults_last_known_good", labels).lastValue == 1)
        #expect(defaults.integer(forKey: "RateLimit") == 3, "the last known good version is served")
        other.set(4, forKey: "RateLimit")
        #expect(other.synchronize())
        await machine.settle()
        #expect(defaults.integer(forKey: "RateLimit") == 4)
        #expect((try? metrics.expectGauge("livedefaults_last_known_good", labels).lastValue) == 0)

        // A value a typed key refuses (written by another process): refused for its type.
        let limit = DefaultsKey<Int>("Limit", default: 1)
        #expect(defaults[limit] == 1)
        other.set("many", forKey: "Limit")
        #expect(other.synchronize())
        await machine.settle()
        #expect(defaults.string(forKey: "Limit") == "many")
        #expect(defaults[limit] == 1)
        #expect(total("livedefaults_refused_values_total", labels + [("reason", "type")]) == 1)
    }

    @Test("a temporary change counts as a pending revert in every process that sees it, until it is undone")
    func pendingReverts() async throws {
        let metrics = Self.metrics
        let machine = SimulatedMachine(seed: 44)
        let domain = "com.example.metrics.temporary.\(UUID().uuidString.prefix(8))"
        let defaults = try #require(machine.process("server").defaults(suiteName: domain))
        let other = try #require(machine.process("ops").defaults(suiteName: domain))
        let labels = [("domain", domain)]
        #expect(defaults.integer(forKey: "RateLimit") == 0)
        await machine.settle()
        #expect((try? metrics.expectGauge("livedefaults_pending_reverts", labels)) == nil, "none seen yet")
        try other.transaction(for: .seconds(600)) { $0.set(5, forKey: "RateLimit") }
        await machine.settle()
        #expect(try metrics.expectGauge("livedefaults_pending_reverts", labels).lastValue == 1)
        await machine.advance(by: .seconds(601))
        #expect(defaults.integer(forKey: "RateLimit") == 0)
        #expect(try metrics.expectGauge("livedefaults_pending_reverts", labels).lastValue == 0)
    }

    @Test("a version refused when the program starts counts as a refused version")
    func refusedAtStart() async throws {
        _ = Self.metrics  // bootstrapped before the store reports
        let machine = SimulatedMachine(seed: 44)
        let domain = "com.example.metrics.restart.\(UUID().uuidString.prefix(8))"
        // Another process's writes, logged: an accepted version, then one the program below refuses.
        let other = try #require(machine.process("other").defaults(suiteName: domain))
        other.set(20, forKey: "MaxPool")
        #expect(other.synchronize())
        other.set(60, forKey: "MinPool")
        #expect(other.synchronize())
        machine.process("other").crash()
        struct PoolError: Error {}
        let minPool = DefaultsKey<Int>("MinPool", default: 1)
        let maxPool = DefaultsKey<Int>("MaxPool", default: 10)
        var configuration = machine.process("server").configuration(applicationDomain: domain)
        configuration.validators = [{ guard $0[minPool] <= $0[maxPool] else { throw PoolError() } }]
        let defaults = try machine.process("server").defaults(configuration: configuration)
        #expect(defaults[minPool] == 1 && defaults[maxPool] == 20, "the log's version before the refused one")
        await machine.settle()
        #expect(self.total("livedefaults_refused_versions_total", [("domain", domain)]) == 1)
        withExtendedLifetime(defaults) {}
    }

    @Test("a watcher that polls says how many directories it polls")
    func watcherMode() async throws {
        let metrics = Self.metrics
        let directory = TemporaryDirectory()
        var configuration = Defaults.Configuration.rooted(at: directory.path, applicationDomain: "com.example.polled")
        let watcher = FileWatcher(polling: true)
        configuration.watcher = watcher
        let defaults = try Defaults(configuration: configuration)
        #expect(defaults.string(forKey: "Anything") == nil)
        // The watcher sets its gauges on its own thread, as it starts polling: settled, it has.
        watcher.settle()
        #expect(((try? metrics.expectGauge("livedefaults_watcher_polled_directories").lastValue) ?? 0) >= 1)
    }
}
