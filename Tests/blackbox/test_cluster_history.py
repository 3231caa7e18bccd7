"""History by time in a cluster (docs/protocol.md, "History by time" and "Clusters"): two runneld
nodes on a real nats-server with JetStream.

    python3 -m pytest Tests/blackbox/test_cluster_history.py [--runneld PATH]

A retained value's time is the one JetStream stored it at, so `ts` is the same on every node and
lies between the publisher's clock readings around its acknowledged `pub`; `since` on another node
than the publisher's replays from that time and goes on live; `until` completes there too;
`retain_s` gives the subject's stream JetStream's `max_age` (read from nats-server's /jsz), which
lets the values go in JetStream as the nodes let them go, so a late `since` on any node is
`resumed: false` and gets nothing. The waits between publishes are there so that two values never
share a millisecond; no timing is asserted but deadlines.
"""

import time

import pytest

from runneld_process import poll_until
from test_cluster import c, create, events, expect_silence, listed, ok, split_pos, stop_nodes, subscribe  # noqa: F401


def now_ms():
    return int(time.time() * 1000)


def publish_acknowledged(client, subject, values):
    """Publishes `values` one by one with a `ref` (answered once JetStream stored each), 20 ms
    apart; returns for each the client's clock just before and just after its answer."""
    bounds = []
    for value in values:
        time.sleep(0.02)
        before = now_ms()
        ok(client.request({"op": "pub", "subject": subject, "value": value}))
        bounds.append((before, now_ms()))
    time.sleep(0.02)
    return bounds


def stream_config(c, epoch):
    """The config of the JetStream stream holding epoch `epoch`'s values."""
    details = c.nats.monitor("/jsz?streams=1&config=1").get("account_details") or [{}]
    found = [s for s in details[0].get("stream_detail") or [] if s["name"].endswith("_" + epoch)]
    assert len(found) == 1, [s["name"] for s in details[0].get("stream_detail") or []]
    return found[0]


@pytest.mark.cluster(("a", "hist"), ("b", "hist"))
class TestHistoryInACluster:
    def test_a_values_time_is_the_same_on_every_node(self, c):
        create(c, "a", subject="h.t", kind="replay", capacity=100)
        bounds = publish_acknowledged(c.client("a"), "h.t", [1, 2, 3])
        times = {}
        for node in "ab":
            client = subscribe(c[node], "h.t", ts=True)
            lines = events(client, 3, f"node {node}")
            assert [line["value"] for line in lines] == [1, 2, 3], (node, lines)
            times[node] = [line["ts"] for line in lines]
            client.close()
        assert times["a"] == times["b"], times
        for ts, (before, after) in zip(times["a"], bounds):
            assert before <= ts <= after, (ts, before, after)
        assert times["a"] == sorted(set(times["a"])), times
        c.state["times"] = times["a"]

    def test_since_on_another_node_replays_from_that_time_then_goes_on_live(self, c):
        times = c.earlier("times")
        client = subscribe(c["b"], "h.t", since=times[1], ts=True)
        # `resumed` is in the reply `subscribe` checked; read it again on a fresh subscription.
        assert [line["value"] for line in events(client, 2, "since on b")] == [2, 3]
        ok(c.client("a").request({"op": "pub", "subject": "h.t", "value": 4}))
        live = events(client, 1, "since on b, live")[0]
        assert live["value"] == 4 and live["ts"] > times[2], live
        client.close()
        probe = c.client("b")
        reply = ok(probe.request({"op": "sub", "subject": "h.t", "sid": "r", "since": times[0]}))
        assert reply["resumed"] is True, reply
        ok(probe.request({"op": "unsub", "sid": "r"}))

    def test_until_completes_on_another_node(self, c):
        times = c.earlier("times")
        client = subscribe(c["b"], "h.t", since=times[0], until=times[1])
        assert [line["value"] for line in events(client, 2, "until on b")] == [1, 2]
        line = client.line()
        assert line.get("ev") == "completed" and line.get("sid") == client.sid, line
        client.close()

    def test_retain_s_is_the_streams_max_age_and_ages_values_everywhere(self, c):
        create(c, "a", subject="h.aged", kind="replay", capacity=100, retain_s=1)
        epoch = split_pos(listed(c.client("a"), "h.aged")["pos"])[0]
        config = stream_config(c, epoch)["config"]
        assert config["max_age"] == 1_000_000_000, config
        # `list` shows it on the other node too (the cluster's definition carries it).
        assert listed(c.client("b"), "h.aged")["retain_s"] == 1
        published = now_ms()
        publish_acknowledged(c.client("a"), "h.aged", [1, 2])
        client = subscribe(c["b"], "h.aged", since=published)
        assert [line["value"] for line in events(client, 2, "aged, before retain_s")] == [1, 2]
        client.close()
        # JetStream lets them go by itself...
        poll_until(lambda: stream_config(c, epoch)["state"]["messages"], lambda n: n == 0,
                   "JetStream's max_age emptying the stream", 10)
        # ...and every node has let them go too: a `since` from before them gets nothing.
        for node in "ab":
            probe = c.client(node)
            reply = ok(probe.request({"op": "sub", "subject": "h.aged", "sid": "late", "since": published}))
            assert reply["resumed"] is False, (node, reply)
            expect_silence(probe, 0.3)
            ok(probe.request({"op": "unsub", "sid": "late"}))

    def test_clean_stop(self, c):
        stop_nodes(c)
