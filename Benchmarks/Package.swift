// swift-tools-version: 6.2
import PackageDescription

// The benchmarks, always run in release mode:
// - LiveDefaultsBenchmarks: LiveDefaults, Foundation.UserDefaults and (through a small C helper built by the
//   `run` script) GNOME dconf side by side. Run it with `Benchmarks/run`.
// - LiveDefaultsLatency: the cross-process latency in detail (three kinds of writer, a burst, Foundation
//   with synchronize()).
// - MinimalProcess, FoundationRead, LiveDefaultsRead: a program that only prints, and one key read and printed
//   with Foundation and with LiveDefaults, timed beside `defaults read` with hyperfine.
// - FleetLatency: hosts kept in step through a three-member etcd cluster (`Benchmarks/fleet` starts it).
// - MemoryFootprint: resident memory of a domain (10 / 10,000 / 70,000 keys), 1,000 observers and 1,000 watched
//   domains, LiveDefaults beside Foundation.UserDefaults, each in a fresh process.
// BenchmarkSupport holds what both share: the timing harness, spawning themselves, the temporary
// XDG_CONFIG_HOME.
let package = Package(
    name: "LiveDefaultsBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "LiveDefaults", path: "..", traits: ["Fleet"]),
        .package(url: "https://github.com/apple/swift-configuration", from: "1.4.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
    ],
    targets: [
        .target(name: "BenchmarkSupport"),
        .executableTarget(
            name: "LiveDefaultsBenchmarks",
            dependencies: [
                "BenchmarkSupport", .product(name: "LiveDefaults", package: "LiveDefaults"),
                .product(name: "LiveDefaultsTesting", package: "LiveDefaults"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ]
        ),
        .executableTarget(
            name: "LiveDefaultsLatency",
            dependencies: [
                "BenchmarkSupport", .product(name: "LiveDefaults", package: "LiveDefaults"),
                .product(name: "LiveDefaultsConfiguration", package: "LiveDefaults"),
                .product(name: "LiveDefaultsTesting", package: "LiveDefaults"),
                .product(name: "Configuration", package: "swift-configuration"),
            ]
        ),
        // Hosts kept in step through etcd: the bare etcd floor, host to host, ten hosts (`Benchmarks/fleet`).
        .executableTarget(
            name: "FleetLatency",
            dependencies: [
                "BenchmarkSupport", .product(name: "LiveDefaults", package: "LiveDefaults"),
                .product(name: "LiveDefaultsFleet", package: "LiveDefaults"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The whole-process rows beside `defaults read`: a Swift program that only prints (the floor), and the
        // least a program can do to read and print one key with Foundation's UserDefaults and with LiveDefaults.
        .executableTarget(name: "MinimalProcess"),
        .executableTarget(name: "FoundationRead"),
        .executableTarget(
            name: "LiveDefaultsRead", dependencies: [.product(name: "LiveDefaults", package: "LiveDefaults")]),
        // Resident memory of a domain, an observer and a watched domain, beside Foundation's UserDefaults.
        .executableTarget(
            name: "MemoryFootprint",
            dependencies: [
                "BenchmarkSupport", .product(name: "LiveDefaults", package: "LiveDefaults"),
                .product(name: "LiveDefaultsTesting", package: "LiveDefaults"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
