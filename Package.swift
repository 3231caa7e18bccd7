// swift-tools-version: 6.2
import PackageDescription

/// Every target of ours is built in Swift 6 mode with warnings as errors.
let strict: [SwiftSetting] = [
    .treatAllWarnings(as: .error),
    // The daemon instantiates the library's generics (Subject<Message>, operator sinks) from
    // another module; without this they run unspecialised, through runtime metadata lookups.
    .unsafeFlags(["-cross-module-optimization"], .when(configuration: .release)),
]

/// Release builds of the daemon's own targets, which no product for other packages exposes
/// (the product of `RunnelServer` is for this repository's fuzz package), also drop Swift's
/// run-time exclusivity checks (debug builds and the sanitizer runs keep them). Every target a
/// product for other packages contains (`Runnel`, `RunnelBytes`, `RunnelUV`, `RunnelJSON`,
/// `RunnelTLS`, `RunnelClient`) keeps them for everyone who depends on it: where a check sits
/// on the hot path it marks that property `@exclusivity(unchecked)` instead.
let exclusivityUnchecked: SwiftSetting = .unsafeFlags(
    ["-enforce-exclusivity=unchecked"], .when(configuration: .release)
)

let daemon: [SwiftSetting] = strict + [exclusivityUnchecked]

/// RunnelJSON is what the server's hot paths call (the envelope scan on every publish, member
/// lookups on every filtered delivery), through `package` declarations, and what the client
/// reads its lines with. `-cross-module-optimization` serialises only `public` functions (and
/// no `@inlinable package` body is serialised either), and it overrides the flag that
/// serialises them all: this module takes that flag in its place, so the server inlines and
/// specialises them as it did when they were its own. It changes what is compiled into the
/// callers, not what the code may do.
let json: [SwiftSetting] = [
    .treatAllWarnings(as: .error),
    .unsafeFlags(["-enable-cmo-everything"], .when(configuration: .release)),
]

let package = Package(
    name: "Runnel",
    products: [
        .library(name: "Runnel", targets: ["Runnel"]),
        .library(name: "RunnelUV", targets: ["RunnelUV"]),
        // For the fuzz targets in Fuzz/, a package of their own built with -sanitize=fuzzer.
        .library(name: "RunnelJSON", targets: ["RunnelJSON"]),
        .library(name: "RunnelServer", targets: ["RunnelServer"]),
        .library(name: "RunnelClient", targets: ["RunnelClient"]),
        .executable(name: "runneld", targets: ["runneld"]),
        .executable(name: "runnel", targets: ["runnel"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/LebJe/TOMLKit", from: "0.6.0"),
    ],
    targets: [
        // The reactive library: ReactiveCocoa 2.5's signal model. No libuv, no server.
        .target(name: "Runnel", swiftSettings: strict),

        // libuv, linked from the system through pkg-config.
        .systemLibrary(
            name: "CLibUV",
            pkgConfig: "libuv",
            providers: [.apt(["libuv1-dev"])]
        ),
        // SQLite, linked from the system the same way, for durable subjects.
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        // Node's http_parser (Debian's libhttp-parser-dev ships no pkg-config file): HTTP request heads.
        .systemLibrary(
            name: "CHTTPParser",
            providers: [.apt(["libhttp-parser-dev"])]
        ),
        // OpenSSL's libcrypto: the WebSocket handshake's SHA-1 and Base64.
        .systemLibrary(
            name: "CLibCrypto",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]
        ),
        // OpenSSL's libssl: TLS for the listeners and the CLI.
        .systemLibrary(
            name: "CLibSSL",
            pkgConfig: "libssl",
            providers: [.apt(["libssl-dev"])]
        ),
        // zlib: WebSocket permessage-deflate (RFC 7692).
        .systemLibrary(
            name: "CZlib",
            pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"])]
        ),
        // cnats (Debian's libnats-dev 3.4.1): the NATS client of a clustered runneld.
        .systemLibrary(
            name: "CNats",
            pkgConfig: "libnats",
            providers: [.apt(["libnats-dev"])]
        ),
        // Bytes without I/O: `ByteBuffer`, and `ConnectionFilter`, the seam of a byte-stream filter
        // (TLS). What the event loop, the JSON stack, TLS and the client share, so that the
        // client links no event loop.
        .target(name: "RunnelBytes", swiftSettings: strict),

        // The only module that touches libuv: event loop, loop scheduler, TCP transport.
        .target(name: "RunnelUV", dependencies: ["Runnel", "RunnelBytes", "CLibUV"], swiftSettings: strict),

        // TLS over memory BIOs (a `ConnectionFilter` for RunnelUV's connections) and over a
        // blocking socket (RunnelClient, so the CLI): the only module that touches libssl, so RunnelUV and its
        // users that need no TLS do not link it. No event loop: the client links it.
        .target(name: "RunnelTLS", dependencies: ["RunnelBytes", "CLibSSL"], swiftSettings: strict),

        // JSON: the validating scanner, parser, writer, and values read in place from their bytes.
        .target(name: "RunnelJSON", dependencies: ["RunnelBytes"], swiftSettings: json),

        // The daemon as a library: expressions, protocol, transports, subject store, stages, config.
        // Its dashboard page is web/dashboard/, put in the binary by the EmbedDashboard plugin.
        .target(
            name: "RunnelServer",
            dependencies: [
                "Runnel", "RunnelBytes", "RunnelUV", "RunnelTLS", "RunnelJSON", "CSQLite", "CHTTPParser", "CLibCrypto", "CZlib", "CNats",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "TOMLKit", package: "TOMLKit"),
            ],
            swiftSettings: daemon,
            plugins: ["EmbedDashboard"]
        ),
        // The Swift client of runneld (async/await, reconnects, resumes) and the blocking line
        // socket the `runnel` CLI shares with it: no server, no libuv loop of its own.
        .target(name: "RunnelClient", dependencies: ["RunnelJSON", "RunnelTLS"], swiftSettings: strict),
        // The build-time tool and plugin that make web/dashboard/ one document in a Swift string
        // (runneld needs no files, and no Foundation, to serve it).
        .executableTarget(name: "DashboardEmbedder", swiftSettings: [.treatAllWarnings(as: .error)]),
        .plugin(name: "EmbedDashboard", capability: .buildTool(), dependencies: ["DashboardEmbedder"]),
        // The version both executables print (`--version`), stamped at build time by the plugin.
        .target(name: "RunnelVersion", swiftSettings: strict, plugins: ["StampVersion"]),
        .plugin(name: "StampVersion", capability: .buildTool()),
        .executableTarget(
            name: "runneld",
            dependencies: [
                "RunnelServer", "RunnelVersion", .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: daemon
        ),
        .executableTarget(
            name: "runnel",
            dependencies: [
                "RunnelClient", "RunnelJSON", "RunnelVersion",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: daemon
        ),

        // The helpers of the test targets, one of each: a test error, a recording subscriber,
        // `eventually`, a blocking TCP client, a seeded random generator. A regular target, which
        // `swift build -c release` builds too, so it uses only public API (no @testable import).
        .target(
            name: "RunnelTestSupport",
            dependencies: ["Runnel"],
            path: "Tests/RunnelTestSupport",
            swiftSettings: strict
        ),
        .testTarget(name: "RunnelTests", dependencies: ["Runnel", "RunnelTestSupport"], swiftSettings: strict),
        .testTarget(
            name: "RunnelUVTests",
            dependencies: ["Runnel", "RunnelBytes", "RunnelUV", "RunnelTLS", "RunnelTestSupport"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "RunnelJSONTests",
            dependencies: ["RunnelBytes", "RunnelJSON", "RunnelTestSupport"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "RunnelServerTests",
            dependencies: ["RunnelServer", "RunnelBytes", "RunnelJSON", "RunnelTestSupport"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "RunneldTests",
            dependencies: ["RunnelServer", "RunnelClient", "RunnelVersion", "runneld", "runnel", "RunnelTestSupport"],
            swiftSettings: strict
        ),
    ]
)
