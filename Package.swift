// swift-tools-version: 6.2
import PackageDescription

/// Every target of ours is built in Swift 6 mode with warnings as errors.
let strict: [SwiftSetting] = [
    .treatAllWarnings(as: .error),
    // The daemon instantiates the library's generics (Subject<Message>, operator sinks) from
    // another module; without this they run unspecialised, through runtime metadata lookups.
    .unsafeFlags(["-cross-module-optimization"], .when(configuration: .release)),
]

/// Release builds of the daemon's own targets, which no product for other packages exposes (the
/// products of `RunnelServer`, `RunnelHTTP` and the layers are for this repository's fuzz
/// package), also drop Swift's run-time exclusivity checks (debug builds and the sanitizer runs
/// keep them). Every target a product for other packages contains (`Runnel`, `RunnelBytes`,
/// `RunnelUV`, `RunnelJSON`, `RunnelTLS`, `RunnelClient`) keeps them for everyone who depends on
/// it: where a check sits on the hot path it marks that property `@exclusivity(unchecked)`
/// instead.
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

/// The daemon's layers on the hot path (protocol, expressions) are modules of their own so that
/// the compiler keeps the layering (an upward import fails to build); they are compiled as
/// `RunnelJSON` is, every body serialised, so that the server inlines them as its own
/// (`-cross-module-optimization` serialises no `package` body; bench/README.md, "The daemon's
/// layers as modules"), and without exclusivity checks in release, as the daemon's own targets.
/// The other layers (compression, WebSocket framing, crypto) are off the per-value path and
/// build as the daemon does.
let hotLayer: [SwiftSetting] = json + [exclusivityUnchecked]

/// Each module that serialises every body (`RunnelJSON`, `RunnelProtocol`, `RunnelExpression`,
/// `RunnelUV`, `RunnelServer`) exports the specialisations of the standard library's generics its
/// bodies use (such as `Array<UInt8>.append`), so a release link of two of them finds the same mangled symbol,
/// compiled from the same standard library by the same compiler, defined twice. Release links
/// of executables that contain more than one (runneld, the fuzz targets) keep the first.
let serialisedModulesLink: LinkerSetting = .unsafeFlags(
    ["-Xlinker", "--allow-multiple-definition"], .when(configuration: .release)
)

let package = Package(
    name: "Runnel",
    products: [
        .library(name: "Runnel", targets: ["Runnel"]),
        .library(name: "RunnelUV", targets: ["RunnelUV"]),
        // For the fuzz targets in Fuzz/, a package of their own built with -sanitize=fuzzer.
        .library(name: "RunnelJSON", targets: ["RunnelJSON"]),
        .library(name: "RunnelProtocol", targets: ["RunnelProtocol"]),
        .library(name: "RunnelExpression", targets: ["RunnelExpression"]),
        .library(name: "RunnelWebSocket", targets: ["RunnelWebSocket"]),
        .library(name: "RunnelServer", targets: ["RunnelServer"]),
        .library(name: "RunnelHTTP", targets: ["RunnelHTTP"]),
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
        // OpenSSL's libcrypto: the WebSocket handshake's SHA-1 and Base64, token digests, JWT signatures.
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
        // zlib: WebSocket permessage-deflate (RFC 7692) and gzip'd HTTP answers and event streams.
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
        // Every body serialised, as RunnelJSON's: a connection's write path is the body of every
        // delivery, and the server inlines it only so (bench/README.md, "One event sink").
        .target(name: "RunnelUV", dependencies: ["Runnel", "RunnelBytes", "CLibUV"], swiftSettings: json),

        // TLS over memory BIOs (a `ConnectionFilter` for RunnelUV's connections) and over a
        // blocking socket (RunnelClient, so the CLI): the only module that touches libssl, so RunnelUV and its
        // users that need no TLS do not link it. No event loop: the client links it.
        .target(name: "RunnelTLS", dependencies: ["RunnelBytes", "CLibSSL"], swiftSettings: strict),

        // JSON: the validating scanner, parser, writer, and values read in place from their bytes.
        .target(name: "RunnelJSON", dependencies: ["RunnelBytes"], swiftSettings: json),

        // The daemon's layers below its core, each of which imports only what is listed above it.
        // Crypto: Base64URL, constant-time comparison, JWT keys and token digests (libcrypto).
        .target(name: "RunnelCrypto", dependencies: ["CLibCrypto"], swiftSettings: daemon),
        // Compression: deflate and gzip over zlib, for WebSocket and HTTP bodies.
        .target(name: "RunnelCompression", dependencies: ["RunnelBytes", "CZlib"], swiftSettings: daemon),
        // WebSocket framing (RFC 6455, 7692): frames, masking, UTF-8, permessage-deflate. The
        // HTTP upgrade that starts it belongs to the server's HTTP front door.
        .target(name: "RunnelWebSocket", dependencies: ["RunnelBytes", "RunnelCompression"], swiftSettings: daemon),
        // The wire protocol: request envelopes, subject names and patterns, positions, error
        // codes, the server's line writer.
        .target(name: "RunnelProtocol", dependencies: ["RunnelBytes", "RunnelJSON"], swiftSettings: hotLayer),
        // Expressions and the value they read (`Payload`, with its memo of their outcomes).
        .target(
            name: "RunnelExpression", dependencies: ["RunnelBytes", "RunnelJSON", "RunnelProtocol"],
            swiftSettings: hotLayer
        ),

        // The daemon's core: the server and its sessions, the line transport and the contract every
        // transport meets, the subject store, stages, durability, access, config, metrics, the
        // cluster. It names no front door: those above it reach it through its `package` API.
        // Compiled as the hot layers are, every body serialised, so that the front door's streams
        // get the delivery path (`Session.deliverNext`, generic over the transport) specialised
        // for them as the line transport does (bench/README.md, "The front doors as a module").
        .target(
            name: "RunnelServer",
            dependencies: [
                "Runnel", "RunnelBytes", "RunnelUV", "RunnelTLS", "RunnelJSON", "RunnelCrypto", "RunnelCompression",
                "RunnelProtocol", "RunnelExpression", "CSQLite", "CNats",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "TOMLKit", package: "TOMLKit"),
            ],
            swiftSettings: hotLayer
        ),
        // The HTTP front door over the core: HTTP/1.1, its routes, Server-Sent Events and
        // WebSocket streams (sessions' transports), static files, and the page, web/dashboard/,
        // put in the binary by the EmbedDashboard plugin.
        .target(
            name: "RunnelHTTP",
            dependencies: [
                "RunnelServer", "Runnel", "RunnelBytes", "RunnelUV", "RunnelJSON", "RunnelCompression",
                "RunnelWebSocket", "RunnelProtocol", "CHTTPParser", "CLibCrypto", "CZlib",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: daemon,
            plugins: ["EmbedDashboard"]
        ),
        // The daemon's life: configuration to listeners, loops, stores and the cluster; logging,
        // signals, reloads, systemd. What `runneld` runs; the only module that names them all.
        .target(
            name: "RunnelDaemon",
            dependencies: [
                "RunnelServer", "RunnelHTTP", "Runnel", "RunnelBytes", "RunnelTLS", "RunnelUV",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: daemon
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
                "RunnelDaemon", "RunnelServer", "RunnelVersion",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: daemon,
            linkerSettings: [serialisedModulesLink]
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
            dependencies: [
                "RunnelServer", "RunnelHTTP", "RunnelDaemon", "RunnelBytes", "RunnelJSON", "RunnelCrypto",
                "RunnelCompression", "RunnelWebSocket", "RunnelProtocol", "RunnelExpression", "RunnelTestSupport",
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "RunneldTests",
            dependencies: ["RunnelServer", "RunnelClient", "RunnelVersion", "runneld", "runnel", "RunnelTestSupport"],
            swiftSettings: strict
        ),
    ]
)
