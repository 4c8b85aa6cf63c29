// swift-tools-version: 6.2
import PackageDescription

let package = Package(
    name: "ConfigDaemon",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "config-daemon", targets: ["ConfigDaemon"])
    ],
    dependencies: [
        .package(name: "LiveDefaults", path: "../.."),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
    ],
    targets: [
        .target(
            name: "DaemonCore",
            dependencies: [
                .product(name: "LiveDefaults", package: "LiveDefaults"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ]
        ),
        .executableTarget(
            name: "ConfigDaemon",
            dependencies: [
                "DaemonCore",
                .product(name: "LiveDefaultsService", package: "LiveDefaults"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .testTarget(
            name: "DaemonCoreTests",
            dependencies: [
                "DaemonCore", "ConfigDaemon", .product(name: "LiveDefaults", package: "LiveDefaults"),
                .product(name: "LiveDefaultsTesting", package: "LiveDefaults"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
