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

// The root package's modules that serialise every body (RunnelJSON, RunnelProtocol,
// RunnelExpression) each export the standard library specialisations their bodies use: a
// target linking two of them keeps the first definition of each (the root Package.swift's
// `serialisedModulesLink`).
func fuzzer(_ name: String, _ products: [String], _ targets: [Target.Dependency] = []) -> Target {
    .executableTarget(
        name: name,
        dependencies: ["FuzzSupport"] + targets + products.map { .product(name: $0, package: rootIdentity) },
        swiftSettings: settings,
        linkerSettings: [.unsafeFlags(["-Xlinker", "--allow-multiple-definition"])]
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
        fuzzer("RequestFuzzer", ["RunnelProtocol", "RunnelJSON"]),
        fuzzer("ExpressionFuzzer", ["RunnelExpression", "RunnelJSON"]),
        fuzzer("HTTPFuzzer", ["RunnelHTTP", "RunnelProtocol"]),
        // What the two WebSocket targets share: the reader's events, checked as they come.
        .target(
            name: "WebSocketFuzzSupport",
            dependencies: ["FuzzSupport", .product(name: "RunnelWebSocket", package: rootIdentity)],
            swiftSettings: [.treatAllWarnings(as: .error)]),
        // zlib, for the inflate target's client side.
        .systemLibrary(name: "CFuzzZlib"),
        fuzzer("WebSocketFuzzer", ["RunnelWebSocket"], ["WebSocketFuzzSupport"]),
        fuzzer("WebSocketInflateFuzzer", ["RunnelWebSocket"], ["WebSocketFuzzSupport", "CFuzzZlib"]),
        fuzzer("LazyPathFuzzer", ["RunnelExpression", "RunnelProtocol", "RunnelJSON"]),
    ]
)
