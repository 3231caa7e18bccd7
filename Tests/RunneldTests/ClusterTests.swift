import Testing

/// runneld nodes in a cluster (docs/protocol.md, "Clusters"), against a real nats-server
/// (Debian's, started on loopback by `Tests/blackbox/nats_process.py`) and three runneld
/// processes: `Tests/blackbox/test_cluster.py` checks shared subjects (every node's values
/// reaching every node once and in order, patterns and stages, `receivers`), one NATS
/// subscription per subject a node's clients use, a node killed with SIGKILL, two clusters on one
/// NATS sharing nothing, a lost link (`unavailable`, `/healthz` 503, what still works, `dropped`
/// when it is back), and the start-up errors; `Tests/blackbox/test_cluster_history.py` checks
/// history by time across nodes (`ts`, `since`, `until`, `retain_s` as JetStream's `max_age`),
/// `Tests/blackbox/test_cluster_occupancy.py` occupancy counted over every node,
/// `Tests/blackbox/test_cluster_conflation.py` conflation of values that crossed the cluster,
/// `Tests/blackbox/test_cluster_map.py` maps (one order on every node, `from` on another node,
/// `ttl_s` with a node killed).
/// Each check is a test case of its own (`PythonSuite`).
@Suite struct ClusterTests {
    @Test(.timeLimit(.minutes(4)), arguments: PythonSuite.checks("Tests/blackbox/test_cluster.py"))
    func theClusterChecksPass(_ check: PythonCheck) async {
        await PythonSuite.expectPasses(check)
    }

    @Test(.timeLimit(.minutes(4)), arguments: PythonSuite.checks("Tests/blackbox/test_cluster_history.py"))
    func theClusterHistoryChecksPass(_ check: PythonCheck) async {
        await PythonSuite.expectPasses(check)
    }

    @Test(.timeLimit(.minutes(4)), arguments: PythonSuite.checks("Tests/blackbox/test_cluster_occupancy.py"))
    func theClusterOccupancyChecksPass(_ check: PythonCheck) async {
        await PythonSuite.expectPasses(check)
    }

    @Test(.timeLimit(.minutes(4)), arguments: PythonSuite.checks("Tests/blackbox/test_cluster_conflation.py"))
    func theClusterConflationChecksPass(_ check: PythonCheck) async {
        await PythonSuite.expectPasses(check)
    }

    @Test(.timeLimit(.minutes(4)), arguments: PythonSuite.checks("Tests/blackbox/test_cluster_map.py"))
    func theClusterMapChecksPass(_ check: PythonCheck) async {
        await PythonSuite.expectPasses(check)
    }
}
