// swift-tools-version: 6.2
import PackageDescription

let package = Package(
    name: "Preferences",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "preferences", targets: ["Preferences"])
    ],
    dependencies: [
        .package(name: "LiveDefaults", path: "../..")
    ],
    targets: [
        .target(
            name: "PreferencesCore",
            dependencies: [.product(name: "LiveDefaults", package: "LiveDefaults")]
        ),
        .executableTarget(
            name: "Preferences",
            dependencies: ["PreferencesCore"]
        ),
        .testTarget(
            name: "PreferencesCoreTests",
            dependencies: ["PreferencesCore", .product(name: "LiveDefaults", package: "LiveDefaults")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
