// swift-tools-version: 6.2
import PackageDescription

// Throughput through the Swift client (RunnelClient), 1 publisher to 1 subscriber: a package of
// its own, as bench/library is, so the root package has no bench targets. Built in release by
// bench/clients/run.sh.

// A path dependency's identity is its directory's name, which differs between checkouts and
// worktrees: derive it from where this package sits (bench/clients/swift inside the root).
let rootIdentity = Context.packageDirectory.split(separator: "/").dropLast(3).last.map(String.init) ?? "runnel"
let package = Package(
    name: "RunnelClientBench",
    dependencies: [.package(path: "../../..")],
    targets: [
        .executableTarget(
            name: "ThroughputSwift",
            dependencies: [
                .product(name: "RunnelClient", package: rootIdentity),
                .product(name: "RunnelJSON", package: rootIdentity),
            ],
            swiftSettings: [.treatAllWarnings(as: .error)]
        )
    ]
)
