// swift-tools-version: 6.2
import PackageDescription

// The side-by-side benchmark suite: LiveDefaults, Foundation.UserDefaults and (through a small C helper
// built by the `run` script) GNOME dconf. Run it with `Benchmarks/run`; always in release mode.
let package = Package(
    name: "LiveDefaultsBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "LiveDefaults", path: "..")
    ],
    targets: [
        .executableTarget(
            name: "LiveDefaultsBenchmarks",
            dependencies: [.product(name: "LiveDefaults", package: "LiveDefaults")]
        )
    ],
    swiftLanguageModes: [.v6]
)
