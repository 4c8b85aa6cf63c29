// swift-tools-version: 6.2
import PackageDescription

// The benchmarks, always run in release mode:
// - LiveDefaultsBenchmarks: LiveDefaults, Foundation.UserDefaults and (through a small C helper built by the
//   `run` script) GNOME dconf side by side. Run it with `Benchmarks/run`.
// - LiveDefaultsLatency: the cross-process latency in detail (three kinds of writer, a burst, Foundation
//   with synchronize()).
// - MinimalProcess: a program that only starts and exits, timed beside `defaults read` with hyperfine.
// BenchmarkSupport holds what both share: the timing harness, spawning themselves, the temporary
// XDG_CONFIG_HOME.
let package = Package(
    name: "LiveDefaultsBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "LiveDefaults", path: ".."),
        .package(url: "https://github.com/apple/swift-configuration", from: "1.4.0"),
    ],
    targets: [
        .target(name: "BenchmarkSupport"),
        .executableTarget(
            name: "LiveDefaultsBenchmarks",
            dependencies: ["BenchmarkSupport", .product(name: "LiveDefaults", package: "LiveDefaults")]
        ),
        .executableTarget(
            name: "LiveDefaultsLatency",
            dependencies: [
                "BenchmarkSupport", .product(name: "LiveDefaults", package: "LiveDefaults"),
                .product(name: "LiveDefaultsConfiguration", package: "LiveDefaults"),
                .product(name: "Configuration", package: "swift-configuration"),
            ]
        ),
        // A Swift program that only starts and exits: the floor of the whole-process rows.
        .executableTarget(name: "MinimalProcess"),
    ],
    swiftLanguageModes: [.v6]
)
