// swift-tools-version: 6.2
import PackageDescription

let package = Package(
    name: "ConfigDaemon",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "config-daemon", targets: ["ConfigDaemon"])
    ],
    dependencies: [
        .package(name: "LiveDefaults", path: "../..")
    ],
    targets: [
        .target(
            name: "DaemonCore",
            dependencies: [.product(name: "LiveDefaults", package: "LiveDefaults")]
        ),
        .executableTarget(
            name: "ConfigDaemon",
            dependencies: ["DaemonCore"]
        ),
        .testTarget(
            name: "DaemonCoreTests",
            dependencies: ["DaemonCore", "ConfigDaemon", .product(name: "LiveDefaults", package: "LiveDefaults")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
