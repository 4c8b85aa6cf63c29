// swift-tools-version: 6.2
import PackageDescription

let package = Package(
    name: "LiveDefaults",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "LiveDefaults", targets: ["LiveDefaults"]),
        .executable(name: "defaults", targets: ["DefaultsTool"]),
        // The `defaults` command's value syntax and output formats, for programs (and fuzzers) that speak them.
        .library(name: "DefaultsToolSupport", targets: ["DefaultsToolSupport"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        // Only for `swift package generate-documentation`; nothing links it.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        .target(
            name: "LiveDefaults",
            dependencies: [.product(name: "Logging", package: "swift-log")]
        ),
        // What `defaults write` accepts as a value and how `defaults read` prints one.
        .target(
            name: "DefaultsToolSupport",
            dependencies: ["LiveDefaults"]
        ),
        // The `defaults` command: macOS defaults(1) on the same files, plus `watch`.
        .executableTarget(
            name: "DefaultsTool",
            dependencies: [
                "LiveDefaults",
                "DefaultsToolSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // A real second process for the cross-process tests (writers, Foundation.UserDefaults interop).
        .executableTarget(
            name: "LiveDefaultsTestHelper",
            dependencies: ["LiveDefaults"]
        ),
        // The benchmarks are a package of their own: Benchmarks/ (release mode, `Benchmarks/run`).
        // Python's plistlib as an independent reader of the files the tests write.
        .target(
            name: "PlistOracle",
            path: "Tests/PlistOracle"
        ),
        .testTarget(
            name: "LiveDefaultsTests",
            dependencies: ["LiveDefaults", "LiveDefaultsTestHelper", "PlistOracle"]
        ),
        // Runs the built `defaults` binary for every verb, flag and error.
        .testTarget(
            name: "DefaultsToolTests",
            dependencies: ["DefaultsTool", "DefaultsToolSupport", "LiveDefaults", "PlistOracle"]
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
