"""Map subjects (version 1.3, "Keyed subjects") over HTTP, SSE and WebSocket, and conflated to a
reader that stalls (docs/protocol.md, "Keyed subjects" and "Conflation").

    python3 -m pytest Tests/blackbox/test_map_stream.py [--runneld PATH] [--loops N]

`POST /pub/S?key=K` writes and `DELETE /pub/S?key=K` removes (httpx), a missing key or a key
to another kind is 400 `bad_request`; `GET /events?subject=S` gives the snapshot as `id:` and
`data: {"key","value"}` frames, `event: synced`, then changes and `event: removed`, and resumes
from `Last-Event-ID` with the changes after it; a WebSocket (websockets) gets the TCP lines.
Then `"conflate": true` on a map whose reader reads nothing while 24 MB of writes over 50 keys
pass (six times the 4 MiB hard limit, policy disconnect): it is not cut, the server's RSS
grows by less than 8 MiB, and when it reads again it gets each key's latest write or removal, and `dropped`
events counting exactly what was replaced. No timings but deadlines.
Needs httpx (Debian: python3-httpx) and websockets (PyPI, 13 or later).
"""

import json

import httpx
import pytest
from runneld_process import EventStream, LineClient, assert_clean_stop, stats
from websockets.sync.client import connect

from test_map import create_map, entry, remove, subscribe, until_synced, values, write


def expect_error(response, status, code):
    assert response.status_code == status, (response.status_code, response.text)
    body = response.json()
    assert body["ok"] is False and body["code"] == code and isinstance(body["message"], str), body


def synced(event, pos):
    """`event` is SSE's `synced`, its `id:` the map's position `pos`."""
    assert event == {"event": "synced", "id": pos, "data": "{}"}, (event, pos)


def data(event):
    """An SSE event with its `data:` read as JSON."""
    return dict(event, data=json.loads(event["data"]))


@pytest.mark.daemon("")
class TestMapWeb:
    def test_http_writes_and_deletes_keys(self, d):
        client, reader = LineClient(d.port), LineClient(d.port)
        create_map(client, "hm")
        subscribe(reader, "hm", "w")
        assert until_synced(reader, "w") == {}
        key = "a b/é?&="
        response = httpx.post(f"{d.url}/pub/hm", params={"key": key}, json={"x": 1}, timeout=10)
        assert response.status_code == 200 and response.json() == {"ok": True, "receivers": 1}, response.text
        response = httpx.delete(f"{d.url}/pub/hm", params={"key": key}, timeout=10)
        assert response.status_code == 200 and response.json()["ok"] is True, response.text
        response = httpx.delete(f"{d.url}/pub/hm", params={"key": "absent"}, timeout=10)
        assert response.status_code == 200 and response.json()["ok"] is True, response.text
        assert client.request({"op": "pub", "subject": "hp", "value": 1})["ok"]
        expect_error(httpx.post(f"{d.url}/pub/hm", json=1, timeout=10), 400, "bad_request")
        expect_error(httpx.post(f"{d.url}/pub/hm", params={"key": ""}, json=1, timeout=10), 400, "bad_request")
        expect_error(httpx.delete(f"{d.url}/pub/hm", timeout=10), 400, "bad_request")
        expect_error(httpx.post(f"{d.url}/pub/hp", params={"key": "a"}, json=1, timeout=10), 400, "bad_request")
        expect_error(httpx.delete(f"{d.url}/pub/hp", params={"key": "a"}, timeout=10), 400, "bad_request")
        response = httpx.post(f"{d.url}/pub/hm", params={"key": "end"}, content=b'"done"', timeout=10)
        assert response.status_code == 200, response.text
        assert [reader.line() for _ in range(3)] == [
            {"ev": "next", "sid": "w", "key": key, "value": {"x": 1}},
            {"ev": "removed", "sid": "w", "key": key, "reason": "deleted"},
            {"ev": "next", "sid": "w", "key": "end", "value": "done"}]
        assert entry(client, "hm")["keys"] == 1
        client.close()
        reader.close()

    def test_sse_frames_snapshot_synced_changes_and_resume(self, d):
        client = LineClient(d.port)
        create_map(client, "hs")
        write(client, "hs", "a", 1)
        write(client, "hs", "b", [1, 2])
        e = entry(client, "hs")["pos"].rpartition(":")[0]
        stream = EventStream(d, {"subject": "hs"})
        try:
            assert stream.response.status_code == 200, stream.response.status_code
            snapshot = [data(stream.event()), data(stream.event())]
            assert sorted(snapshot, key=lambda event: event["id"]) == [
                {"id": f"{e}:1", "data": {"key": "a", "value": 1}},
                {"id": f"{e}:2", "data": {"key": "b", "value": [1, 2]}}], snapshot
            synced(stream.event(), f"{e}:2")
            write(client, "hs", "c", 3)
            remove(client, "hs", "a")
            assert data(stream.event()) == {"id": f"{e}:3", "data": {"key": "c", "value": 3}}
            assert data(stream.event()) == {"event": "removed", "id": f"{e}:4",
                                            "data": {"key": "a", "reason": "deleted"}}
        finally:
            stream.close()
        # A reconnecting browser: the changes after its last id, then synced.
        stream = EventStream(d, {"subject": "hs"}, headers={"Last-Event-ID": f"{e}:2"})
        try:
            assert [data(stream.event()) for _ in range(2)] == [
                {"id": f"{e}:3", "data": {"key": "c", "value": 3}},
                {"event": "removed", "id": f"{e}:4", "data": {"key": "a", "reason": "deleted"}}]
            synced(stream.event(), f"{e}:4")
        finally:
            stream.close()
        # With ts=true, data carries pos and ts too.
        stream = EventStream(d, {"subject": "hs", "ts": "true", "filter": '$key == "c"'})
        try:
            event = data(stream.event())
            assert event["id"] == f"{e}:3" and set(event["data"]) == {"key", "value", "pos", "ts"}, event
            assert (event["data"]["key"], event["data"]["value"], event["data"]["pos"]) == ("c", 3, f"{e}:3"), event
            synced(stream.event(), f"{e}:4")
        finally:
            stream.close()
        client.close()

    def test_a_websocket_gets_the_same_lines(self, d):
        client = LineClient(d.port)
        create_map(client, "hw")
        write(client, "hw", "a", {"n": 1})
        with connect(d.ws_url, open_timeout=10, close_timeout=5) as ws:
            ws.send(json.dumps({"op": "sub", "subject": "hw", "sid": "w", "ref": 1}))
            assert json.loads(ws.recv(timeout=10)) == {"ok": True, "ref": 1, "sid": "w"}
            assert [json.loads(ws.recv(timeout=10)) for _ in range(2)] == [
                {"ev": "next", "sid": "w", "key": "a", "value": {"n": 1}}, {"ev": "synced", "sid": "w"}]
            ws.send(json.dumps({"op": "pub", "subject": "hw", "value": 1, "ref": 2}))
            reply = json.loads(ws.recv(timeout=10))
            assert reply["ok"] is False and reply["code"] == "bad_request" and reply["ref"] == 2, reply
            write(client, "hw", "b", 2)
            remove(client, "hw", "a")
            assert [json.loads(ws.recv(timeout=10)) for _ in range(2)] == [
                {"ev": "next", "sid": "w", "key": "b", "value": 2},
                {"ev": "removed", "sid": "w", "key": "a", "reason": "deleted"}]
        client.close()

    def test_clean_stop(self, d):
        assert_clean_stop(d)


COUNT = 24_000
KEYS = 50
PAD = "x" * 1000


@pytest.mark.daemon("""
slow_consumer = "disconnect"
soft_pending_bytes = 262144
max_pending_bytes = 4194304
soft_pending_seconds = 60
""")
class TestMapConflate:
    def test_a_stalled_conflating_reader_gets_each_keys_latest_change(self, d):
        admin = LineClient(d.port)
        # 64 keys at most: the map keeps its last 1,024 changes (max(1024, max_keys)), about 1 MB.
        create_map(admin, "cm", max_keys=64)
        reader = LineClient(d.port, receive_buffer=4096, timeout=60)
        subscribe(reader, "cm", "s", conflate=True)
        assert until_synced(reader, "s") == {}
        before, memory = stats(d), d.rss_bytes()
        # 24 MB of writes, then the first five keys removed and a last write: the reader reads
        # none of it until the writer's ping is answered.
        writer = LineClient(d.port, timeout=120)
        final, changes = {}, 0
        for start in range(0, COUNT, 500):
            batch = []
            for n in range(start, start + 500):
                key = f"k{n % KEYS}"
                final[key] = {"n": n, "pad": PAD}
                batch.append({"op": "pub", "subject": "cm", "key": key, "value": final[key]})
            writer.socket.sendall(b"".join(json.dumps(r).encode() + b"\n" for r in batch))
            changes += len(batch)
        for n in range(5):
            writer.send({"op": "pub", "subject": "cm", "key": f"k{n}", "delete": True})
            del final[f"k{n}"]
        writer.send({"op": "pub", "subject": "cm", "key": "end", "value": "end"})
        final["end"] = "end"
        changes += 6
        assert writer.call({"op": "ping", "ref": "done"}) == {"ok": True, "ref": "done"}, "a write was refused"
        stalled = stats(d)
        assert stalled["slow_consumer_disconnects"] == before["slow_consumer_disconnects"], stalled
        grown = d.rss_bytes() - memory
        assert grown < 8 << 20, f"RSS grew by {grown >> 20} MiB while {COUNT} KiB passed a stalled reader"
        # Reading again: each key's latest change; every change delivered or counted as dropped.
        table, latest, delivered, dropped = {}, {}, 0, 0
        while table.get("end") != "end":
            line = reader.line()
            assert line.get("sid") == "s", line
            if line["ev"] == "dropped":
                assert line["count"] > 0, line
                dropped += line["count"]
                continue
            delivered += 1
            if line["ev"] == "removed":
                assert line["reason"] == "deleted", line
                table.pop(line["key"], None)
                continue
            assert line["ev"] == "next", line
            if line["key"] != "end":
                n = line["value"]["n"]
                assert n > latest.get(line["key"], -1), ("a key's values out of order", line["key"], n)
                latest[line["key"]] = n
            table[line["key"]] = line["value"]
        assert table == final, sorted(set(table) ^ set(final))
        assert dropped > 0 and delivered + dropped == changes, (delivered, dropped, changes)
        after = stats(d)
        assert after["dropped"] - before["dropped"] == dropped, (after["dropped"], before["dropped"], dropped)
        assert after["slow_consumer_disconnects"] == before["slow_consumer_disconnects"], after
        # The connection is live and current: a new subscription's snapshot is the same table.
        subscribe(reader, "cm", "t")
        assert values(until_synced(reader, "t")) == final
        for client in (admin, reader, writer):
            client.close()

    def test_clean_stop(self, d):
        assert_clean_stop(d)
