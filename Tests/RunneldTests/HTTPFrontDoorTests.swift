import Foundation
import Testing

/// The HTTP front door against real runneld processes, driven by scripts with clients no one
/// here wrote: `scripts/http-tests.py` with httpx, `scripts/gzip-tests.py` with the standard
/// library's gzip and zlib, httpx and curl, `scripts/websocket-tests.py` with Python's
/// `websockets` (and raw sockets for what no well-behaved client sends),
/// `scripts/dashboard-tests.py` with headless Chromium driven by selenium, `scripts/tls-tests.py`
/// with Python's `ssl`, `openssl s_client` and the runnel CLI, `scripts/backpressure-tests.py`
/// with publishers over TCP, `websockets` and httpx, `scripts/permissions-tests.py` with all of
/// them, `scripts/jwt-tests.py` with all of them and tokens signed by PyJWT. Each check of a script is a test case of its own (`PythonScript`): the script runs
/// once, its suites of checks sharing a daemon each, on free ports, with the configurations
/// they need; a case reports its check's result. One of the HTTP checks waits out the
/// 10-second head limit; the hostile TLS suite waits out the 10-second handshake limit once.
///
/// A case's time limit covers its script's whole run, which `PythonScript.runTimeout` bounds.
@Suite struct HTTPFrontDoorTests {
    @Test(.timeLimit(.minutes(4)), arguments: PythonScript.checks("scripts/http-tests.py"))
    func theContractsHTTPChecksPass(_ check: PythonCheck) async {
        await PythonScript.expectPasses(check)
    }

    @Test(.timeLimit(.minutes(4)), arguments: PythonScript.checks("scripts/gzip-tests.py"))
    func gzipdAnswersAndStreamsPass(_ check: PythonCheck) async {
        await PythonScript.expectPasses(check)
    }

    @Test(.timeLimit(.minutes(4)), arguments: PythonScript.checks("scripts/websocket-tests.py"))
    func theContractsWebSocketChecksPass(_ check: PythonCheck) async {
        await PythonScript.expectPasses(check)
    }

    @Test(.timeLimit(.minutes(4)), arguments: PythonScript.checks("scripts/dashboard-tests.py"))
    func theDashboardChecksPass(_ check: PythonCheck) async {
        await PythonScript.expectPasses(check)
    }

    @Test(.timeLimit(.minutes(4)), arguments: PythonScript.checks("scripts/permissions-tests.py"))
    func thePermissionChecksPass(_ check: PythonCheck) async {
        await PythonScript.expectPasses(check)
    }

    /// `slow_consumer = "backpressure"` and the soft limit's grace: publishers over TCP, a
    /// WebSocket and an HTTP NDJSON body paused while a subscriber lags and resumed without
    /// loss; a dead subscriber cut when the grace ends.
    @Test(.timeLimit(.minutes(4)), arguments: PythonScript.checks("scripts/backpressure-tests.py"))
    func theBackpressureChecksPass(_ check: PythonCheck) async {
        await PythonScript.expectPasses(check)
    }

    /// JWTs: tokens signed by PyJWT with keys made by `cryptography` at test time, of each
    /// algorithm; every refusal naming its check; a refresh before expiry; expiry closing TCP,
    /// WebSocket and SSE; key files re-read on SIGHUP.
    @Test(.timeLimit(.minutes(4)), arguments: PythonScript.checks("scripts/jwt-tests.py"))
    func theJWTChecksPass(_ check: PythonCheck) async {
        await PythonScript.expectPasses(check)
    }

    /// TLS on both listeners: certificates made by `openssl` at test time; Python's `ssl`,
    /// httpx, websockets, `openssl s_client` and the runnel CLI.
    @Test(.timeLimit(.minutes(4)), arguments: PythonScript.checks("scripts/tls-tests.py"))
    func theTLSChecksPass(_ check: PythonCheck) async {
        await PythonScript.expectPasses(check)
    }
}
