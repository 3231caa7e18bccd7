"""Maps in a cluster (docs/protocol.md, "Keyed subjects" and "Clusters"): three runneld nodes on a
real nats-server with JetStream.

    python3 -m pytest Tests/blackbox/test_cluster_map.py [--runneld PATH] [--loops N]

A map made on one node is every node's, in its shape (`kind_mismatch` elsewhere for another).
Writers on two nodes change overlapping keys at once: a subscriber on each of the three nodes
gets the same changes with the same positions in one order, and the table each builds equals a
late subscriber's snapshot on any node. A write answered on a node is in that node's snapshot at
once. `from` a position given by one node resumes on another with exactly the changes after it;
a node started again reads each key's latest change from the stream (the keys the others hold)
and resumes only after what the stream no longer holds. `ttl_s` expires a key once, on every node, also with a
node killed. HTTP writes and removals on one node reach an SSE stream and a WebSocket on another,
a panel of one key and stages that keep a key out there (its removal not reported). `max_keys`,
bad keys, a durable map (JetStream files) whose node is killed and started again with its keys,
and `delete` (the stream goes). Needs httpx and websockets, as the other suites.
No timings but deadlines, except where a key's age is the point.
"""

import json
import threading
import time

import httpx
import pytest
from websockets.sync.client import connect

from runneld_process import EventStream, LineClient, poll_until
from test_cluster import c, caught_up, create, listed, ok, split_pos, stop_nodes, stream_of  # noqa: F401
from test_map import refused, until_synced, values

NODES = "abc"


def sub(d, subject, sid="s", **fields):
    """A connection of its own with one subscription to `subject`; the reply."""
    client = LineClient(d.port, timeout=10)
    reply = client.request({"op": "sub", "subject": subject, "sid": sid, **fields})
    assert reply["ok"] is True, (subject, fields, reply)
    client.sid = sid
    return client, reply


def changes(client, count, who):
    """The next `count` events of the client's subscription, each a change (`next` with `key`, or
    `removed`), as (key, value or ("removed", reason), pos)."""
    got = []
    for _ in range(count):
        line = client.line()
        assert line.get("sid") == client.sid and line.get("ev") in ("next", "removed") and "key" in line, (
            f"{who}: after {len(got)} changes: {line}")
        change = line["value"] if line["ev"] == "next" else ("removed", line["reason"])
        got.append((line["key"], change, line.get("pos")))
    return got


def applied(table, changes_seen):
    """`table` ({key: value}) after `changes_seen`."""
    table = dict(table)
    for key, change, _ in changes_seen:
        if isinstance(change, tuple):
            del table[key]
        else:
            table[key] = change
    return table


def write(client, subject, key, value, code=None):
    reply = client.request({"op": "pub", "subject": subject, "key": key, "value": value})
    if code is None:
        assert reply["ok"] is True, (key, value, reply)
    else:
        assert reply["ok"] is False and reply["code"] == code, (key, value, reply)
    return reply


def remove(client, subject, key):
    reply = client.request({"op": "pub", "subject": subject, "key": key, "delete": True})
    assert reply["ok"] is True, (key, reply)


def snapshot_of(d, subject, **fields):
    """A new subscription's snapshot on `d` (closed after its `synced`)."""
    client, _ = sub(d, subject, **fields)
    try:
        return until_synced(client, "s", pos="?" if fields.get("positions") else None)
    finally:
        client.close()


@pytest.mark.cluster(("a", "maps"), ("b", "maps"), ("c", "maps"))
class TestMapsInACluster:
    def test_a_map_made_on_one_node_is_every_nodes(self, c):
        create(c, "a", subject="m.t", kind="map", max_keys=50)
        for node in NODES:
            entry = listed(c.client(node), "m.t")
            assert entry["kind"] == "map" and entry["keys"] == 0 and entry["max_keys"] == 50, (node, entry)
        ok(c.client("b").request({"op": "create", "subject": "m.t", "kind": "map", "max_keys": 50}))
        refused(c.client("c"), {"op": "create", "subject": "m.t", "kind": "map", "max_keys": 51}, "kind_mismatch")
        refused(c.client("c"), {"op": "create", "subject": "m.t", "kind": "replay"}, "kind_mismatch")

    def test_every_node_delivers_the_same_changes_in_one_order(self, c):
        readers = {node: sub(c[node], "m.t", positions=True)[0] for node in NODES}
        for node, reader in readers.items():
            assert until_synced(reader, "s", pos="?") == {}, node
        # Two writers on two nodes, over the same 20 keys, each removing some of its own.
        counts = {}

        def writer(node):
            client = LineClient(c[node].port, timeout=10)
            done = 0
            for n in range(150):
                key = f"k{n % 20}"
                if n % 7 == 6:
                    client.request({"op": "pub", "subject": "m.t", "key": key, "delete": True})
                else:
                    write(client, "m.t", key, {"by": node, "n": n})
                done += 1
            counts[node] = done
            client.close()

        threads = [threading.Thread(target=writer, args=(node,)) for node in "ab"]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert counts == {"a": 150, "b": 150}, counts
        # A removal of an absent key changes nothing: the changes are what the stream holds.
        epoch = split_pos(listed(c.client("a"), "m.t")["pos"])[0]
        stored = poll_until(lambda: stream_of(c, epoch), lambda s: s is not None, "the map's stream", 5)
        last = stored["last_seq"]
        seen = {}
        for node, reader in readers.items():
            got = []
            while not got or split_pos(got[-1][2])[1] < last:
                got += changes(reader, 1, f"node {node}")
            seen[node] = got
            reader.close()
        assert seen["a"] == seen["b"] == seen["c"], {n: s[:5] for n, s in seen.items()}
        positions = [split_pos(pos)[1] for _, _, pos in seen["a"]]
        assert positions == sorted(set(positions)), positions
        table = applied({}, seen["a"])
        c.state["table"] = table
        for node in NODES:
            snapshot = snapshot_of(c[node], "m.t", positions=True)
            assert values(snapshot) == table, node
            assert snapshot.synced == f"{epoch}:{last}", (node, snapshot.synced)
        c.state["pos"] = f"{epoch}:{last}"

    def test_a_write_answered_on_a_node_is_in_its_snapshot_at_once(self, c):
        client = c.client("c")
        for n in range(20):
            write(client, "m.t", "mine", n)
            assert values(snapshot_of(c["c"], "m.t"))["mine"] == n
        remove(client, "m.t", "mine")
        assert "mine" not in values(snapshot_of(c["c"], "m.t"))

    def test_from_resumes_on_another_node(self, c):
        # The test before changed the map on c, and a delivers those changes from its own
        # consumer a moment later: a snapshot taken before they come resumes with them on c.
        caught_up(c, "a", "m.t", listed(c.client("c"), "m.t")["pos"])
        reader, _ = sub(c["a"], "m.t", positions=True)
        snapshot = until_synced(reader, "s", pos="?")
        reader.close()
        table, pos = values(snapshot), snapshot.synced
        write(c.client("b"), "m.t", "k1", "after")
        remove(c.client("b"), "m.t", "k2") if "k2" in table else write(c.client("b"), "m.t", "k2", "back")
        write(c.client("a"), "m.t", "new", 1)
        # c delivers from its own consumer, a moment after a's reply: were it behind, its `synced`
        # could come between the three changes (each still arrives, after it).
        caught_up(c, "c", "m.t", listed(c.client("a"), "m.t")["pos"])
        resumed, reply = sub(c["c"], "m.t", positions=True, **{"from": pos})
        assert reply["resumed"] is True, reply
        got = changes(resumed, 3, "from on c")
        assert [key for key, _, _ in got] == ["k1", "k2", "new"], got
        synced = resumed.line()
        assert synced["ev"] == "synced" and synced["pos"] == got[-1][2], synced
        resumed.close()
        c.state["table"] = applied(table, got)
        c.state["pos"] = got[-1][2]
        c.state["old_pos"] = pos

    def test_a_node_started_again_reads_the_keys_and_resumes_after_what_it_read(self, c):
        # One key written more often than the stream keeps of a key (64 changes for a map of 50
        # keys): its first changes are gone from the stream.
        table = c.earlier("table")
        for n in range(70):
            write(c.client("a"), "m.t", "hot", n)
        table["hot"] = 69
        reader, _ = sub(c["a"], "m.t", positions=True)
        c.state["pos"] = until_synced(reader, "s", pos="?").synced
        reader.close()
        c.restart("c")
        snapshot = poll_until(lambda: snapshot_of(c["c"], "m.t", positions=True), lambda s: values(s) == table,
                              "node c's snapshot after its restart", 5)
        assert snapshot.synced == c.earlier("pos"), snapshot.synced
        # Its table came from what the stream holds: changes after `old_pos` are gone, so `from`
        # it starts afresh...
        client, reply = sub(c["c"], "m.t", positions=True, **{"from": c.earlier("old_pos")})
        assert reply["resumed"] is False, reply
        assert values(until_synced(client, "s", pos=c.earlier("pos"))) == table
        client.close()
        # ...and from the latest one resumes with what comes next.
        client, reply = sub(c["c"], "m.t", positions=True, **{"from": c.earlier("pos")})
        assert reply["resumed"] is True, reply
        assert client.line() == {"ev": "synced", "sid": "s", "pos": c.earlier("pos")}
        write(c.client("a"), "m.t", "after-restart", True)
        assert [key for key, _, _ in changes(client, 1, "c after its restart")] == ["after-restart"]
        client.close()

    def test_http_sse_websocket_stages_and_panels_on_other_nodes(self, c):
        create(c, "a", subject="m.web", kind="map")
        epoch = split_pos(listed(c.client("a"), "m.web")["pos"])[0]
        reply = httpx.post(c["a"].url + "/pub/m.web", params={"key": "x"}, json={"n": 1}, timeout=10)
        assert reply.status_code == 200 and reply.json()["ok"] is True, reply.text
        for node in "bc":  # each delivers x from its own consumer, a moment after a's reply
            poll_until(lambda: listed(c.client(node), "m.web")["keys"], lambda n: n == 1, f"node {node}'s keys", 5)
        stream = EventStream(c["b"], {"subject": "m.web"})
        panel, _ = sub(c["c"], "m.web", ops=[{"op": "filter", "expr": '$key == "y"'}])
        staged, _ = sub(c["c"], "m.web", sid="t", ops=[{"op": "filter", "expr": '$key != "y"'},
                                                       {"op": "map", "expr": "$key"}])
        try:
            with connect(c["b"].ws_url, open_timeout=10, close_timeout=5) as ws:
                ws.send(json.dumps({"op": "sub", "subject": "m.web", "sid": "w", "ref": 1}))
                assert json.loads(ws.recv(timeout=10)) == {"ok": True, "ref": 1, "sid": "w"}
                assert [json.loads(ws.recv(timeout=10)) for _ in range(2)] == [
                    {"ev": "next", "sid": "w", "key": "x", "value": {"n": 1}}, {"ev": "synced", "sid": "w"}]
                assert [stream.event(), stream.event()] == [
                    {"id": f"{epoch}:1", "data": '{"key":"x","value":{"n":1}}'},
                    {"event": "synced", "id": f"{epoch}:1", "data": "{}"}]
                assert panel.line() == {"ev": "synced", "sid": "s"}
                assert [staged.line(), staged.line()] == [
                    {"ev": "next", "sid": "t", "key": "x", "value": "x"}, {"ev": "synced", "sid": "t"}]
                write(c.client("a"), "m.web", "y", 2)
                remove(c.client("a"), "m.web", "y")
                reply = httpx.delete(c["a"].url + "/pub/m.web", params={"key": "x"}, timeout=10)
                assert reply.status_code == 200, reply.text
                assert [json.loads(ws.recv(timeout=10)) for _ in range(3)] == [
                    {"ev": "next", "sid": "w", "key": "y", "value": 2},
                    {"ev": "removed", "sid": "w", "key": "y", "reason": "deleted"},
                    {"ev": "removed", "sid": "w", "key": "x", "reason": "deleted"}]
            assert [stream.event() for _ in range(3)] == [
                {"id": f"{epoch}:2", "data": '{"key":"y","value":2}'},
                {"event": "removed", "id": f"{epoch}:3", "data": '{"key":"y","reason":"deleted"}'},
                {"event": "removed", "id": f"{epoch}:4", "data": '{"key":"x","reason":"deleted"}'}]
            # The panel of y gets y's changes only; the stages that kept y out never report it removed.
            assert [panel.line(), panel.line()] == [
                {"ev": "next", "sid": "s", "key": "y", "value": 2},
                {"ev": "removed", "sid": "s", "key": "y", "reason": "deleted"}]
            assert staged.line() == {"ev": "removed", "sid": "t", "key": "x", "reason": "deleted"}
        finally:
            stream.close()
            panel.close()
            staged.close()

    def test_max_keys_and_bad_keys(self, c):
        create(c, "a", subject="m.small", kind="map", max_keys=2)
        write(c.client("a"), "m.small", "x", 1)
        write(c.client("b"), "m.small", "y", 2)
        poll_until(lambda: listed(c.client("c"), "m.small")["keys"], lambda n: n == 2, "node c's keys", 5)
        write(c.client("c"), "m.small", "z", 3, code="limit")
        write(c.client("c"), "m.small", "x", 10)
        for bad in ({"value": 1}, {"key": "", "value": 1}, {"key": "é" * 128, "value": 1}, {"delete": True}):
            refused(c.client("b"), {"op": "pub", "subject": "m.small", **bad})
        # Keys NATS would take as tokens, wildcards or nothing: each a key of its own.
        create(c, "a", subject="m.odd", kind="map")
        odd = ["a.b", "*", ">", "a b", "=41", "é", ".", "x" * 255]
        for n, key in enumerate(odd):
            write(c.client("a"), "m.odd", key, n)
        expected = {key: n for n, key in enumerate(odd)}
        for node in NODES:
            poll_until(lambda: values(snapshot_of(c[node], "m.odd")), lambda t: t == expected,
                       f"node {node}'s odd keys", 5)

    def test_ttl_s_expires_a_key_once_on_every_node(self, c):
        create(c, "a", subject="m.ttl", kind="map", ttl_s=1)
        readers = {node: sub(c[node], "m.ttl", positions=True)[0] for node in NODES}
        for reader in readers.values():
            until_synced(reader, "s", pos="?")
        write(c.client("b"), "m.ttl", "brief", 1)
        got = {}
        for node, reader in readers.items():
            got[node] = changes(reader, 2, f"node {node}")
        assert got["a"] == got["b"] == got["c"], got
        assert [change for _, change, _ in got["a"]] == [1, ("removed", "expired")], got["a"]
        for reader in readers.values():
            reader.socket.settimeout(1.5)
            with pytest.raises(OSError):
                reader.line()  # no second expiry
            reader.close()

    def test_a_key_expires_with_a_node_killed(self, c):
        c.kill("a")
        reader, _ = sub(c["c"], "m.ttl", positions=True)
        until_synced(reader, "s", pos="?")
        start = time.monotonic()
        write(c.client("b"), "m.ttl", "orphan", 1)
        assert [change for _, change, _ in changes(reader, 1, "node c")] == [1]
        reader.socket.settimeout(15)
        assert [change for _, change, _ in changes(reader, 1, "node c")] == [("removed", "expired")]
        # ttl_s, the sweep's second and the stagger of the nodes that outlived it (2 s a rank,
        # c at most 2 behind a killed a still counted alive), with room for a loaded machine.
        assert time.monotonic() - start < 1 + 1 + 2 * 2 + 3, time.monotonic() - start
        reader.close()

    def test_a_durable_map_is_kept_in_jetstream_files(self, c):
        create(c, "b", subject="m.durable", kind="map", durable=True)
        write(c.client("b"), "m.durable", "kept", {"v": 1})
        epoch = split_pos(listed(c.client("b"), "m.durable")["pos"])[0]
        details = c.nats.monitor("/jsz?streams=1&config=1").get("account_details") or [{}]
        config = [s for s in details[0]["stream_detail"] if s["name"].endswith("_" + epoch)][0]["config"]
        # A map of max_keys 100,000 keeps 2 changes of each key (at most about 2 x max_keys).
        assert config["storage"] == "file" and config["max_msgs_per_subject"] == 2, config
        assert listed(c.client("c"), "m.durable")["durable"] is True

    def test_a_node_killed_and_started_again_has_the_durable_maps_keys(self, c):
        client = c.client("b")
        for n in range(50):
            write(client, "m.durable", f"k{n % 10}", n)
        table = values(snapshot_of(c["b"], "m.durable"))
        c.restart("b", kill=True)
        assert values(snapshot_of(c["b"], "m.durable")) == table
        poll_until(lambda: values(snapshot_of(c["c"], "m.durable")), lambda t: t == table, "node c's keys", 5)

    def test_delete_removes_the_map_and_its_stream_everywhere(self, c):
        epoch = split_pos(listed(c.client("b"), "m.durable")["pos"])[0]
        ok(c.client("b").request({"op": "delete", "subject": "m.durable"}))
        for node in "bc":
            poll_until(lambda: listed(c.client(node), "m.durable"), lambda e: e is None, f"node {node}'s list", 5)
        poll_until(lambda: stream_of(c, epoch), lambda s: s is None, "the map's stream deleted", 5)

    def test_clean_stop(self, c):
        stop_nodes(c)
