"""Conflation in a cluster (docs/protocol.md, "Conflation" and "Clusters"): two runneld nodes on a
real nats-server with JetStream, node b with small pending limits (soft_pending_bytes 64 KiB,
max_pending_bytes 1 MiB, a grace of 30 s).

    python3 -m pytest Tests/blackbox/test_cluster_conflation.py [--runneld PATH]

A subscriber on b made with `"conflate": true` that stops reading while node a publishes 10 MB
of values of about 1 KiB (b's hard limit ten times over: a subscriber beside it that does not
conflate is cut) is not cut; once it reads again it gets values in publish order, the last one
included, and `dropped` events each counting exactly the values between the one before it and
the one after, which with the values received add up to every value published, and to b's
`stats.dropped`. The values of a plain subject cross the cluster over core NATS (a's
`runnel_cluster_values_sent_total`, b's `runnel_cluster_values_received_total`), those of a replay
subject made with `create` come to b from JetStream, and so do a map's changes (one waiting
per key, the last of each key arriving); none is lost on the way (no
`runnel_cluster_values_missed_total` on b, no `runnel_cluster_values_dropped_total` on a), so every
value missing was conflated away. Then, with slow_consumer = "conflate" configured on b, a `sub`
that does not ask for `conflate` conflates too. No timings but deadlines.
"""

import json
import re
import urllib.request

import pytest

from runneld_process import LineClient, poll_until, stats
from test_cluster import c, caught_up, create, publish_all, publish_with_refs, stop_nodes, stored_pos  # noqa: F401

COUNT = 10_000
PAD = "x" * 1000


def node_b(policy):
    """b's extra config: small limits, a grace longer than a check, under `policy`."""
    return f"""
slow_consumer = "{policy}"
soft_pending_bytes = 65536
max_pending_bytes = 1048576
soft_pending_seconds = 30
"""


def metric(d, name):
    """The value of the counter `name` (no labels) in d's /metrics."""
    with urllib.request.urlopen(d.url + "/metrics", timeout=5) as response:
        text = response.read().decode()
    found = re.search(rf"^{name} (\S+)$", text, re.MULTILINE)
    assert found, f"no {name} in node {d.port}'s /metrics"
    return int(float(found.group(1)))


CLUSTER_COUNTERS = ("runnel_cluster_values_sent_total", "runnel_cluster_values_received_total",
                    "runnel_cluster_values_missed_total", "runnel_cluster_values_dropped_total")


def counters(c):
    """Each node's `stats` and cluster counters now."""
    return {node: {"stats": stats(c[node]), **{name: metric(c[node], name) for name in CLUSTER_COUNTERS}}
            for node in "ab"}


def stalled(d, subject, **fields):
    """A subscriber that will read nothing until told to: a small receive buffer, so what it does
    not read stays with the server; its sid is "s"."""
    client = LineClient(d.port, receive_buffer=4096, timeout=10)
    reply = client.request({"op": "sub", "subject": subject, "sid": "s", **fields})
    assert reply["ok"], (subject, fields, reply)
    return client


def values():
    return [{"n": n, "pad": PAD} for n in range(COUNT)]


def publish_over_nats(c, subject, before):
    """Publishes COUNT values to the plain subject `subject` on a, 1,000 at a time, each thousand
    sent over NATS before the next is published (a's send queue, `cluster_send_buffer_bytes`,
    never near full), then waits until b has received them all."""
    sent = before["a"]["runnel_cluster_values_sent_total"]
    items = values()
    for start in range(0, COUNT, 1000):
        publish_all(c.client("a"), subject, items[start:start + 1000])
        poll_until(lambda: metric(c["a"], "runnel_cluster_values_sent_total") - sent,
                   lambda count, start=start: count == start + 1000, "a sending every value over NATS", 10)
    poll_until(lambda: metric(c["b"], "runnel_cluster_values_received_total")
               - before["b"]["runnel_cluster_values_received_total"],
               lambda count: count == COUNT, "b receiving every value over NATS", 10)


def read_conflated(client):
    """Reads the stalled subscriber until the last value; checks what conflation promises and
    returns how many values it was told were replaced, and the last value's `next` event."""
    received, gaps, pending, line = [], [], None, None
    while not received or received[-1] != COUNT - 1:
        try:
            line = client.line()
        except TimeoutError:
            raise AssertionError(f"nothing for 10 s after {len(received)} values (the last "
                                 f"{received[-3:]}) and {len(gaps)} dropped events") from None
        except (EOFError, ConnectionResetError) as error:
            raise AssertionError(f"the conflating subscriber was cut ({error!r}) after {len(received)} "
                                 "values") from None
        assert line.get("ev") != "closing", f"the conflating subscriber was cut: {line}"
        assert line.get("sid") == "s" and line.get("ev") in ("next", "dropped"), line
        if line["ev"] == "dropped":
            assert pending is None, f"two dropped events in a row: {pending}, {line}"
            assert isinstance(line.get("count"), int) and line["count"] > 0, line
            pending = line["count"]
            continue
        n = line["value"]["n"]
        previous = received[-1] if received else -1
        assert n > previous, f"{n} after {previous}: out of order or repeated"
        # A gap is told where its values would have been: the values between those around it.
        assert n - previous - 1 == (pending or 0), f"{n} after {previous}, the dropped event between said {pending}"
        if pending:
            gaps.append(pending)
        pending = None
        received.append(n)
    replaced = sum(gaps)
    # Not all: what the kernel's socket buffers took before b's output passed its soft limit came.
    assert gaps, f"no dropped event in {len(received)} values: nothing was conflated"
    assert len(received) + replaced == COUNT, (len(received), replaced)
    return replaced, line


def expect_conflated_only(before, after, replaced, cut):
    """b counted the replaced values in `dropped`, cut `cut` connections (the subscribers that did
    not conflate), and the cluster lost nothing on the way."""
    b, b_then = after["b"], before["b"]
    assert b["stats"]["dropped"] - b_then["stats"]["dropped"] == replaced, (b["stats"]["dropped"], replaced)
    cuts = b["stats"]["slow_consumer_disconnects"] - b_then["stats"]["slow_consumer_disconnects"]
    assert cuts == cut, f"{cuts} subscribers cut, expected {cut}"
    assert b["runnel_cluster_values_missed_total"] == b_then["runnel_cluster_values_missed_total"], (b, b_then)
    a, a_then = after["a"], before["a"]
    assert a["runnel_cluster_values_dropped_total"] == a_then["runnel_cluster_values_dropped_total"], (a, a_then)


def expect_cut(client):
    """A subscriber that did not conflate: cut (the server closed the connection; its `closing`
    line, flushed for 2 s only, may have been given up), having had no `dropped` event."""
    try:
        while True:
            line = client.line()
            assert line.get("ev") in ("next", "closing"), f"the subscriber that did not conflate got {line}"
    except (EOFError, ConnectionResetError):
        pass
    except TimeoutError:
        raise AssertionError("the subscriber that did not conflate was not cut") from None
    finally:
        client.close()


@pytest.mark.cluster(("a", "conf"), ("b", "conf", node_b("disconnect")))
class TestConflationInACluster:
    """b under slow_consumer = "disconnect": only a subscription made with `conflate` conflates."""

    def test_a_conflating_subscriber_of_a_plain_subject_gets_another_nodes_latest_values(self, c):
        before = counters(c)
        subscriber = stalled(c["b"], "cc.plain", conflate=True)
        plain = stalled(c["b"], "cc.plain")
        try:
            publish_over_nats(c, "cc.plain", before)
            expect_cut(plain)
            replaced, _ = read_conflated(subscriber)
            expect_conflated_only(before, counters(c), replaced, cut=1)
        finally:
            subscriber.close()
            plain.close()

    def test_a_conflating_subscriber_of_a_replay_subject_gets_the_latest_values_from_jetstream(self, c):
        create(c, "a", subject="cc.replay", kind="replay", capacity=COUNT)
        before = counters(c)
        subscriber = stalled(c["b"], "cc.replay", conflate=True, positions=True)
        plain = stalled(c["b"], "cc.replay")
        try:
            # Each pub answered once JetStream stored it; b delivers them from its own consumer.
            publish_with_refs(c.client("a"), "cc.replay", values())
            stored = stored_pos(c, "cc.replay")
            caught_up(c, "b", "cc.replay", stored, seconds=10)
            expect_cut(plain)
            replaced, last = read_conflated(subscriber)
            # The last value at the stream's last sequence number: JetStream's position.
            assert last["pos"] == stored, (last["pos"], stored)
            after = counters(c)
            expect_conflated_only(before, after, replaced, cut=1)
            # None of them crossed as a plain value.
            for node, name in (("a", "runnel_cluster_values_sent_total"),
                               ("b", "runnel_cluster_values_received_total")):
                assert after[node][name] == before[node][name], (node, name, after[node][name], before[node][name])
        finally:
            subscriber.close()
            plain.close()

    def test_a_conflating_subscriber_of_a_map_gets_each_keys_latest_change(self, c):
        # 100 keys at most: the map's stream keeps 64 changes of each (docs/protocol.md), more
        # than b's consumer falls behind by in this burst.
        create(c, "a", subject="cc.map", kind="map", max_keys=100)
        before = counters(c)
        subscriber = stalled(c["b"], "cc.map", conflate=True)
        plain = stalled(c["b"], "cc.map")
        try:
            # The map is empty: each is synced at once.
            for client in (subscriber, plain):
                assert client.line() == {"ev": "synced", "sid": "s"}
            # COUNT writes over 100 keys, each answered once JetStream stored it.
            writer = c.client("a")
            writer.socket.sendall(b"".join(
                json.dumps({"op": "pub", "subject": "cc.map", "key": f"k{n % 100}", "value": value,
                            "ref": f"p{n}"}).encode() + b"\n" for n, value in enumerate(values())))
            for n in range(COUNT):
                reply = writer.line()
                assert reply.get("ref") == f"p{n}" and reply.get("ok") is True, reply
            caught_up(c, "b", "cc.map", stored_pos(c, "cc.map"), seconds=10)
            expect_cut(plain)
            table, received, replaced = {}, 0, 0
            while table != {f"k{n}": COUNT - 100 + n for n in range(100)}:
                line = subscriber.line()
                assert line.get("sid") == "s" and line.get("ev") in ("next", "dropped"), line
                if line["ev"] == "dropped":
                    replaced += line["count"]
                    continue
                assert line["value"]["n"] > table.get(line["key"], -1), ("a key's changes out of order", line)
                table[line["key"]] = line["value"]["n"]
                received += 1
            assert replaced > 0 and received + replaced == COUNT, (received, replaced)
            expect_conflated_only(before, counters(c), replaced, cut=1)
        finally:
            subscriber.close()
            plain.close()

    def test_clean_stop(self, c):
        stop_nodes(c)


@pytest.mark.cluster(("a", "confpol"), ("b", "confpol", node_b("conflate")))
class TestConflationPolicyInACluster:
    """b under slow_consumer = "conflate": every subscription there conflates."""

    def test_a_plain_sub_on_a_node_configured_to_conflate_is_conflated(self, c):
        before = counters(c)
        subscriber = stalled(c["b"], "cp.plain")
        try:
            publish_over_nats(c, "cp.plain", before)
            replaced, _ = read_conflated(subscriber)
            expect_conflated_only(before, counters(c), replaced, cut=0)
        finally:
            subscriber.close()

    def test_clean_stop(self, c):
        stop_nodes(c)
