"""Occupancy in a cluster (docs/protocol.md, "Occupancy" and "Clusters"): three runneld nodes on a
real nats-server.

    python3 -m pytest Tests/blackbox/test_cluster_occupancy.py [--runneld PATH]

`$sys.occupancy.S` read on one node counts the subscriptions of every node: named and pattern
subscriptions made on other nodes, the 0 -> 1 and 1 -> 0 transitions told however the count is
spread; a storm of connections subscribing and closing on two nodes at once leaves it exact once
quiet (0, then the held subscriptions' count); `$sys.occupancy.>` names a subject another node
made and subscribed to; and a node killed with its subscribers drops out of the count once the
cluster gives it up (silent for 10 s). No timings but deadlines.
"""

import threading

import pytest

from runneld_process import LineClient
from test_cluster import DROP_OUT_SECONDS, c, stop_nodes  # noqa: F401
from test_occupancy import counts_until, occupancy, watch


def subscriber(d, subject, sid="s"):
    client = LineClient(d.port)
    assert client.request({"op": "sub", "subject": subject, "sid": sid})["ok"]
    return client


@pytest.mark.cluster(("a", "occ"), ("b", "occ"), ("c", "occ"))
class TestOccupancyInACluster:
    def test_other_nodes_subscriptions_count_and_each_transition_is_told(self, c):
        watcher, first = watch(c["a"], "o.x")
        assert first == 0
        on_b = subscriber(c["b"], "o.x")
        assert counts_until(watcher, 1) == [1]
        # A pattern on c counts too; one that does not match, does not.
        on_c = subscriber(c["c"], "o.>")
        other = subscriber(c["c"], "p.>")
        assert counts_until(watcher, 2) == [2]
        on_b.close()
        assert counts_until(watcher, 1) == [1]
        on_c.close()
        assert counts_until(watcher, 0) == [0]
        other.close()
        watcher.close()

    def test_a_storm_on_two_nodes_leaves_the_count_exact(self, c):
        watcher, first = watch(c["a"], "o.storm")
        assert first == 0
        held = [subscriber(c["c"], "o.storm", f"h{n}") for n in range(3)]
        assert counts_until(watcher, 3)[-1] == 3
        for client in held:
            client.close()
        assert counts_until(watcher, 0)[-1] == 0

        def storm(node):
            for _ in range(40):
                subscriber(c[node], "o.storm").close()

        threads = [threading.Thread(target=storm, args=(node,)) for node in "bc"]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        # Every 0 -> 1 is followed by its 1 -> 0: the last value, once quiet, is 0.
        seen = counts_until(watcher, 0)
        assert all(count >= 0 for count in seen), seen
        held = [subscriber(c[node], "o.storm", f"k{node}") for node in "abc"]
        seen = counts_until(watcher, 3)
        assert seen[-1] == 3, seen
        for client in held:
            client.close()
        assert counts_until(watcher, 0)[-1] == 0
        watcher.close()

    def test_a_pattern_names_a_subject_another_node_made(self, c):
        watcher = LineClient(c["a"].port, timeout=10)
        assert watcher.request({"op": "sub", "subject": "$sys.occupancy.o.new.>", "sid": "w"})["ok"]
        on_b = subscriber(c["b"], "o.new.one")
        while True:
            line = watcher.line()
            assert line.get("subject") == "$sys.occupancy.o.new.one", line
            if occupancy(line) == 1:
                break
        on_b.close()
        line = watcher.line()
        assert line.get("subject") == "$sys.occupancy.o.new.one" and occupancy(line) == 0, line
        watcher.close()

    def test_a_killed_node_drops_out_of_the_count(self, c):
        watcher, first = watch(c["a"], "o.gone", timeout=DROP_OUT_SECONDS + 5)
        assert first == 0
        on_b = subscriber(c["b"], "o.gone")
        kept = subscriber(c["c"], "o.gone")
        assert counts_until(watcher, 2)[-1] == 2
        c.kill("b")
        # Given up once silent for 10 s (heartbeats every 2 s): b's subscription no longer counts.
        assert counts_until(watcher, 1) == [1]
        on_b.close()
        kept.close()
        assert counts_until(watcher, 0) == [0]
        watcher.close()

    def test_clean_stop(self, c):
        stop_nodes(c)
