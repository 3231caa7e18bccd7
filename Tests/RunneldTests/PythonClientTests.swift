import Testing

/// The Python client (`clients/python`, the `runnel` package) against real runneld processes:
/// `Tests/blackbox/test_python_client.py` runs the client behaviour checklist of docs/clients.md
/// (connect and auth, publish, subscribe with stages, positions, a restart under a durable
/// subscription and under a plain one, a `closing` line, the client's bounded buffer, a clean
/// close, every call's deadline, leaving a loop unsubscribes, a wrong port named) over TCP, TLS
/// and WebSocket. Each check is a test case of its own (`PythonSuite`).
@Suite struct PythonClientTests {
    @Test(.timeLimit(.minutes(4)), arguments: PythonSuite.checks("Tests/blackbox/test_python_client.py"))
    func thePythonClientChecksPass(_ check: PythonCheck) async {
        await PythonSuite.expectPasses(check)
    }
}
