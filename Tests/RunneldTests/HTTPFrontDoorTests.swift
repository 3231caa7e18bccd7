import Foundation
import Testing

/// The HTTP front door against real runneld processes, driven by black-box suites (pytest, in
/// Tests/blackbox) with clients no one here wrote: `test_http.py` with httpx, `test_gzip.py` with
/// the standard library's gzip and zlib, httpx and curl, `test_websocket.py` with Python's
/// `websockets` (and raw sockets for what no well-behaved client sends), `test_dashboard.py` with
/// headless Chromium driven by selenium, `test_tls.py` with Python's `ssl`, `openssl s_client` and
/// the runnel CLI, `test_backpressure.py` with publishers over TCP, `websockets` and httpx,
/// `test_permissions.py` with all of them, `test_jwt.py` with all of them and tokens signed by
/// PyJWT. Each check of a file is a test case of its own (`PythonSuite`): pytest runs the file
/// once, its suites of checks sharing a daemon each, on free ports, with the configurations they
/// need; a case reports its check's result. One of the HTTP checks waits out the 10-second head
/// limit; the hostile TLS suite waits out the 10-second handshake limit once.
///
/// A case's time limit covers its file's whole run, which `PythonSuite.runTimeout` bounds.
@Suite struct HTTPFrontDoorTests {
    @Test(.timeLimit(.minutes(4)), arguments: PythonSuite.checks("Tests/blackbox/test_http.py"))
    func theContractsHTTPChecksPass(_ check: PythonCheck) async {
        await PythonSuite.expectPasses(check)
    }

    @Test(.timeLimit(.minutes(4)), arguments: PythonSuite.checks("Tests/blackbox/test_gzip.py"))
    func gzipdAnswersAndStreamsPass(_ check: PythonCheck) async {
        await PythonSuite.expectPasses(check)
    }

    @Test(.timeLimit(.minutes(4)), arguments: PythonSuite.checks("Tests/blackbox/test_websocket.py"))
    func theContractsWebSocketChecksPass(_ check: PythonCheck) async {
        await PythonSuite.expectPasses(check)
    }

    @Test(.timeLimit(.minutes(4)), arguments: PythonSuite.checks("Tests/blackbox/test_dashboard.py"))
    func theDashboardChecksPass(_ check: PythonCheck) async {
        await PythonSuite.expectPasses(check)
    }

    @Test(.timeLimit(.minutes(4)), arguments: PythonSuite.checks("Tests/blackbox/test_permissions.py"))
    func thePermissionChecksPass(_ check: PythonCheck) async {
        await PythonSuite.expectPasses(check)
    }

    /// `slow_consumer = "backpressure"` and the soft limit's grace: publishers over TCP, a
    /// WebSocket and an HTTP NDJSON body paused while a subscriber lags and resumed without
    /// loss; a dead subscriber cut when the grace ends.
    @Test(.timeLimit(.minutes(4)), arguments: PythonSuite.checks("Tests/blackbox/test_backpressure.py"))
    func theBackpressureChecksPass(_ check: PythonCheck) async {
        await PythonSuite.expectPasses(check)
    }

    /// Conflation (version 1.3): `"conflate": true` over TCP, a WebSocket and SSE, and
    /// `slow_consumer = "conflate"`: a lagging reader gets the latest values in order, the
    /// rest counted in `dropped`, and is never cut while it reads; `runnel sub --conflate`.
    @Test(.timeLimit(.minutes(4)), arguments: PythonSuite.checks("Tests/blackbox/test_conflation.py"))
    func theConflationChecksPass(_ check: PythonCheck) async {
        await PythonSuite.expectPasses(check)
    }

    /// Occupancy (version 1.3): `$sys.occupancy.S` over TCP, a WebSocket and SSE, 0 -> 1 and
    /// 1 -> 0 at once, bursts coalesced, a connection storm ending at 0; `$` names read only.
    @Test(.timeLimit(.minutes(4)), arguments: PythonSuite.checks("Tests/blackbox/test_occupancy.py"))
    func theOccupancyChecksPass(_ check: PythonCheck) async {
        await PythonSuite.expectPasses(check)
    }

    /// Map subjects (version 1.3): create's shape, pub with key and delete, bad keys, max_keys;
    /// snapshot, one synced, then changes, consistent under a concurrent writer; expiry,
    /// positions and from, stages with $key, patterns, list.
    @Test(.timeLimit(.minutes(4)), arguments: PythonSuite.checks("Tests/blackbox/test_map.py"))
    func theMapChecksPass(_ check: PythonCheck) async {
        await PythonSuite.expectPasses(check)
    }

    /// Map subjects over HTTP (POST and DELETE with ?key=), SSE frames and resume, a WebSocket,
    /// and a stalled conflating reader getting each key's latest change.
    @Test(.timeLimit(.minutes(4)), arguments: PythonSuite.checks("Tests/blackbox/test_map_stream.py"))
    func theMapStreamChecksPass(_ check: PythonCheck) async {
        await PythonSuite.expectPasses(check)
    }

    /// Durable maps: keys across kill -9 and a clean stop, resuming at the latest position,
    /// keys that expire while runneld is stopped.
    @Test(.timeLimit(.minutes(4)), arguments: PythonSuite.checks("Tests/blackbox/test_map_durable.py"))
    func theDurableMapChecksPass(_ check: PythonCheck) async {
        await PythonSuite.expectPasses(check)
    }

    /// History by time (version 1.3): `ts`, `since` (Unix ms and RFC 3339) with `resumed`,
    /// `until` in the past and the future, `retain_s`, bad requests; over a WebSocket and SSE,
    /// across a restart of a durable subject, and `runnel sub --since --ts`.
    @Test(.timeLimit(.minutes(4)), arguments: PythonSuite.checks("Tests/blackbox/test_history.py"))
    func theHistoryChecksPass(_ check: PythonCheck) async {
        await PythonSuite.expectPasses(check)
    }

    /// JWTs: tokens signed by PyJWT with keys made by `cryptography` at test time, of each
    /// algorithm; every refusal naming its check; a refresh before expiry; expiry closing TCP,
    /// WebSocket and SSE; key files re-read on SIGHUP.
    @Test(.timeLimit(.minutes(4)), arguments: PythonSuite.checks("Tests/blackbox/test_jwt.py"))
    func theJWTChecksPass(_ check: PythonCheck) async {
        await PythonSuite.expectPasses(check)
    }

    /// TLS on both listeners: certificates made by `openssl` at test time; Python's `ssl`,
    /// httpx, websockets, `openssl s_client` and the runnel CLI.
    @Test(.timeLimit(.minutes(4)), arguments: PythonSuite.checks("Tests/blackbox/test_tls.py"))
    func theTLSChecksPass(_ check: PythonCheck) async {
        await PythonSuite.expectPasses(check)
    }
}
