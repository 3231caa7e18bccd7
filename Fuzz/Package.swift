// swift-tools-version: 6.2
import PackageDescription

// libFuzzer targets, one executable each. A package of its own so the root package is never
// built with fuzzer flags: build it with
//   swift build --package-path Fuzz -c release -Xswiftc -sanitize=fuzzer,address
// (see README.md and scripts/fuzz.sh). The flags reach the root package's modules too, so the
// code under test is instrumented for coverage and checked by AddressSanitizer.

// A path dependency's identity is its directory's name, which differs between checkouts and
// worktrees: derive it from where this package sits (Fuzz inside the root).
let rootIdentity = Context.packageDirectory.split(separator: "/").dropLast(1).last.map(String.init) ?? "runnel"

// Each target defines `LLVMFuzzerTestOneInput` and no top-level code (-parse-as-library). On
// Linux SwiftPM links an executable with `main` aliased to `<Target>_main` (so tests can
// import executables), which would leave `main` undefined; each target defines that function
// as a call to libFuzzer's driver, `LLVMFuzzerRunDriver`, the same as libFuzzer's own `main`.
let settings: [SwiftSetting] = [
    .treatAllWarnings(as: .error),
    .unsafeFlags(["-parse-as-library"]),
]

func fuzzer(_ name: String, _ products: [String], _ targets: [Target.Dependency] = []) -> Target {
    .executableTarget(
        name: name,
        dependencies: ["FuzzSupport"] + targets + products.map { .product(name: $0, package: rootIdentity) },
        swiftSettings: settings
    )
}

let package = Package(
    name: "RunnelFuzz",
    dependencies: [.package(path: "..")],
    targets: [
        // The declaration of libFuzzer's `LLVMFuzzerRunDriver`.
        .systemLibrary(name: "CLibFuzzer"),
        // The driver call and the property check every target uses.
        .target(name: "FuzzSupport", dependencies: ["CLibFuzzer"], swiftSettings: [.treatAllWarnings(as: .error)]),
        fuzzer("LineFramerFuzzer", ["RunnelUV"]),
        fuzzer("JSONFuzzer", ["RunnelJSON"]),
        fuzzer("RequestFuzzer", ["RunnelServer", "RunnelJSON"]),
        fuzzer("ExpressionFuzzer", ["RunnelServer", "RunnelJSON"]),
        fuzzer("HTTPFuzzer", ["RunnelServer"]),
        // What the two WebSocket targets share: the reader's events, checked as they come.
        .target(
            name: "WebSocketFuzzSupport",
            dependencies: ["FuzzSupport", .product(name: "RunnelServer", package: rootIdentity)],
            swiftSettings: [.treatAllWarnings(as: .error)]),
        // zlib, for the inflate target's client side.
        .systemLibrary(name: "CFuzzZlib"),
        fuzzer("WebSocketFuzzer", ["RunnelServer"], ["WebSocketFuzzSupport"]),
        fuzzer("WebSocketInflateFuzzer", ["RunnelServer"], ["WebSocketFuzzSupport", "CFuzzZlib"]),
        fuzzer("LazyPathFuzzer", ["RunnelServer", "RunnelJSON"]),
    ]
)
