"""History by time against a real runneld over real sockets (docs/protocol.md, "History by
time").

    python3 -m pytest Tests/blackbox/test_history.py [--runneld PATH]

Every value carries its publish time (`"ts": true`) within the client's own clock readings
around its `pub` (one machine, one clock); `since` replays what a replay or behavior subject
keeps from a time on (Unix ms or RFC 3339), then goes on live, its reply's `resumed` saying
whether all of it was kept; `until` completes the subscription at a time in the past or the
future; `retain_s` lets values go by age; bad combinations are `bad_request`. Over a WebSocket
(websockets) and SSE (httpx, `?since=&ts=true`, whose `data:` is then an object), across a
restart of a durable subject, and `runnel sub --since --ts`. A `bufferWithTime` over a `since`
replay gives the windows a live subscriber made at that time got. The waits between publishes are
there so that two values never share a millisecond; no timing is asserted but deadlines.
"""

import datetime
import json
import os
import subprocess
import time

import pytest
from runneld_process import Daemon, EventStream, LineClient, assert_clean_stop, poll_until
from websockets.sync.client import connect


def now_ms():
    return int(time.time() * 1000)


def publish_timed(client, subject, values):
    """Publishes `values` one by one, 20 ms apart; returns for each the client's clock just
    before and just after its `pub` was answered."""
    bounds = []
    for value in values:
        time.sleep(0.02)
        before = now_ms()
        assert client.request({"op": "pub", "subject": subject, "value": value})["ok"]
        bounds.append((before, now_ms()))
    time.sleep(0.02)
    return bounds


def nexts(client, count):
    """The next `count` lines, each a `next` event."""
    lines = [client.line() for _ in range(count)]
    assert all(line.get("ev") == "next" for line in lines), lines
    return lines


@pytest.mark.daemon("")
class TestHistory:
    def test_values_carry_their_publish_time(self, d):
        client = LineClient(d.port)
        assert client.request({"op": "create", "subject": "h.ts", "kind": "replay", "capacity": 10})["ok"]
        bounds = publish_timed(client, "h.ts", [1, 2, 3])
        assert client.request({"op": "sub", "subject": "h.ts", "sid": "s", "ts": True})["ok"]
        replayed = nexts(client, 3)
        assert [line["value"] for line in replayed] == [1, 2, 3]
        for line, (before, after) in zip(replayed, bounds):
            assert isinstance(line["ts"], int) and before <= line["ts"] <= after, (line, before, after)
        # Live values too, with positions beside them when asked for.
        assert client.request({"op": "sub", "subject": "h.ts", "sid": "p", "ts": True, "positions": True})["ok"]
        nexts(client, 3)
        before = now_ms()
        client.send({"op": "pub", "subject": "h.ts", "value": 4})
        lines = [client.line() for _ in range(2)]
        live = {line["sid"]: line for line in lines}
        assert set(live) == {"s", "p"} and before <= live["s"]["ts"] <= now_ms(), lines
        assert live["p"]["ts"] == live["s"]["ts"] and live["p"]["pos"].endswith(":4"), live
        # Without `ts`, no time; a stage's value keeps the time of the value it was made from.
        assert client.request({"op": "sub", "subject": "h.ts", "sid": "n"})["ok"]
        assert "ts" not in nexts(client, 1)[0]
        assert client.request({"op": "sub", "subject": "h.ts", "sid": "m", "ts": True,
                               "ops": [{"op": "map", "expr": ". * 10"}]})["ok"]
        assert [(line["value"], line["ts"]) for line in nexts(client, 4)] == \
            [(10, replayed[0]["ts"]), (20, replayed[1]["ts"]), (30, replayed[2]["ts"]), (40, live["s"]["ts"])]
        client.close()

    def test_since_replays_what_is_kept_from_a_time_on_then_goes_on_live(self, d):
        client = LineClient(d.port)
        assert client.request({"op": "create", "subject": "h.since", "kind": "replay", "capacity": 10})["ok"]
        bounds = publish_timed(client, "h.since", ["a", "b", "c"])
        since = bounds[1][0]
        reply = client.request({"op": "sub", "subject": "h.since", "sid": "s", "since": since, "ts": True})
        assert reply["ok"] and reply["resumed"] is True, reply
        assert [line["value"] for line in nexts(client, 2)] == ["b", "c"]
        client.send({"op": "pub", "subject": "h.since", "value": "d"})
        assert client.line()["value"] == "d"
        # The same time as RFC 3339 (UTC, and with an offset), and a time after every value.
        moment = datetime.datetime.fromtimestamp(since / 1000, datetime.timezone.utc)
        for text in (moment.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
                     moment.astimezone(datetime.timezone(datetime.timedelta(hours=5, minutes=30)))
                     .isoformat(timespec="milliseconds")):
            reply = client.request({"op": "sub", "subject": "h.since", "sid": text, "since": text})
            assert reply["ok"] and reply["resumed"] is True, (text, reply)
            assert [line["value"] for line in nexts(client, 3)] == ["b", "c", "d"], text
        # From a time still to come: nothing kept, and no value published before it.
        reply = client.request({"op": "sub", "subject": "h.since", "sid": "later", "since": now_ms() + 1000})
        assert reply["ok"] and reply["resumed"] is True, reply
        client.send({"op": "pub", "subject": "h.since", "value": "e"})
        lines = [client.line() for _ in range(3)]
        assert sorted(line["sid"] for line in lines)[-1] == "s", lines
        assert client.call({"op": "unsub", "sid": "later", "ref": 2}) == {"ok": True, "ref": 2}
        client.close()

    def test_resumed_says_whether_everything_since_was_kept(self, d):
        client = LineClient(d.port)
        assert client.request({"op": "create", "subject": "h.evicted", "kind": "replay", "capacity": 2})["ok"]
        bounds = publish_timed(client, "h.evicted", [1, 2, 3, 4])
        # 1 and 2 are gone: from before 1, not all is kept (what is, is delivered) ...
        reply = client.request({"op": "sub", "subject": "h.evicted", "sid": "old", "since": bounds[0][0]})
        assert reply["ok"] and reply["resumed"] is False, reply
        assert [line["value"] for line in nexts(client, 2)] == [3, 4]
        # ... from after 2 it all is.
        reply = client.request({"op": "sub", "subject": "h.evicted", "sid": "new", "since": bounds[2][0]})
        assert reply["ok"] and reply["resumed"] is True, reply
        assert [line["value"] for line in nexts(client, 2)] == [3, 4]
        # A behavior subject: its value, when published since then.
        assert client.request({"op": "create", "subject": "h.behavior", "kind": "behavior", "value": 0})["ok"]
        bounds = publish_timed(client, "h.behavior", [1, 2])
        reply = client.request({"op": "sub", "subject": "h.behavior", "sid": "b2", "since": bounds[1][0]})
        assert reply["ok"] and reply["resumed"] is True and client.line()["value"] == 2, reply
        reply = client.request({"op": "sub", "subject": "h.behavior", "sid": "b1", "since": bounds[0][0]})
        assert reply["ok"] and reply["resumed"] is False and client.line()["value"] == 2, reply
        client.close()

    def test_until_completes_in_the_past_and_in_the_future(self, d):
        client = LineClient(d.port)
        assert client.request({"op": "create", "subject": "h.until", "kind": "replay", "capacity": 10})["ok"]
        bounds = publish_timed(client, "h.until", [1, 2, 3])
        reply = client.request({"op": "sub", "subject": "h.until", "sid": "past", "since": bounds[0][0],
                                "until": bounds[1][1]})
        assert reply["ok"], reply
        assert [client.line() for _ in range(3)] == [
            {"ev": "next", "sid": "past", "value": 1}, {"ev": "next", "sid": "past", "value": 2},
            {"ev": "completed", "sid": "past"}]
        # In the past with nothing after it: completed once the replay is out.
        reply = client.request({"op": "sub", "subject": "h.until", "sid": "done", "until": bounds[2][1]})
        assert reply["ok"], reply
        assert [line.get("value") for line in [client.line() for _ in range(4)]] == [1, 2, 3, None]
        # In the future: live values until then, then completed without another value.
        reply = client.request({"op": "sub", "subject": "h.until", "sid": "future", "since": now_ms(),
                                "until": now_ms() + 600})
        assert reply["ok"], reply
        client.send({"op": "pub", "subject": "h.until", "value": 4})
        assert client.line() == {"ev": "next", "sid": "future", "value": 4}
        assert client.line() == {"ev": "completed", "sid": "future"}
        # The subscription is gone: unsub says so.
        assert client.request({"op": "unsub", "sid": "future"})["code"] == "unknown_sid"
        client.close()

    def test_retain_s_lets_values_go_by_age(self, d):
        client = LineClient(d.port)
        # What the suite's other subjects keep, which ageing leaves alone.
        others = client.request({"op": "stats"})["retained_bytes"]
        create = {"op": "create", "subject": "h.retain", "kind": "replay", "capacity": 100, "retain_s": 0.5}
        assert client.request(create)["ok"]
        assert client.request(create)["ok"], "a create with the same retain_s matches"
        mismatch = client.request(dict(create, retain_s=5))
        assert mismatch["code"] == "kind_mismatch" and "retain_s 0.5" in mismatch["message"], mismatch
        publish_timed(client, "h.retain", ["old"])
        time.sleep(0.7)
        publish_timed(client, "h.retain", ["new"])
        reply = client.request({"op": "sub", "subject": "h.retain", "sid": "s"})
        assert reply["ok"] and nexts(client, 1)[0]["value"] == "new"
        client.send({"op": "pub", "subject": "h.retain", "value": "live"})
        assert client.line() == {"ev": "next", "sid": "s", "value": "live"}
        # Gone by age, and the server's sweep lets them go unasked, whichever loop owns the
        # subject (a `sub` where it is owned lets `"old"` go at once, one on another loop leaves
        # it to the sweep): the retained bytes fall back to the other subjects'.
        poll_until(lambda: client.request({"op": "stats"})["retained_bytes"], lambda count: count == others,
                   "the values let go by age", 5)
        client.close()

    def test_time_stages_over_a_replay_run_in_the_values_own_time(self, d):
        client = LineClient(d.port)
        assert client.request({"op": "create", "subject": "h.chart", "kind": "replay", "capacity": 100})["ok"]
        stages = [{"op": "bufferWithTime", "seconds": 0.5}]
        start = now_ms()
        # A subscriber live from `start`, for comparison; windows are 250 ms clear of the values.
        live = LineClient(d.port)
        assert live.request({"op": "sub", "subject": "h.chart", "sid": "live", "ops": stages})["ok"]
        for value, at in (("a", 50), ("b", 150), ("c", 750), ("d", 850)):
            time.sleep(max(0, start + at - now_ms()) / 1000)
            client.send({"op": "pub", "subject": "h.chart", "value": value})
        assert [live.line()["value"] for _ in range(2)] == [["a", "b"], ["c", "d"]]
        time.sleep(max(0, start + 1100 - now_ms()) / 1000)
        # The same chain from `start`, replayed: the same windows, at once (not one buffer of
        # all four, which wall-clock time would give), then live ones.
        reply = client.request({"op": "sub", "subject": "h.chart", "sid": "r", "since": start, "ops": stages})
        assert reply["ok"] and reply["resumed"] is True, reply
        assert [client.line()["value"] for _ in range(2)] == [["a", "b"], ["c", "d"]]
        client.send({"op": "pub", "subject": "h.chart", "value": "e"})
        assert client.line() == {"ev": "next", "sid": "r", "value": ["e"]}
        assert live.line() == {"ev": "next", "sid": "live", "value": ["e"]}
        live.close()
        client.close()

    def test_bad_times_and_combinations_are_bad_requests(self, d):
        client = LineClient(d.port)
        assert client.request({"op": "create", "subject": "h.bad", "kind": "replay"})["ok"]
        assert client.request({"op": "pub", "subject": "h.plain", "value": 1})["ok"]
        for request in (
            {"op": "sub", "subject": "h.bad", "since": 1, "from": "E:1"},
            {"op": "sub", "subject": "h.plain", "since": 1},
            {"op": "sub", "subject": "h.>", "since": 1},
            {"op": "sub", "subject": "h.bad", "since": "yesterday"},
            {"op": "sub", "subject": "h.bad", "since": "2026-02-30T00:00:00Z"},
            {"op": "sub", "subject": "h.bad", "since": -5},
            {"op": "sub", "subject": "h.bad", "since": True},
            {"op": "sub", "subject": "h.bad", "until": "soon"},
            {"op": "sub", "subject": "h.bad", "since": 2000, "until": 1000},
            {"op": "sub", "subject": "h.bad", "ts": "yes"},
            {"op": "create", "subject": "h.bad2", "kind": "behavior", "retain_s": 5},
            {"op": "create", "subject": "h.bad3", "kind": "replay", "retain_s": 0},
            {"op": "create", "subject": "h.bad4", "kind": "replay", "retain_s": "1h"},
        ):
            reply = client.request(request)
            assert reply["ok"] is False and reply["code"] == "bad_request", (request, reply)
        assert "h.bad2" not in [entry["subject"] for entry in client.request({"op": "list"})["subjects"]]
        client.close()

    def test_websocket_and_sse_streams_start_at_a_time(self, d):
        client = LineClient(d.port)
        assert client.request({"op": "create", "subject": "h.web", "kind": "replay", "capacity": 10})["ok"]
        bounds = publish_timed(client, "h.web", [1, 2, 3])
        with connect(d.ws_url, open_timeout=10) as socket:
            socket.send(json.dumps({"op": "sub", "subject": "h.web", "sid": "w", "since": bounds[1][0], "ts": True,
                                    "ref": 1}))
            assert json.loads(socket.recv(timeout=10)) == {"ok": True, "ref": 1, "sid": "w", "resumed": True}
            events = [json.loads(socket.recv(timeout=10)) for _ in range(2)]
            assert [(event["value"], bounds[n + 1][0] <= event["ts"] <= bounds[n + 1][1])
                    for n, event in enumerate(events)] == [(2, True), (3, True)], events
        stream = EventStream(d, {"subject": "h.web", "since": str(bounds[1][0]), "ts": "true"})
        try:
            first, second = stream.event(), stream.event()
            data = [json.loads(event["data"]) for event in (first, second)]
            assert [item["value"] for item in data] == [2, 3], data
            assert all(set(item) == {"value", "pos", "ts"} for item in data), data
            assert first["id"] == data[0]["pos"] and isinstance(data[0]["ts"], int), first
        finally:
            stream.close()
        # A reconnecting browser sends the URL it began with and its Last-Event-ID: it resumes
        # after that position (not `since` again, which would be refused beside a position).
        stream = EventStream(d, {"subject": "h.web", "since": str(bounds[0][0])}, headers={"Last-Event-ID": first["id"]})
        try:
            assert stream.event()["data"] == "3"
        finally:
            stream.close()
        client.close()

    def test_clean_stop(self, d):
        assert_clean_stop(d)


class TestDurableAndCLI:
    def test_a_durable_subject_keeps_its_times_and_retain_s_across_a_restart(self, runneld):
        # `fsync = "always"`: a `pub` is answered once on disk, so `kill -9` loses none of it.
        first = runneld('data_dir = "DATA_DIR"\nfsync = "always"\n')
        client = LineClient(first.port)
        assert client.request({"op": "create", "subject": "h.disk", "kind": "replay", "capacity": 10,
                               "durable": True, "retain_s": 3600})["ok"]
        publish_timed(client, "h.disk", [1, 2])
        assert client.request({"op": "sub", "subject": "h.disk", "sid": "s", "ts": True})["ok"]
        before = [line["ts"] for line in nexts(client, 2)]
        client.close()
        first.kill()
        second = runneld('data_dir = "DATA_DIR"\nfsync = "always"\n', directory=first.directory)
        client = LineClient(second.port)
        reply = client.request({"op": "sub", "subject": "h.disk", "sid": "s", "ts": True, "since": before[1]})
        assert reply["ok"] and reply["resumed"] is True, reply
        assert [(line["value"], line["ts"]) for line in nexts(client, 1)] == [(2, before[1])]
        mismatch = client.request({"op": "create", "subject": "h.disk", "kind": "replay", "capacity": 10,
                                   "durable": True})
        assert mismatch["code"] == "kind_mismatch" and "retain_s 3600" in mismatch["message"], mismatch
        client.close()
        second.stop()

    def test_runnel_sub_since_prints_times(self, runneld, binary):
        d = runneld("")
        cli = os.path.join(os.path.dirname(binary), "runnel")
        client = LineClient(d.port)
        assert client.request({"op": "create", "subject": "h.cli", "kind": "replay", "capacity": 10})["ok"]
        bounds = publish_timed(client, "h.cli", [1, 2, 3])
        # Two seconds ago is before every value; a relative time, and then an absolute one.
        for since in ("2s", str(bounds[1][0])):
            out = subprocess.run([cli, "sub", "h.cli", "--since", since, "--ts", "--until", str(bounds[2][1]),
                                  "--server", f"127.0.0.1:{d.port}"], capture_output=True, text=True, timeout=30)
            assert out.returncode == 0, out.stderr
            printed = [line.split(" ") for line in out.stdout.splitlines()]
            expected = [1, 2, 3] if since == "2s" else [2, 3]
            assert [int(value) for _, value in printed] == expected, out.stdout
            assert all(bounds[0][0] <= int(ts) <= bounds[2][1] for ts, _ in printed), out.stdout
        bad = subprocess.run([cli, "sub", "h.cli", "--since", "a while", "--server", f"127.0.0.1:{d.port}"],
                             capture_output=True, text=True, timeout=30)
        assert bad.returncode != 0 and "--since must be" in bad.stderr, bad.stderr
        # `runnel create --retain-s` makes what a `create` with `retain_s` matches.
        made = subprocess.run([cli, "create", "h.aged", "--kind", "replay", "--retain-s", "60",
                               "--server", f"127.0.0.1:{d.port}"], capture_output=True, text=True, timeout=30)
        assert made.returncode == 0, made.stderr
        assert client.request({"op": "create", "subject": "h.aged", "kind": "replay", "retain_s": 60})["ok"]
        assert client.request({"op": "create", "subject": "h.aged", "kind": "replay"})["code"] == "kind_mismatch"
        client.close()
