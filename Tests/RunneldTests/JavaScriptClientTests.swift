import Testing

/// The JavaScript client (`clients/js/runnel.js`) against real runneld processes:
/// `Tests/blackbox/test_js_client.py` runs the client behaviour checklist of docs/clients.md in
/// Node (`Tests/blackbox/js-client-checks.mjs`, one Node process per check: connect and auth,
/// publish, subscribe with stages, positions, a restart under a durable subscription and under a
/// plain one, a `closing` line, the client's bounded buffer, the server's `dropped`, a clean
/// close, every call's deadline, a wrong URL named) over
/// WebSocket and WebSocket over TLS, and the module runneld serves at `GET /runnel.js` in headless
/// Chromium. Each check is a test case of its own (`PythonSuite`).
@Suite struct JavaScriptClientTests {
    @Test(.timeLimit(.minutes(4)), arguments: PythonSuite.checks("Tests/blackbox/test_js_client.py"))
    func theJavaScriptClientChecksPass(_ check: PythonCheck) async {
        await PythonSuite.expectPasses(check)
    }
}
