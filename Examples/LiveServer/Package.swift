// swift-tools-version: 6.2
import PackageDescription

let package = Package(
    name: "LiveServer",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "LiveServer", targets: ["LiveServer"])
    ],
    dependencies: [
        // With the trait Fleet, as LiveDefaults' own scripts build it: this example is built and tested in the root
        // package's build folder (Scripts/example-build-folder), where its LiveDefaults targets are then the root's,
        // not compiled again with other flags. It links no fleet target; the trait only adds packages to resolve.
        .package(name: "LiveDefaults", path: "../..", traits: ["Fleet"]),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-configuration", from: "1.4.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
    ],
    targets: [
        .target(
            name: "App",
            dependencies: [
                .product(name: "LiveDefaults", package: "LiveDefaults"),
                .product(name: "LiveDefaultsConfiguration", package: "LiveDefaults"),
                .product(name: "LiveDefaultsService", package: "LiveDefaults"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        .executableTarget(
            name: "LiveServer",
            dependencies: [
                "App", .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        .testTarget(
            name: "AppTests",
            dependencies: [
                "App",
                "LiveServer",
                .product(name: "LiveDefaults", package: "LiveDefaults"),
                .product(name: "LiveDefaultsTesting", package: "LiveDefaults"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
