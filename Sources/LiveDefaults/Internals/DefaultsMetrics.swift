import CoreMetrics
import Foundation

/// What the library reports through swift-metrics, to whichever backend the program bootstrapped (Prometheus,
/// OpenTelemetry); names and labels in Docs/Integrations.md, "Metrics" (the `livedefaults_` prefix is a
/// contract).
///
/// Each event makes its metric through `MetricsSystem`'s factory when it happens rather than once per file: a
/// program that bootstraps its backend after opening its stores (configuration first, then metrics) still
/// gets them — a metric made before the bootstrap stays a no-op for good. Events are reloads, writes and
/// refusals, each of which costs a file's read or write already; reads and `set` report nothing.
///
/// **A store's open does not wait for swift-metrics.** Every metric is made through `MetricsSystem.factory`, whose
/// first use in a process makes its task-local override (the runtime instantiates its types): a tenth of a fresh
/// process's open (Docs/Integrations.md, "Metrics"). The reports of the
/// files a store reads while it opens (``deferringReports(_:)``: the series at their initial values, the first
/// reloads) are handed to the watcher's thread, which makes them right after the open; a store that does not
/// watch makes them at the end of its open. Every other report first makes those still waiting
/// (``report(_:waiting:)``), so that a domain's series change in the order their events happened.
enum DefaultsMetrics {
    /// Reports deferred by the opens of this process, not yet made.
    static let waiting = WaitingReports()
    /// How deeply this thread is inside store opens (``deferringReports(_:)``).
    private static let openingDepth = ThreadLocalWord()

    /// Runs `open`, a store's opening of its files, with the reports made on this thread meanwhile kept waiting
    /// (see the type's documentation); ``WaitingReports/makeAll()`` makes them.
    static func deferringReports<Result>(_ open: () -> Result) -> Result {
        let depth = openingDepth.value
        openingDepth.value = depth + 1
        defer { openingDepth.value = depth }
        return open()
    }

    /// Makes `report` now, after the reports still `waiting`; inside an open on this thread, keeps it waiting.
    static func report(_ report: @escaping @Sendable () -> Void, waiting: WaitingReports = waiting) {
        if openingDepth.value > 0 {
            waiting.keep(report)
            return
        }
        waiting.makeAll()
        report()
    }

    /// A domain's series at their initial values, when a process first looks at one of its files and a backend
    /// is bootstrapped: the counters at 0 for every origin and reason, `last_known_good` 0. Prometheus' own
    /// guidance: a counter that appears only at its first event cannot be alerted on (`increase(…) > 0` over a
    /// missing series is nothing, and an absent series looks like a dead target). With no backend (the default)
    /// this is one type check, once swift-metrics has been used in the process (its first use is the costly part,
    /// which an open leaves to the watcher's thread). Not remembered per domain (a program may open thousands):
    /// making a metric again is the backend's lookup.
    static func opened(domain: String) {
        guard !(MetricsSystem.factory is NOOPMetricsHandler) else { return }
        let labels = [("domain", domain)]
        for origin in ["local", "fleet", "external"] {
            Counter(label: "livedefaults_changes_total", dimensions: labels + [("origin", origin)]).increment(by: 0)
        }
        Counter(label: "livedefaults_reloads_total", dimensions: labels).increment(by: 0)
        Counter(label: "livedefaults_reload_failures_total", dimensions: labels).increment(by: 0)
        for reason in ["type", "schema"] {
            Counter(label: "livedefaults_refused_values_total", dimensions: labels + [("reason", reason)])
                .increment(by: 0)
        }
        Gauge(label: "livedefaults_last_known_good", dimensions: labels).record(0)
        Counter(label: "livedefaults_refused_versions_total", dimensions: labels).increment(by: 0)
    }

    /// Keys changed by a version applied here, by origin: `local` (this process's write), `fleet` (the agent's
    /// write of etcd's change), `external` (another process's version, read by a reload).
    static func changesApplied(_ count: Int, domain: String, origin: String) {
        guard count > 0 else { return }
        Counter(label: "livedefaults_changes_total", dimensions: [("domain", domain), ("origin", origin)])
            .increment(by: count)
    }

    /// A version of a domain's file read (at its first look or after a change), and the time it was.
    static func reloaded(domain: String, at time: Date) {
        Counter(label: "livedefaults_reloads_total", dimensions: [("domain", domain)]).increment()
        Gauge(label: "livedefaults_last_reload_success_timestamp_seconds", dimensions: [("domain", domain)])
            .record(time.timeIntervalSince1970)
        Gauge(label: "livedefaults_last_known_good", dimensions: [("domain", domain)]).record(0)
    }

    /// A version that could not be read: broken, not a dictionary, unreadable. `servingLastKnownGood` when the
    /// program keeps serving the last version that parsed.
    static func reloadFailed(domain: String, servingLastKnownGood: Bool) {
        Counter(label: "livedefaults_reload_failures_total", dimensions: [("domain", domain)]).increment()
        Gauge(label: "livedefaults_last_known_good", dimensions: [("domain", domain)])
            .record(servingLastKnownGood ? 1 : 0)
    }

    /// A value refused: `type` (a typed key cannot read it), `schema` (out of range, not a choice).
    static func refused(domain: String, reason: String) {
        Counter(label: "livedefaults_refused_values_total", dimensions: [("domain", domain), ("reason", reason)])
            .increment()
    }

    /// A version of a domain's file that a validator refused (``Defaults/addValidator(_:)``): another process's,
    /// kept out (this process serves the last version it accepted), or this process's own edit, not written.
    static func versionRefused(domain: String) {
        Counter(label: "livedefaults_refused_versions_total", dimensions: [("domain", domain)]).increment()
    }

    /// A write of a domain's file, from taking its lock to the version on disk.
    static func wrote(domain: String, nanoseconds: Int64) {
        CoreMetrics.Timer(
            label: "livedefaults_write_duration_seconds", dimensions: [("domain", domain)],
            preferredDisplayUnit: .seconds
        )
        .recordNanoseconds(nanoseconds)
    }

    /// The watcher's mode: how many directories it polls (inotify unavailable, or a remote file system) rather
    /// than watching them with inotify. Never set while inotify watches every directory.
    static func watcherPolls(directories: Int) {
        Gauge(label: "livedefaults_watcher_polled_directories").record(directories)
    }

    /// How many temporary changes of a domain are still to undo, as this process last looked.
    static func pendingReverts(domain: String, count: Int) {
        Gauge(label: "livedefaults_pending_reverts", dimensions: [("domain", domain)]).record(count)
    }

    /// The domain a file's metrics are labelled with: its name without `.plist` (a domain's layers share it).
    static func domain(ofFile path: String) -> String {
        let name = PathComponents.name(of: path)
        return name.hasSuffix(".plist") ? String(name.dropLast(6)) : name
    }
}

/// Metrics reports kept for later (``DefaultsMetrics/deferringReports(_:)``), made in the order they were kept.
final class WaitingReports: Sendable {
    /// The reports kept, as one closure that makes them in order; nil when none waits.
    private let reports = Lock<(@Sendable () -> Void)?>(nil)

    /// Keeps `report` to be made after those kept before it.
    func keep(_ report: @escaping @Sendable () -> Void) {
        reports.withLock { reports in
            guard let earlier = reports else {
                reports = report
                return
            }
            reports = { @Sendable in
                earlier()
                report()
            }
        }
    }

    /// Makes the reports kept so far, in their order (none: one lock).
    func makeAll() {
        let kept = reports.withLock { reports in
            defer { reports = nil }
            return reports
        }
        // Outside the lock: a backend's factory is the program's code.
        kept?()
    }
}
