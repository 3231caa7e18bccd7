import Testing

/// The Python client (`clients/python`, the `runnel` package) against real runneld processes:
/// `scripts/python-client-tests.py` runs the client behaviour checklist of docs/clients.md
/// (connect and auth, publish, subscribe with stages, positions, a restart under a durable
/// subscription and under a plain one, a `closing` line, the client's bounded buffer, a clean
/// close, every call's deadline, leaving a loop unsubscribes, a wrong port named) over TCP, TLS
/// and WebSocket. Each check is a test case of its own (`PythonScript`).
@Suite struct PythonClientTests {
    @Test(.timeLimit(.minutes(4)), arguments: PythonScript.checks("scripts/python-client-tests.py"))
    func thePythonClientChecksPass(_ check: PythonCheck) async {
        await PythonScript.expectPasses(check)
    }
}
