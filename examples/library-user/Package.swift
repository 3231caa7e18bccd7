// swift-tools-version: 6.2
import PackageDescription

// A package that uses the Runnel library as its users do: by version, from a git URL, with
// its own build settings (Swift's run-time safety checks on, as SwiftPM builds any package).
// scripts/check-library-user.sh makes a git repository of the checkout, tags it, and gives
// its URL here in RUNNEL_GIT_URL; with nothing given, the manifest says so. ClientUser's source is
// README.md's Swift client example, which the script copies in (it is not kept here).
guard let runnel = Context.environment["RUNNEL_GIT_URL"] else {
    fatalError("set RUNNEL_GIT_URL to a git URL of Runnel (scripts/check-library-user.sh does)")
}

let package = Package(
    name: "LibraryUser",
    dependencies: [.package(url: runnel, from: "1.2.0")],
    targets: [
        .executableTarget(
            name: "LibraryUser",
            dependencies: [.product(name: "Runnel", package: "runnel")],
            swiftSettings: [.treatAllWarnings(as: .error)]
        ),
        .executableTarget(
            name: "ClientUser",
            dependencies: [
                .product(name: "RunnelClient", package: "runnel"), .product(name: "RunnelJSON", package: "runnel"),
            ],
            swiftSettings: [.treatAllWarnings(as: .error)]
        ),
    ]
)
