import Foundation
import Testing

/// The HTTP front door against real runneld processes, driven by scripts with clients no one
/// here wrote: `scripts/http-tests.py` with httpx, `scripts/websocket-tests.py` with Python's
/// `websockets` (and raw sockets for what no well-behaved client sends),
/// `scripts/dashboard-tests.py` with headless Chromium driven by selenium, `scripts/tls-tests.py`
/// with Python's `ssl`, `openssl s_client` and the runnel CLI, `scripts/backpressure-tests.py`
/// with publishers over TCP, `websockets` and httpx. Each script starts
/// its own daemons, on free ports, with the configurations it needs; one of the HTTP checks
/// waits out the 10-second head limit.
@Suite struct HTTPFrontDoorTests {
    @Test(.timeLimit(.minutes(2))) func theContractsHTTPChecksPass() throws {
        try runScript("scripts/http-tests.py")
    }

    @Test(.timeLimit(.minutes(2))) func theContractsWebSocketChecksPass() throws {
        try runScript("scripts/websocket-tests.py")
    }

    @Test(.timeLimit(.minutes(2))) func theDashboardChecksPass() throws {
        try runScript("scripts/dashboard-tests.py")
    }

    @Test(.timeLimit(.minutes(2))) func thePermissionChecksPass() throws {
        try runScript("scripts/permissions-tests.py")
    }

    /// `slow_consumer = "backpressure"` and the soft limit's grace: publishers over TCP, a
    /// WebSocket and an HTTP NDJSON body paused while a subscriber lags and resumed without
    /// loss; a dead subscriber cut when the grace ends.
    @Test(.timeLimit(.minutes(3))) func theBackpressureChecksPass() throws {
        try runScript("scripts/backpressure-tests.py")
    }

    /// TLS on both listeners (scripts/tls-tests.py): certificates made by `openssl` at test
    /// time; Python's `ssl`, httpx, websockets, `openssl s_client` and the runnel CLI; the
    /// hostile TLS suite waits out the 10-second handshake limit once.
    @Test(.timeLimit(.minutes(3))) func theTLSChecksPass() throws {
        try runScript("scripts/tls-tests.py")
    }

    /// Runs `script` (a path in the repository) against the runneld under test; its whole
    /// output is the failure's message.
    private func runScript(_ script: String) throws {
        var root = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { root.deleteLastPathComponent() }
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("front-door-\(UUID().uuidString)")
        #expect(FileManager.default.createFile(atPath: output.path, contents: nil))
        defer { try? FileManager.default.removeItem(at: output) }
        let handle = try FileHandle(forWritingTo: output)
        defer { try? handle.close() }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "python3", root.appendingPathComponent(script).path, "--runneld", try RunneldBinary.path(),
        ]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        process.waitUntilExit()
        let report = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
        #expect(process.terminationStatus == 0, "\(script):\n\(report)")
    }
}
