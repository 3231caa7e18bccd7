import Testing

/// runneld on four event loops (`--loops 4`, whatever `RUNNEL_TEST_LOOPS` says):
/// `Tests/blackbox/test_loops.py` checks values from eight publishers reaching subscribers on
/// every loop (TCP, a pattern, SSE) in order, none lost or twice; `max_connections` and
/// `max_subjects` bounding the whole process, with the per-loop counts of `/metrics` adding up;
/// a SIGTERM drain flushing every loop's subscribers; a SIGHUP reload closing a removed token's
/// connections on every loop. Each check is a test case of its own (`PythonSuite`).
@Suite struct LoopsTests {
    @Test(.timeLimit(.minutes(4)), arguments: PythonSuite.checks("Tests/blackbox/test_loops.py"))
    func theLoopsChecksPass(_ check: PythonCheck) async {
        await PythonSuite.expectPasses(check)
    }
}
