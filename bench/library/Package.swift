// swift-tools-version: 6.2
import PackageDescription

// Runnel against OpenCombine, side by side in one process. Kept out of the root package so
// OpenCombine never enters the library's build.

// A path dependency's identity is its directory's name, which differs between checkouts and
// worktrees: derive it from where this package sits (bench/library inside the root).
let rootIdentity = Context.packageDirectory.split(separator: "/").dropLast(2).last.map(String.init) ?? "runnel"
let package = Package(
    name: "RunnelLibraryBench",
    dependencies: [
        .package(path: "../.."),
        .package(url: "https://github.com/OpenCombine/OpenCombine", from: "0.14.0"),
    ],
    targets: [
        .executableTarget(
            name: "RunnelLibraryBench",
            dependencies: [
                .product(name: "Runnel", package: rootIdentity),
                .product(name: "OpenCombine", package: "OpenCombine"),
            ],
            swiftSettings: [.treatAllWarnings(as: .error)]
        )
    ]
)
