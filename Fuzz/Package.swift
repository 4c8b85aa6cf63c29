// swift-tools-version: 6.2
// libFuzzer targets for everything that reads outside input or formats what was read. A package of its own:
// each target is an executable whose `main` is libFuzzer's, built with `--sanitize fuzzer` (see `Fuzz/run`).
import PackageDescription

let targets = [
    "FuzzDecode", "FuzzXMLReader", "FuzzBinaryReader", "FuzzOpenStepReader",
    "FuzzWriters", "FuzzRoundTrip", "FuzzCodable", "FuzzValueParser", "FuzzIncrementalXML", "FuzzFleetRecords",
    "FuzzChangeLog", "FuzzEnvironment",
]

let package = Package(
    name: "LiveDefaultsFuzz",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "LiveDefaults", path: "..")],
    targets: [
        .target(
            name: "FuzzSupport",
            dependencies: [
                .product(name: "LiveDefaults", package: "LiveDefaults"),
                .product(name: "DefaultsToolSupport", package: "LiveDefaults"),
            ]
        )
    ]
        + targets.map { name in
            .executableTarget(
                name: name,
                dependencies: [
                    "FuzzSupport",
                    .product(name: "LiveDefaults", package: "LiveDefaults"),
                    .product(name: "DefaultsToolSupport", package: "LiveDefaults"),
                ]
                    // The incremental read's check is a test hook, in LiveDefaultsTesting.
                    + (["FuzzIncrementalXML", "FuzzChangeLog", "FuzzEnvironment"].contains(name)
                        ? [.product(name: "LiveDefaultsTesting", package: "LiveDefaults")] : [])
                    // The fleet's records, without the etcd client (which would build SwiftNIO with the fuzzer).
                    + (name == "FuzzFleetRecords"
                        ? [.product(name: "LiveDefaultsFleetRecords", package: "LiveDefaults")] : []),
                // No top-level code: libFuzzer supplies `main` and calls `LLVMFuzzerTestOneInput`.
                swiftSettings: [.unsafeFlags(["-parse-as-library"])]
            )
        },
    swiftLanguageModes: [.v6]
)
