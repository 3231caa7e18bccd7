"""Conflation against a real runneld over real sockets (docs/protocol.md, "Conflation").

    python3 -m pytest Tests/blackbox/test_conflation.py [--runneld PATH]

Small limits (soft_pending_bytes 256 KiB, max_pending_bytes 4 MiB, soft_pending_seconds 3) and
slow_consumer = "disconnect". A subscriber made with `"conflate": true` that reads about 200
values a second while 12 MB of values of about 1 KiB are published as fast as the server takes
them (past the hard limit three times over: a subscriber that queued them would be cut) is not
cut and pauses nobody: it receives values in publish order, the last one included, and every
value published is either received or counted by the `dropped` event before the next one it
gets. Over TCP, over a WebSocket (websockets, a small receive queue, uncompressed: these
values deflate to almost nothing) and as an SSE stream
(`?conflate=true`, httpx). Then, under slow_consumer = "conflate", a plain `sub` conflates, a
subscriber that reads a few kilobytes a second (leaving runneld's socket buffer full for longer
than a grace) is not cut, and a subscriber that reads nothing is cut when the grace ends. And `runnel sub --conflate`, printing
into a pipe read only once every value is out, prints the latest values in order and says on
stderr how many it skipped. No timings but deadlines.
Needs httpx (Debian: python3-httpx) and websockets (PyPI, 13 or later).
"""

import json
import os
import re
import subprocess
import threading
import time

import pytest
from runneld_process import EventStream, LineClient, poll_until, stats
from websockets.sync.client import connect

COUNT = 12_000
PAD = "x" * 1000


def config(policy, grace):
    """Soft limit 256 KiB, hard 4 MiB, a grace of `grace` seconds, under `policy`."""
    return f"""
slow_consumer = "{policy}"
soft_pending_bytes = 262144
max_pending_bytes = 4194304
soft_pending_seconds = {grace}
"""


def wait_for(d, predicate, what):
    return poll_until(lambda: stats(d), predicate, f"no {what} within 60 s", seconds=60)


def publish_all(d, subject):
    """Publishes COUNT values to `subject` from a thread of its own; returns an event set once
    the server has read them all (a `ping` after them answered)."""
    done = threading.Event()
    errors = []

    def run():
        try:
            publisher = LineClient(d.port, timeout=120)
            for n in range(COUNT):
                publisher.send({"op": "pub", "subject": subject, "value": {"n": n, "pad": PAD}})
            assert publisher.request({"op": "ping"})["ok"]
            publisher.close()
        except Exception as error:  # noqa: BLE001 - reported by the reader
            errors.append(error)
        done.set()

    threading.Thread(target=run, daemon=True).start()
    return done, errors


def read_conflated(d, subject, next_event):
    """Publishes COUNT values while `next_event` (the subscriber's next event: ("next", n) or
    ("dropped", count)) is read slowly, 5 ms a value, then at full speed once the publisher is
    done, until the last value has come. Checks what conflation promises."""
    before = stats(d)
    done, errors = publish_all(d, subject)
    received, dropped = [], 0
    while not received or received[-1] != COUNT - 1:
        kind, number = next_event()
        if kind == "dropped":
            dropped += number
        else:
            received.append(number)
        if not done.is_set():
            time.sleep(0.005)
    assert done.wait(120) and not errors, errors
    assert received == sorted(set(received)), "values out of order or repeated"
    assert len(received) + dropped == COUNT, (len(received), dropped)
    assert dropped > 0, "nothing was conflated: the reader kept up"
    after = stats(d)
    assert after["slow_consumer_disconnects"] == before["slow_consumer_disconnects"], after
    assert after["publish_pauses"] == before["publish_pauses"], after
    assert after["dropped"] - before["dropped"] == dropped, after


@pytest.mark.daemon(config("disconnect", 3))
class TestConflate:
    """`"conflate": true` under slow_consumer = "disconnect"."""

    def test_tcp_subscriber_gets_the_latest_values_in_order_and_is_never_cut(self, d):
        subscriber = LineClient(d.port, receive_buffer=4096, timeout=60)
        assert subscriber.request({"op": "sub", "subject": "c.tcp", "sid": "s", "conflate": True})["ok"]

        def next_event():
            line = subscriber.line()
            assert line.get("sid") == "s", line
            return ("dropped", line["count"]) if line["ev"] == "dropped" else ("next", line["value"]["n"])

        read_conflated(d, "c.tcp", next_event)
        subscriber.close()

    def test_websocket_subscriber_gets_the_latest_values_in_order_and_is_never_cut(self, d):
        with connect(d.ws_url, open_timeout=10, close_timeout=5, max_queue=4, compression=None) as ws:
            ws.send(json.dumps({"op": "sub", "subject": "c.ws", "sid": "s", "conflate": True, "ref": 1}))
            assert json.loads(ws.recv(timeout=10))["ok"]

            def next_event():
                line = json.loads(ws.recv(timeout=60))
                return ("dropped", line["count"]) if line["ev"] == "dropped" else ("next", line["value"]["n"])

            read_conflated(d, "c.ws", next_event)

    def test_sse_subscriber_gets_the_latest_values_in_order_and_is_never_cut(self, d):
        before = stats(d)
        stream = EventStream(
            d, {"subject": "c.sse", "conflate": "true"}, headers={"Accept-Encoding": "identity"}, timeout=60)
        wait_for(d, lambda s: s["subscriptions"] > before["subscriptions"], "SSE subscription")

        def next_event():
            event = stream.event()
            assert event is not None, "the stream ended"
            if event.get("event") == "dropped":
                return ("dropped", json.loads(event["data"])["count"])
            assert "event" not in event, event
            return ("next", json.loads(event["data"])["n"])

        read_conflated(d, "c.sse", next_event)
        stream.close()

    def test_conflate_must_be_a_boolean(self, d):
        client = LineClient(d.port)
        reply = client.request({"op": "sub", "subject": "c.bad", "conflate": "yes"})
        assert reply["ok"] is False and reply["code"] == "bad_request", reply
        assert "conflate" in reply["message"], reply
        client.close()
        stream = EventStream(d, {"subject": "c.bad", "conflate": "yes"})
        assert stream.response.status_code == 400, stream.response.status_code
        stream.close()


@pytest.mark.daemon(config("conflate", 3))
class TestConflatePolicy:
    """slow_consumer = "conflate": every subscription conflates."""

    def test_a_plain_sub_conflates(self, d):
        subscriber = LineClient(d.port, receive_buffer=4096, timeout=60)
        assert subscriber.request({"op": "sub", "subject": "p.tcp", "sid": "s"})["ok"]

        def next_event():
            line = subscriber.line()
            return ("dropped", line["count"]) if line["ev"] == "dropped" else ("next", line["value"]["n"])

        read_conflated(d, "p.tcp", next_event)
        subscriber.close()

    def test_a_subscriber_that_reads_a_few_kilobytes_a_second_is_never_cut(self, d):
        """It leaves runneld's socket buffer full for far longer than a grace (the kernel takes
        more from runneld only once a third of it is free), yet it reads: what it acknowledges
        says so, and it is not cut."""
        before = stats(d)
        slow = LineClient(d.port, receive_buffer=4096, timeout=60)
        assert slow.request({"op": "sub", "subject": "p.slow", "sid": "s"})["ok"]
        done, errors = publish_all(d, "p.slow")
        assert done.wait(120) and not errors, errors
        # About 8 KB a second, for more than three graces.
        deadline = time.monotonic() + 11
        while time.monotonic() < deadline:
            chunk = slow.socket.recv(1024)
            assert chunk, "runneld closed the connection of a subscriber that reads: " + slow.buffer[-200:].decode()
            slow.buffer += chunk
            time.sleep(0.125)
        assert stats(d)["slow_consumer_disconnects"] == before["slow_consumer_disconnects"]
        # Read at full speed, it gets the last value.
        last = None
        while last != COUNT - 1:
            line = slow.line()
            assert line["ev"] in ("next", "dropped"), line
            if line["ev"] == "next":
                last = line["value"]["n"]
        slow.close()

    def test_a_subscriber_that_reads_nothing_is_cut_when_the_grace_ends(self, d):
        before = stats(d)
        dead = LineClient(d.port, receive_buffer=4096, timeout=60)
        assert dead.request({"op": "sub", "subject": "p.dead", "sid": "d"})["ok"]
        done, errors = publish_all(d, "p.dead")
        assert done.wait(120) and not errors, errors
        wait_for(d, lambda s: s["slow_consumer_disconnects"] > before["slow_consumer_disconnects"], "disconnect")
        assert dead.last_line() == {"ev": "closing", "code": "slow_consumer"}
        assert stats(d)["publish_pauses"] == before["publish_pauses"]
        dead.close()


@pytest.mark.daemon(config("disconnect", 30))
class TestCLI:
    """`runnel sub --conflate`, printing into a pipe nobody reads until the values are out."""

    def test_runnel_sub_conflate_prints_the_latest_values_and_says_what_it_skipped(self, d, binary):
        cli = os.path.join(os.path.dirname(binary), "runnel")
        before = stats(d)
        # Its output is read only once every value is published: it stops reading the socket
        # when the pipe is full, and would be cut at the 4 MiB hard limit without conflation.
        reader = subprocess.Popen([cli, "sub", "c.cli", "--conflate", "--server", f"127.0.0.1:{d.port}"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            wait_for(d, lambda s: s["subscriptions"] > before["subscriptions"], "the CLI's subscription")
            done, errors = publish_all(d, "c.cli")
            assert done.wait(120) and not errors, errors
            ender = LineClient(d.port)
            assert ender.request({"op": "complete", "subject": "c.cli"})["ok"]
            out, err = reader.communicate(timeout=60)
        finally:
            reader.kill()
        assert reader.returncode == 0, err
        values = [json.loads(line)["n"] for line in out.splitlines()]
        assert values == sorted(set(values)) and values[-1] == COUNT - 1, values[-3:]
        skipped = sum(int(count) for count in re.findall(r"the server dropped (\d+) events", err))
        assert skipped > 0 and len(values) + skipped == COUNT, (len(values), skipped, err)
        assert stats(d)["slow_consumer_disconnects"] == before["slow_consumer_disconnects"]
