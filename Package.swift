// swift-tools-version: 6.2
import PackageDescription

let package = Package(
    name: "LiveDefaults",
    // Platforms: built and tested on Linux only (Debian, Swift 6.3), and no other platform is claimed. The
    // core library reaches the operating system through one folder (Sources/LiveDefaults/Internals/System/,
    // Scripts/check-platform); CI also builds and runs the suite with inotify compiled out
    // (-DLIVEDEFAULTS_POLLING_ONLY), the polling watcher another platform would start with. Nothing has been
    // built on macOS, so no Apple platform is declared (README, "Platforms").
    products: [
        .library(name: "LiveDefaults", targets: ["LiveDefaults"]),
        // For tests of programs that use LiveDefaults: a clock that moves when told, observer counts.
        .library(name: "LiveDefaultsTesting", targets: ["LiveDefaultsTesting"]),
        .executable(name: "defaults", targets: ["DefaultsTool"]),
        // `defaults sync`, a program of its own that `defaults` runs (as git runs git-foo): the fleet's HTTP stack
        // stays out of the `defaults` binary. Syncs only when built with the trait Fleet.
        .executable(name: "defaults-sync", targets: ["DefaultsSyncTool"]),
        // The `defaults` command's value syntax and output formats, for programs (and fuzzers) that speak them.
        .library(name: "DefaultsToolSupport", targets: ["DefaultsToolSupport"]),
        // A live swift-configuration provider over the same files (LiveDefaultsProvider).
        .library(name: "LiveDefaultsConfiguration", targets: ["LiveDefaultsConfiguration"]),
        // A swift-service-lifecycle Service that flushes and ends the streams on graceful shutdown.
        .library(name: "LiveDefaultsService", targets: ["LiveDefaultsService"]),
        // A domain kept in step across machines through etcd (FleetSync; `defaults sync`). Needs the trait Fleet.
        .library(name: "LiveDefaultsFleet", targets: ["LiveDefaultsFleet"]),
        // The fleet's records as etcd holds them (a host, its health, a rollout) and FleetError: what reads them
        // without the etcd client (LiveDefaultsFleet re-exports it; the fuzz targets read through it).
        .library(name: "LiveDefaultsFleetRecords", targets: ["LiveDefaultsFleetRecords"]),
    ],
    // Fleet brings in AsyncHTTPClient, SwiftNIO and swift-nio-ssl. Off by default, so that a package depending on
    // LiveDefaults neither builds nor resolves them unless it asks: `.package(url: …, from: …, traits: ["Fleet"])`.
    // This package's own scripts build with `--traits Fleet` (Docs/Integrations.md).
    traits: [
        .trait(name: "Fleet", description: "LiveDefaultsFleet and `defaults sync`: domains kept in step through etcd."),
        .default(enabledTraits: []),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // The core's metrics API (no dependencies; no backend: the program bootstraps its own).
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        // Only the integration targets use these two; the core library stays on Foundation and swift-log.
        .package(url: "https://github.com/apple/swift-configuration", from: "1.4.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        // Only LiveDefaultsFleet (and `defaults-sync` through it) uses these, with the trait Fleet: etcd's JSON
        // gateway over HTTP.
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        // Only for `swift package generate-documentation`; nothing links it.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        .target(
            name: "LiveDefaults",
            dependencies: [
                "CLiveDefaultsSystem", .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ]
        ),
        // Test doubles and hooks, kept out of the core module's API (as swift-configuration's ConfigurationTesting).
        .target(
            name: "LiveDefaultsTesting",
            dependencies: ["LiveDefaults", "CLiveDefaultsTesting"]
        ),
        // What ProcessResources reads that Swift's Glibc module does not export (mallinfo2).
        .target(name: "CLiveDefaultsTesting"),
        // The one system call Swift's Glibc module does not export (statfs, to tell network file systems).
        .target(name: "CLiveDefaultsSystem"),
        // What `defaults write` accepts as a value and how `defaults read` prints one.
        .target(
            name: "DefaultsToolSupport",
            dependencies: ["LiveDefaults"]
        ),
        // Integrations, each in a target of its own that adds one dependency to the core library: an app that
        // links only LiveDefaults builds neither (see Docs/Integrations.md).
        .target(
            name: "LiveDefaultsConfiguration",
            dependencies: ["LiveDefaults", .product(name: "Configuration", package: "swift-configuration")]
        ),
        .target(
            name: "LiveDefaultsService",
            dependencies: ["LiveDefaults", .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")]
        ),
        // Foundation and the core only, with or without the trait: fuzzed in the Fuzz package, which cannot
        // build SwiftNIO with the fuzzer's instrumentation in CI's time.
        .target(name: "LiveDefaultsFleetRecords", dependencies: ["LiveDefaults"]),
        .target(
            name: "LiveDefaultsFleet",
            dependencies: [
                "LiveDefaults",
                "LiveDefaultsFleetRecords",
                // The keys under rollout, a file the agent keeps and `defaults write` reads (KeysUnderRollout).
                "DefaultsToolSupport",
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: .when(traits: ["Fleet"])),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio", condition: .when(traits: ["Fleet"])),
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["Fleet"])),
                .product(name: "NIOFoundationCompat", package: "swift-nio", condition: .when(traits: ["Fleet"])),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: .when(traits: ["Fleet"])),
                .product(name: "NIOSSL", package: "swift-nio-ssl", condition: .when(traits: ["Fleet"])),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The `defaults` command: macOS defaults(1) on the same files, plus `watch`; `sync` runs `defaults-sync`.
        .executableTarget(
            name: "DefaultsTool",
            dependencies: [
                "LiveDefaults",
                "DefaultsToolSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // `defaults sync DOMAIN --etcd URLS`, run by `defaults`; without the trait Fleet it says how to build it.
        .executableTarget(
            name: "DefaultsSyncTool",
            dependencies: [
                "DefaultsToolSupport",
                "LiveDefaults",
                "LiveDefaultsFleet",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ]
        ),
        // A real second process for the cross-process tests (writers, Foundation.UserDefaults interop).
        .executableTarget(
            name: "LiveDefaultsTestHelper",
            dependencies: ["LiveDefaults", "LiveDefaultsTesting"]
        ),
        // The benchmarks are a package of their own: Benchmarks/ (release mode, `Benchmarks/run`).
        // Python's plistlib as an independent reader of the files the tests write.
        .target(
            name: "PlistOracle",
            path: "Tests/PlistOracle"
        ),
        // What the test targets share: running the helper, waiting for a condition or a store's value.
        .target(
            name: "TestProcesses",
            dependencies: ["LiveDefaults", "LiveDefaultsTesting"],
            path: "Tests/TestProcesses"
        ),
        .testTarget(
            name: "LiveDefaultsTests",
            dependencies: [
                "LiveDefaults", "LiveDefaultsTestHelper", "LiveDefaultsTesting", "PlistOracle", "TestProcesses",
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ]
        ),
        .testTarget(
            name: "LiveDefaultsIntegrationTests",
            dependencies: [
                "LiveDefaults", "LiveDefaultsConfiguration", "LiveDefaultsService", "LiveDefaultsTestHelper",
                "LiveDefaultsTesting", "PlistOracle", "TestProcesses",
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "ConfigurationTesting", package: "swift-configuration"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ]
        ),
        // A real etcd cluster (three members on loopback) and `defaults sync` agents, one per simulated host.
        .testTarget(
            name: "LiveDefaultsFleetTests",
            dependencies: [
                "DefaultsTool", "DefaultsSyncTool", "LiveDefaults", "LiveDefaultsFleet", "LiveDefaultsTestHelper",
                "LiveDefaultsTesting", "TestProcesses",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["Fleet"])),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: .when(traits: ["Fleet"])),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // Runs the built `defaults` binary for every verb, flag and error.
        .testTarget(
            name: "DefaultsToolTests",
            dependencies: [
                "DefaultsTool", "DefaultsSyncTool", "DefaultsToolSupport", "LiveDefaults", "LiveDefaultsTestHelper",
                "LiveDefaultsTesting", "PlistOracle", "TestProcesses",
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)

for target in package.targets {
    var settings = target.swiftSettings ?? []
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    settings.append(.enableUpcomingFeature("InternalImportsByDefault"))
    settings.append(.enableUpcomingFeature("MemberImportVisibility"))
    target.swiftSettings = settings
}
