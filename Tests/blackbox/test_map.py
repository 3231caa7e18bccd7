"""Map subjects (version 1.3, "Keyed subjects") against a real runneld over TCP
(docs/protocol.md, "Keyed subjects").

    python3 -m pytest Tests/blackbox/test_map.py [--runneld PATH] [--loops N]

`create` of a map and its shape (`ttl_s`, `max_keys`: the same shape matches, another is
`kind_mismatch`, nonsense is `bad_request` and creates nothing); `pub` with `key` and `delete`,
every malformed one `bad_request` on a connection that goes on answering; `max_keys` refusing a
new key with `limit` and changing nothing. A subscriber gets a snapshot, exactly one `synced`,
then every change in order; the table it builds equals the writer's after `synced` and after
each change, also while a second connection writes 2,000+ changes over 200 keys around the
`sub` (each event's `pos` names the change it is, `synced`'s the map's). Removals (`deleted`, `expired` within the
sweep's second), positions and `from` (resumed with exactly the changes after it, or a fresh
snapshot), stages seeing `$key`, pattern subscriptions (changes only, with `subject`),
`since`/`until` refused, `list` entries, `complete` and `delete` of a map. HTTP, SSE, WebSocket and conflation: test_map_stream.py.
No timings but deadlines, except where a key's age is the point.
"""

import json
import threading
import time

import pytest
from runneld_process import LineClient, assert_clean_stop


def create_map(client, subject, **shape):
    reply = client.request({"op": "create", "subject": subject, "kind": "map", **shape})
    assert reply == {"ok": True, "ref": 1}, reply


def write(client, subject, key, value):
    reply = client.request({"op": "pub", "subject": subject, "key": key, "value": value})
    assert reply["ok"] is True, (key, value, reply)
    return reply


def remove(client, subject, key):
    reply = client.request({"op": "pub", "subject": subject, "key": key, "delete": True})
    assert reply["ok"] is True, (key, reply)
    return reply


def entry(client, subject):
    """`subject`'s `list` entry."""
    entries = [e for e in client.request({"op": "list", "prefix": subject})["subjects"] if e["subject"] == subject]
    assert len(entries) == 1, entries
    return entries[0]


def seq(pos):
    """The seq of a position `EPOCH:SEQ`."""
    return int(pos.rpartition(":")[2])


def epoch(client, subject):
    return entry(client, subject)["pos"].rpartition(":")[0]


def refused(client, request, code="bad_request"):
    """`request` fails with `code`, and the connection goes on answering."""
    reply = client.request(request)
    assert reply["ok"] is False and reply["code"] == code, (request, reply)
    assert client.request({"op": "ping"})["ok"] is True, ("no answer after", request)


def subscribe(client, subject, sid, **options):
    reply = client.request({"op": "sub", "subject": subject, "sid": sid, **options})
    assert reply["ok"] is True and reply["sid"] == sid, reply
    return reply


def until_synced(client, sid, pos=None):
    """The snapshot `sid` gets before its `synced`, as {key: event}; no key twice, nothing else.
    With `pos` (a subscription with positions), `synced` carries the map's position, `pos`
    ("?": any); the snapshot keeps it as `synced`."""
    snapshot = Snapshot()
    while True:
        line = client.line()
        if line.get("ev") == "synced":
            expected = {"ev": "synced", "sid": sid} if pos is None else {"ev": "synced", "sid": sid, "pos": pos}
            if pos == "?":
                expected["pos"] = line.get("pos")
                assert isinstance(line.get("pos"), str), line
            assert line == expected, line
            snapshot.synced = line.get("pos")
            return snapshot
        assert line.get("ev") == "next" and line.get("sid") == sid and "key" in line, line
        assert line["key"] not in snapshot, ("a key twice in a snapshot", line)
        snapshot[line["key"]] = line


class Snapshot(dict):
    """{key: its `next` event}, and `synced`: the position `synced` carried, or None."""
    synced = None


def values(snapshot):
    return {key: line["value"] for key, line in snapshot.items()}


@pytest.mark.daemon("")
class TestMap:
    def test_create_matches_its_shape_and_refuses_nonsense(self, d):
        client = LineClient(d.port)
        shape = {"op": "create", "subject": "m.shape", "kind": "map", "ttl_s": 5, "max_keys": 10}
        assert client.request(shape) == {"ok": True, "ref": 1}
        assert client.request(shape) == {"ok": True, "ref": 1}, "the same shape matches"
        for other in ({"ttl_s": 6}, {"max_keys": 11}, {"ttl_s": None}, {"max_keys": None}):
            refused(client, {k: v for k, v in dict(shape, **other).items() if v is not None}, "kind_mismatch")
        for kind in ("replay", "behavior", "subject"):
            refused(client, {"op": "create", "subject": "m.shape", "kind": kind}, "kind_mismatch")
        create_map(client, "m.bare")
        create_map(client, "m.bare")
        refused(client, {"op": "create", "subject": "m.bare", "kind": "map", "ttl_s": 5}, "kind_mismatch")
        assert client.request({"op": "pub", "subject": "m.plain", "value": 1})["ok"]
        refused(client, {"op": "create", "subject": "m.plain", "kind": "map"}, "kind_mismatch")
        for n, bad in enumerate(({"capacity": 10}, {"value": 1}, {"retain_s": 5}, {"ttl_s": 0}, {"ttl_s": -1},
                                 {"ttl_s": "5"}, {"ttl_s": 3.3e10}, {"max_keys": 0}, {"max_keys": -1},
                                 {"max_keys": 2.5}, {"max_keys": "10"}, {"max_keys": 100001})):
            refused(client, {"op": "create", "subject": f"m.bad{n}", "kind": "map", **bad})
        assert client.request({"op": "list", "prefix": "m.bad"})["subjects"] == []
        client.close()

    def test_pub_sets_and_deletes_keys_and_refuses_bad_keys(self, d):
        client, watcher = LineClient(d.port), LineClient(d.port)
        create_map(client, "m.pub")
        subscribe(watcher, "m.pub", "w")
        assert until_synced(watcher, "w") == {}
        assert write(client, "m.pub", "a", {"x": 1}) == {"ok": True, "ref": 1, "receivers": 1}
        assert remove(client, "m.pub", "a") == {"ok": True, "ref": 1, "receivers": 1}
        remove(client, "m.pub", "never")  # absent: a no-op, still answered
        long_key = "é" * 127 + "a"  # 255 bytes
        write(client, "m.pub", long_key, 2)
        for bad in ({"value": 1}, {"key": 5, "value": 1}, {"key": None, "value": 1}, {"key": "", "value": 1},
                    {"key": "é" * 128, "value": 1}, {"delete": True}, {"key": ["a"], "delete": True}):
            refused(client, {"op": "pub", "subject": "m.pub", **bad})
        # Keys and deletes belong to maps: a plain subject, a replay, and a missing subject
        # (which a key does not auto-create).
        assert client.request({"op": "pub", "subject": "m.plainpub", "value": 1})["ok"]
        assert client.request({"op": "create", "subject": "m.replay", "kind": "replay"})["ok"]
        for subject in ("m.plainpub", "m.replay", "m.missing"):
            refused(client, {"op": "pub", "subject": subject, "key": "a", "value": 1})
            refused(client, {"op": "pub", "subject": subject, "key": "a", "delete": True})
            refused(client, {"op": "pub", "subject": subject, "delete": True})
        assert client.request({"op": "list", "prefix": "m.missing"})["subjects"] == []
        write(client, "m.pub", "end", None)
        assert [watcher.line() for _ in range(4)] == [
            {"ev": "next", "sid": "w", "key": "a", "value": {"x": 1}},
            {"ev": "removed", "sid": "w", "key": "a", "reason": "deleted"},
            {"ev": "next", "sid": "w", "key": long_key, "value": 2},
            {"ev": "next", "sid": "w", "key": "end", "value": None}]
        listed = entry(client, "m.pub")
        assert listed["keys"] == 2 and seq(listed["pos"]) == 4, listed
        client.close()
        watcher.close()

    def test_max_keys_refuses_a_new_key_with_limit_and_changes_nothing(self, d):
        client = LineClient(d.port)
        create_map(client, "m.limit", max_keys=2)
        write(client, "m.limit", "a", 1)
        write(client, "m.limit", "b", 2)
        before = entry(client, "m.limit")
        refused(client, {"op": "pub", "subject": "m.limit", "key": "c", "value": 3}, "limit")
        assert entry(client, "m.limit") == before
        write(client, "m.limit", "a", 10)  # an existing key is no new key
        remove(client, "m.limit", "b")
        write(client, "m.limit", "c", 3)
        refused(client, {"op": "pub", "subject": "m.limit", "key": "d", "value": 4}, "limit")
        subscribe(client, "m.limit", "s")
        assert values(until_synced(client, "s")) == {"a": 10, "c": 3}
        assert entry(client, "m.limit")["keys"] == 2
        client.close()

    def test_a_late_subscriber_gets_a_snapshot_one_synced_then_changes(self, d):
        writer, reader = LineClient(d.port), LineClient(d.port)
        create_map(writer, "m.snap")
        for key, value in (("a", 1), ("b", 2), ("c", 3), ("a", 4)):
            write(writer, "m.snap", key, value)
        remove(writer, "m.snap", "b")
        subscribe(reader, "m.snap", "s")
        assert values(until_synced(reader, "s")) == {"a": 4, "c": 3}
        write(writer, "m.snap", "d", 5)
        remove(writer, "m.snap", "a")
        write(writer, "m.snap", "c", 6)
        assert [reader.line() for _ in range(3)] == [
            {"ev": "next", "sid": "s", "key": "d", "value": 5},
            {"ev": "removed", "sid": "s", "key": "a", "reason": "deleted"},
            {"ev": "next", "sid": "s", "key": "c", "value": 6}]
        # A second subscription on the same connection: its own snapshot and its own synced;
        # the first gets no second one.
        subscribe(reader, "m.snap", "t")
        assert values(until_synced(reader, "t")) == {"c": 6, "d": 5}
        write(writer, "m.snap", "e", 7)
        assert sorted([reader.line() for _ in range(2)], key=lambda line: line["sid"]) == [
            {"ev": "next", "sid": "s", "key": "e", "value": 7}, {"ev": "next", "sid": "t", "key": "e", "value": 7}]
        writer.close()
        reader.close()

    def test_the_table_tracks_a_concurrent_writer_after_synced_and_every_change(self, d):
        client = LineClient(d.port)
        create_map(client, "m.race")
        assert seq(entry(client, "m.race")["pos"]) == 0
        changes = []  # the writer's changes in order: (key, value), value None for a delete; the n-th has seq n
        halfway, subscribed, finished = threading.Event(), threading.Event(), threading.Event()
        errors = []

        def run():
            try:
                writer = LineClient(d.port, timeout=60, no_delay=True)
                model, after = {}, None
                while after is None or len(changes) < max(after + 1000, 2000):
                    batch = []
                    for _ in range(50):
                        n = len(changes)
                        key = f"k{n * 7 % 200}"
                        if n % 9 == 8 and key in model:
                            del model[key]
                            changes.append((key, None))
                            batch.append({"op": "pub", "subject": "m.race", "key": key, "delete": True})
                        else:
                            model[key] = n
                            changes.append((key, n))
                            batch.append({"op": "pub", "subject": "m.race", "key": key, "value": n})
                    writer.socket.sendall(b"".join(json.dumps(r).encode() + b"\n" for r in batch))
                    if len(changes) >= 1000:
                        halfway.set()
                    if after is None and subscribed.is_set():
                        after = len(changes)
                writer.send({"op": "pub", "subject": "m.race", "key": "marker", "value": "end", "ref": "last"})
                reply = writer.line()
                assert reply == {"ok": True, "ref": "last", "receivers": 1}, reply
                writer.close()
            except Exception as error:  # noqa: BLE001 - reported below
                errors.append(error)
            finished.set()

        threading.Thread(target=run, daemon=True).start()
        assert halfway.wait(60), errors
        # The writer does not wait for the server: a slow one (the thread sanitizer's, at four
        # loops) may have taken none of its changes yet. The snapshot is to hold some of them.
        deadline = time.monotonic() + 60
        while seq(entry(client, "m.race")["pos"]) <= 100:
            assert time.monotonic() < deadline and not errors, errors
            time.sleep(0.01)
        reader = LineClient(d.port, timeout=60)
        subscribe(reader, "m.race", "s", positions=True)
        subscribed.set()
        snapshot = until_synced(reader, "s", "?")
        events = []
        while not events or events[-1].get("key") != "marker":
            events.append(reader.line())
        assert finished.wait(60) and not errors, errors
        changes.append(("marker", "end"))
        # The snapshot is the table after the change just before the first one delivered, each
        # key at the position of its own last write.
        first = seq(events[0]["pos"])
        model, last_write = {}, {}
        for n, (key, value) in enumerate(changes[:first - 1], start=1):
            if value is None:
                model.pop(key)
            else:
                model[key], last_write[key] = value, n
        assert values(snapshot) == model, "the snapshot is no state the map was in"
        assert snapshot.synced == f"{events[0]['pos'].rpartition(':')[0]}:{first - 1}", (snapshot.synced, first)
        assert {key: seq(line["pos"]) for key, line in snapshot.items()} == {key: last_write[key] for key in model}
        # Then every change after it, in order, each naming its own position.
        table = values(snapshot)
        for n, event in enumerate(events, start=first):
            key, value = changes[n - 1]
            if value is None:
                assert event == {"ev": "removed", "sid": "s", "key": key, "reason": "deleted", "pos": event["pos"]}
                assert seq(event["pos"]) == n and key in table, (n, event)
                del table[key]
                model.pop(key)
            else:
                assert event == {"ev": "next", "sid": "s", "key": key, "value": value, "pos": event["pos"]}
                assert seq(event["pos"]) == n, (n, event)
                table[key] = model[key] = value
            assert table == model, n
        assert seq(events[-1]["pos"]) == len(changes) and 100 < first < len(changes) - 500, (first, len(changes))
        listed = entry(client, "m.race")
        assert listed["keys"] == len(table) and seq(listed["pos"]) == len(changes), listed
        reader.close()
        client.close()

    def test_removals_say_deleted_or_expired(self, d):
        writer, reader = LineClient(d.port), LineClient(d.port, timeout=5)
        create_map(writer, "m.ttl", ttl_s=1)
        subscribe(reader, "m.ttl", "s", positions=True)
        assert until_synced(reader, "s", f"{epoch(writer, 'm.ttl')}:0") == {}
        # Unwritten for a second: gone within the sweep's second after.
        start = time.monotonic()
        write(writer, "m.ttl", "a", 1)
        line = reader.line()
        assert line == {"ev": "next", "sid": "s", "key": "a", "value": 1, "pos": line["pos"]}, line
        gone = reader.line()
        age = time.monotonic() - start
        assert gone == {"ev": "removed", "sid": "s", "key": "a", "reason": "expired", "pos": gone["pos"]}, gone
        assert seq(gone["pos"]) == seq(line["pos"]) + 1 and 0.95 <= age <= 3.0, (gone, age)
        # A write starts its age again.
        start = time.monotonic()
        write(writer, "m.ttl", "b", 1)
        time.sleep(0.6)
        rewritten = time.monotonic()
        write(writer, "m.ttl", "b", 2)
        assert [reader.line()["value"] for _ in range(2)] == [1, 2]
        gone = reader.line()
        assert gone["ev"] == "removed" and gone["key"] == "b" and gone["reason"] == "expired", gone
        assert 0.95 <= time.monotonic() - rewritten <= 3.0 and time.monotonic() - start >= 1.55
        assert entry(writer, "m.ttl")["keys"] == 0
        subscribe(writer, "m.ttl", "late")
        assert until_synced(writer, "late") == {}
        writer.close()
        reader.close()

    def test_positions_and_from(self, d):
        writer, reader = LineClient(d.port), LineClient(d.port)
        create_map(writer, "m.pos")
        write(writer, "m.pos", "a", 1)
        write(writer, "m.pos", "b", 2)
        write(writer, "m.pos", "a", 3)
        remove(writer, "m.pos", "b")
        e = epoch(writer, "m.pos")
        subscribe(reader, "m.pos", "p", positions=True)
        assert until_synced(reader, "p", f"{e}:4") == {
            "a": {"ev": "next", "sid": "p", "key": "a", "value": 3, "pos": f"{e}:3"}}
        write(writer, "m.pos", "c", 5)
        remove(writer, "m.pos", "a")
        assert [reader.line(), reader.line()] == [
            {"ev": "next", "sid": "p", "key": "c", "value": 5, "pos": f"{e}:5"},
            {"ev": "removed", "sid": "p", "key": "a", "reason": "deleted", "pos": f"{e}:6"}]
        assert reader.request({"op": "unsub", "sid": "p"})["ok"]
        # From a position the map still holds: exactly the changes after it, then synced.
        assert reader.request({"op": "sub", "subject": "m.pos", "sid": "r", "from": f"{e}:2"}) == \
            {"ok": True, "ref": 1, "sid": "r", "resumed": True}
        assert [reader.line() for _ in range(4)] == [
            {"ev": "next", "sid": "r", "key": "a", "value": 3, "pos": f"{e}:3"},
            {"ev": "removed", "sid": "r", "key": "b", "reason": "deleted", "pos": f"{e}:4"},
            {"ev": "next", "sid": "r", "key": "c", "value": 5, "pos": f"{e}:5"},
            {"ev": "removed", "sid": "r", "key": "a", "reason": "deleted", "pos": f"{e}:6"}]
        assert until_synced(reader, "r", f"{e}:6") == {}
        assert reader.request({"op": "sub", "subject": "m.pos", "sid": "now", "from": f"{e}:6"})["resumed"] is True
        assert until_synced(reader, "now", f"{e}:6") == {}
        write(writer, "m.pos", "d", 7)
        assert sorted([reader.line(), reader.line()], key=lambda line: line["sid"]) == [
            {"ev": "next", "sid": "now", "key": "d", "value": 7, "pos": f"{e}:7"},
            {"ev": "next", "sid": "r", "key": "d", "value": 7, "pos": f"{e}:7"}]
        # Another epoch, a seq beyond the latest: a fresh snapshot, then synced.
        for sid, pos in (("other", "someother:1"), ("beyond", f"{e}:99")):
            assert writer.request({"op": "sub", "subject": "m.pos", "sid": sid, "from": pos}) == \
                {"ok": True, "ref": 1, "sid": sid, "resumed": False}
            assert until_synced(writer, sid, f"{e}:7") == {
                "c": {"ev": "next", "sid": sid, "key": "c", "value": 5, "pos": f"{e}:5"},
                "d": {"ev": "next", "sid": sid, "key": "d", "value": 7, "pos": f"{e}:7"}}
        refused(reader, {"op": "sub", "subject": "m.pos", "from": "nonsense"})
        # Too old: 3,000 changes later, a 4-key map no longer holds them.
        old_writer = LineClient(d.port, timeout=60)
        create_map(old_writer, "m.old", max_keys=4)
        write(old_writer, "m.old", "a", -1)
        old, old_epoch = entry(old_writer, "m.old")["pos"], epoch(old_writer, "m.old")
        old_writer.socket.sendall(b"".join(json.dumps({"op": "pub", "subject": "m.old", "key": "abcd"[n % 4],
                                                       "value": n}).encode() + b"\n" for n in range(3000)))
        assert old_writer.request({"op": "ping"})["ok"]
        assert seq(entry(old_writer, "m.old")["pos"]) == 3001
        fresh = LineClient(d.port)
        assert fresh.request({"op": "sub", "subject": "m.old", "sid": "o", "from": old}) == \
            {"ok": True, "ref": 1, "sid": "o", "resumed": False}
        assert values(until_synced(fresh, "o", f"{old_epoch}:3001")) == \
            {"a": 2996, "b": 2997, "c": 2998, "d": 2999}
        for client in (writer, reader, old_writer, fresh):
            client.close()

    def test_stages_see_key_and_removals_pass_them(self, d):
        writer, reader = LineClient(d.port), LineClient(d.port)
        create_map(writer, "m.st")
        write(writer, "m.st", "a", 1)
        write(writer, "m.st", "b", 2)
        subscribe(reader, "m.st", "f", ops=[{"op": "filter", "expr": '$key == "a" || . > 10'}])
        assert values(until_synced(reader, "f")) == {"a": 1}
        write(writer, "m.st", "b", 3)
        remove(writer, "m.st", "b")  # never let through: not reported
        write(writer, "m.st", "x", 20)
        write(writer, "m.st", "x", 5)  # filtered, but x was let through once: its removal is reported
        write(writer, "m.st", "a", 4)
        remove(writer, "m.st", "x")
        remove(writer, "m.st", "a")
        assert [reader.line() for _ in range(4)] == [
            {"ev": "next", "sid": "f", "key": "x", "value": 20},
            {"ev": "next", "sid": "f", "key": "a", "value": 4},
            {"ev": "removed", "sid": "f", "key": "x", "reason": "deleted"},
            {"ev": "removed", "sid": "f", "key": "a", "reason": "deleted"}]
        write(writer, "m.st", "b", 6)
        subscribe(reader, "m.st", "m", ops=[{"op": "map", "expr": '{"k": $key, "v": .}'}])
        assert values(until_synced(reader, "m")) == {"b": {"k": "b", "v": 6}}
        write(writer, "m.st", "c", 7)
        remove(writer, "m.st", "b")
        assert [reader.line() for _ in range(2)] == [
            {"ev": "next", "sid": "m", "key": "c", "value": {"k": "c", "v": 7}},
            {"ev": "removed", "sid": "m", "key": "b", "reason": "deleted"}]
        writer.close()
        reader.close()

    def test_a_pattern_gets_changes_with_subject_and_key_but_no_snapshot(self, d):
        writer, reader = LineClient(d.port), LineClient(d.port)
        create_map(writer, "pm.a")
        write(writer, "pm.a", "old", 1)
        subscribe(reader, "pm.>", "p")
        assert write(writer, "pm.a", "k", {"v": 1}) == {"ok": True, "ref": 1, "receivers": 1}
        remove(writer, "pm.a", "old")
        writer.request({"op": "pub", "subject": "pm.plain", "value": 2})
        assert [reader.line() for _ in range(3)] == [
            {"ev": "next", "sid": "p", "subject": "pm.a", "key": "k", "value": {"v": 1}},
            {"ev": "removed", "sid": "p", "subject": "pm.a", "key": "old", "reason": "deleted"},
            {"ev": "next", "sid": "p", "subject": "pm.plain", "value": 2}]
        writer.close()
        reader.close()

    def test_since_and_until_on_a_map_are_bad_requests(self, d):
        client = LineClient(d.port)
        create_map(client, "m.since")
        write(client, "m.since", "a", 1)
        for request in ({"op": "sub", "subject": "m.since", "since": 0},
                        {"op": "sub", "subject": "m.since", "since": "2020-01-01T00:00:00Z"},
                        {"op": "sub", "subject": "m.since", "until": int(time.time() * 1000) + 60000}):
            refused(client, request)
        assert entry(client, "m.since")["subscribers"] == 0
        client.close()

    def test_list_entries_of_maps(self, d):
        client = LineClient(d.port)
        create_map(client, "ml.ttl", ttl_s=30, max_keys=10)
        create_map(client, "ml.plain")
        for key in "xyz":
            write(client, "ml.ttl", key, key)
        remove(client, "ml.ttl", "y")
        ttl, plain = entry(client, "ml.ttl"), entry(client, "ml.plain")
        assert (ttl["kind"], ttl["keys"], ttl["max_keys"], ttl["ttl_s"], seq(ttl["pos"])) == ("map", 2, 10, 30, 4), ttl
        assert (plain["kind"], plain["keys"], plain["max_keys"]) == ("map", 0, 100000), plain
        assert "ttl_s" not in plain and "capacity" not in plain and "capacity" not in ttl, (ttl, plain)
        client.close()

    def test_a_terminated_map_keeps_its_keys_and_refuses_changes(self, d):
        writer, reader = LineClient(d.port), LineClient(d.port)
        create_map(writer, "m.end")
        write(writer, "m.end", "a", 1)
        subscribe(reader, "m.end", "s")
        assert values(until_synced(reader, "s")) == {"a": 1}
        assert writer.request({"op": "complete", "subject": "m.end"})["ok"]
        assert reader.line() == {"ev": "completed", "sid": "s"}
        refused(writer, {"op": "pub", "subject": "m.end", "key": "a", "value": 2}, "terminated")
        refused(writer, {"op": "pub", "subject": "m.end", "key": "a", "delete": True}, "terminated")
        subscribe(reader, "m.end", "t")
        assert [reader.line() for _ in range(3)] == [
            {"ev": "next", "sid": "t", "key": "a", "value": 1}, {"ev": "synced", "sid": "t"},
            {"ev": "completed", "sid": "t"}]
        create_map(writer, "m.gone")
        subscribe(reader, "m.gone", "g")
        assert until_synced(reader, "g") == {}
        assert writer.request({"op": "delete", "subject": "m.gone"})["ok"]
        assert reader.line() == {"ev": "completed", "sid": "g"}
        writer.close()
        reader.close()

    def test_clean_stop(self, d):
        assert_clean_stop(d)


@pytest.mark.daemon("max_map_keys = 50\n")
class TestMaxMapKeys:
    def test_the_config_bounds_max_keys_and_gives_the_default(self, d):
        client = LineClient(d.port)
        refused(client, {"op": "create", "subject": "mk.over", "kind": "map", "max_keys": 51})
        create_map(client, "mk.max", max_keys=50)
        create_map(client, "mk.default")
        assert entry(client, "mk.default")["max_keys"] == 50
        client.socket.sendall(b"".join(json.dumps({"op": "pub", "subject": "mk.default", "key": f"k{n}",
                                                   "value": n}).encode() + b"\n" for n in range(50)))
        refused(client, {"op": "pub", "subject": "mk.default", "key": "one more", "value": 1}, "limit")
        assert entry(client, "mk.default")["keys"] == 50
        client.close()

    def test_clean_stop(self, d):
        assert_clean_stop(d)
