// swift-tools-version: 6.2
import PackageDescription

// The transport benchmark: a line echo server on RunnelUV alone (no reactive operators, no
// protocol), driven by client.c. Build in release: `swift build -c release`.
let package = Package(
    name: "transport-bench",
    dependencies: [.package(name: "Runnel", path: "../..")],
    targets: [
        .executableTarget(
            name: "transport-echo",
            dependencies: [.product(name: "RunnelUV", package: "Runnel")],
            swiftSettings: [.treatAllWarnings(as: .error)]
        )
    ]
)
