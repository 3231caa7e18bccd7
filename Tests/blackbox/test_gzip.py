"""gzip'd HTTP answers and event streams, and the compression figures, against a real runneld

    python3 -m pytest Tests/blackbox/test_gzip.py [--runneld PATH]

Checks docs/protocol.md's "Compression" for HTTP: which `Accept-Encoding` values get gzip (raw
answers read with the standard library's http.client and inflated with its gzip and zlib, so no
client decodes for us), `Vary`, `HEAD`'s length, httpx reading answers transparently, `GET
/events` gzip'd with every event inflatable as soon as it was published (a sync flush an
event) and the stream's trailer checked when it ends (completed, and the server's drain),
curl --compressed reading a stream to its end, one value compressed once for many streams
(zlib's memory does not grow with them), `stats.compression` and `/metrics`, and all of it off
with `compression = false`. Needs httpx, websockets (PyPI), curl.
"""

import gzip
import http.client
import json
import signal
import socket
import subprocess
import time
import zlib

import httpx
import pytest
from runneld_process import LineClient, assert_clean_stop, poll_until
from websockets.sync.client import connect as websocket_connect

TOKEN = "s3cret"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def stats(d):
    return httpx.get(d.url + "/stats", headers=AUTH).json()


def raw_get(d, path, accept_encoding=None, method="GET"):
    """One answer as sent: (status, headers with lower-cased names, body bytes)."""
    connection = http.client.HTTPConnection("127.0.0.1", d.http_port, timeout=10)
    headers = dict(AUTH)
    if accept_encoding is not None:
        headers["Accept-Encoding"] = accept_encoding
    connection.request(method, path, headers=headers)
    response = connection.getresponse()
    body = response.read()
    fields = {name.lower(): value for name, value in response.getheaders()}
    connection.close()
    return response.status, fields, body


class GzipEventStream:
    """A GET /events response read from a raw socket and inflated as it comes: `event()` is the
    next event's text, read only from what has arrived (no decoder of anyone else's)."""

    def __init__(self, d, subject, accept_encoding="gzip"):
        self.socket = socket.create_connection(("127.0.0.1", d.http_port), timeout=10)
        self.socket.sendall(
            f"GET /events?subject={subject}&token={TOKEN} HTTP/1.1\r\nHost: x\r\n"
            f"Accept-Encoding: {accept_encoding}\r\n\r\n".encode())
        received = b""
        while b"\r\n\r\n" not in received:
            received += self.socket.recv(65536)
        head, _, rest = received.partition(b"\r\n\r\n")
        lines = head.decode().split("\r\n")
        assert lines[0] == "HTTP/1.1 200 OK", lines
        self.headers = {name.lower(): value.strip() for name, _, value in (line.partition(":") for line in lines[1:])}
        self.gzipped = self.headers.get("content-encoding") == "gzip"
        self.inflater = zlib.decompressobj(31) if self.gzipped else None
        self.text = ""
        self.ended = False
        self._take(rest)

    def _take(self, data):
        self.text += (self.inflater.decompress(data) if self.inflater else data).decode()

    def event(self, timeout=5):
        """The next event (up to its blank line), or None when the stream ended first."""
        deadline = time.monotonic() + timeout
        while "\n\n" not in self.text:
            if self.ended:
                return None
            self.socket.settimeout(max(0.01, deadline - time.monotonic()))
            data = self.socket.recv(65536)
            if not data:
                self.ended = True
                continue
            self._take(data)
        event, _, self.text = self.text.partition("\n\n")
        return event

    def assert_ended_whole(self):
        """The server closed the stream after a whole gzip member: its final block and a
        trailer whose CRC-32 and length zlib checked."""
        self.socket.settimeout(5)
        while not self.ended:
            data = self.socket.recv(65536)
            if not data:
                self.ended = True
            else:
                self._take(data)
        assert self.text == "", self.text
        if self.inflater:
            assert self.inflater.eof and self.inflater.unused_data == b"", "the gzip stream did not end whole"

    def close(self):
        self.socket.close()


# What Accept-Encoding allows gzip (RFC 9110, 12.5.3), and what does not.
ENCODINGS = [
    (None, False), ("gzip", True), ("x-gzip", True), ("GZip", True), ("*", True), ("gzip;q=0", False),
    ("gzip; q=0.000", False), ("*;q=0", False), ("identity", False), ("deflate", False), ("br, gzip;q=0.5", True),
    ("gzip;q=0, *", False), ("identity;q=1, *;q=0.1", True), ("gzip;q=bogus", False), ("gzip;q=1.5", False),
    ("br", False), ("", False),
]


def data_of(event):
    """An event's `data:` field (after its `id:` line, when it has one)."""
    assert event is not None, "the stream ended"
    lines = event.split("\n")
    assert lines[0].startswith("id: ") and len(lines) == 2 and lines[1].startswith("data: "), event
    return lines[1].removeprefix("data: ")


CONFIG = f"""
auth_tokens = ["{TOKEN}"]

[[subjects]]
name = "g.rep"
kind = "replay"
capacity = 10
"""


@pytest.mark.daemon(CONFIG)
class TestGzip:
    """gzip on: answers, event streams, WebSockets, and the figures."""

    def test_answers_are_gzipped_when_accept_encoding_allows_it(self, d):
        for accept, gzipped in ENCODINGS:
            status, headers, body = raw_get(d, "/stats", accept)
            assert status == 200, (accept, status)
            assert headers["vary"] == "Accept-Encoding", (accept, headers)
            assert int(headers["content-length"]) == len(body), (accept, headers)
            if gzipped:
                assert headers.get("content-encoding") == "gzip", (accept, headers)
                body = gzip.decompress(body)
            else:
                assert "content-encoding" not in headers, (accept, headers)
            assert "connections" in json.loads(body), (accept, body[:80])

    def test_every_answer_with_a_body_is_gzipped(self, d):
        # The page and the client module (made once, at start), an error answer, /metrics.
        with open("clients/js/runnel.js", "rb") as module:
            assert gzip.decompress(raw_get(d, "/runnel.js", "gzip")[2]) == module.read()
        status, headers, page = raw_get(d, "/", "gzip")
        assert status == 200 and headers["content-encoding"] == "gzip", headers
        assert gzip.decompress(page).startswith(b"<!doctype html>")
        assert len(page) < len(gzip.decompress(page)) / 3, len(page)
        status, headers, body = raw_get(d, "/nowhere", "gzip")
        assert status == 404 and headers["content-encoding"] == "gzip", headers
        assert json.loads(gzip.decompress(body))["code"] == "not_found"
        status, headers, body = raw_get(d, "/metrics", "gzip")
        assert status == 200 and b"runnel_compression_memory_bytes" in gzip.decompress(body)
        # HEAD: the gzip'd answer's length, no body.
        status, headers, body = raw_get(d, "/", "gzip", method="HEAD")
        assert status == 200 and body == b"" and int(headers["content-length"]) == len(page), headers
        # httpx asks for gzip by default and reads it.
        response = httpx.post(d.url + "/pub/g.plain", json={"n": 1}, headers=AUTH)
        assert response.headers["content-encoding"] == "gzip" and response.json()["ok"] is True, response.headers

    def test_an_event_stream_is_gzipped_and_flushed_after_every_event(self, d):
        stream = GzipEventStream(d, "g.live")
        assert stream.gzipped and stream.headers["vary"] == "Accept-Encoding", stream.headers
        poll_until(lambda: stats(d), lambda s: s["compression"]["event_streams"] == 1, "gzip'd stream counted")
        publisher = LineClient(d.port)
        assert publisher.request({"op": "auth", "token": TOKEN})["ok"]
        for n in range(5):
            # Each event inflates whole before the next value is even published.
            assert publisher.request({"op": "pub", "subject": "g.live", "value": {"n": n, "host": "alpha"}})["ok"]
            event = stream.event()
            assert json.loads(data_of(event)) == {"n": n, "host": "alpha"}, (n, event)
        # A raw carriage return (JSON whitespace) cannot end an SSE line: a space, as uncompressed.
        publisher.socket.sendall(b'{"op":"pub","subject":"g.live","value":{"a":\r1}}\n')
        assert data_of(stream.event()) == '{"a": 1}'
        # A value over 64 KiB (compressed once, its fields and line ends stored around it).
        big = {"text": "x" * 200_000}
        assert publisher.request({"op": "pub", "subject": "g.live", "value": big})["ok"]
        assert json.loads(data_of(stream.event())) == big
        assert publisher.request({"op": "complete", "subject": "g.live"})["ok"]
        assert stream.event() == "event: completed\ndata: {}"
        stream.assert_ended_whole()
        stream.close()
        publisher.close()

    def test_curl_compressed_reads_a_stream_with_positions_to_its_end(self, d):
        publisher = LineClient(d.port)
        assert publisher.request({"op": "auth", "token": TOKEN})["ok"]
        for n in range(3):
            assert publisher.request({"op": "pub", "subject": "g.rep", "value": n})["ok"]
        curl = subprocess.Popen(
            ["curl", "-sS", "-N", "--compressed", "-D", "-", f"{d.url}/events?subject=g.rep&token={TOKEN}"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            poll_until(lambda: stats(d), lambda s: s["compression"]["event_streams"] == 1, "curl's stream")
            assert publisher.request({"op": "pub", "subject": "g.rep", "value": 3})["ok"]
            assert publisher.request({"op": "error", "subject": "g.rep", "message": "done"})["ok"]
            out, err = curl.communicate(timeout=10)
        finally:
            curl.kill()
        # curl checks the trailer: a wrong CRC or a missing end is its error, not exit 0.
        assert curl.returncode == 0, (curl.returncode, err)
        head, _, body = out.partition("\n\n")
        assert "Content-Encoding: gzip" in head, head
        events = body.strip().split("\n\n")
        assert len(events) == 5, out
        assert [e.split("\n")[1] for e in events[:4]] == [f"data: {n}" for n in range(4)], events
        assert all(e.startswith("id: ") and e.split("\n")[0].endswith(f":{n + 1}") for n, e in enumerate(events[:4]))
        assert events[4] == 'event: error\ndata: {"code":"subject_error","message":"done"}', events[4]
        publisher.close()

    def test_a_value_is_compressed_once_for_every_stream(self, d):
        # zlib's memory is the shared compressors', one set per loop, not one per stream: twenty
        # streams cost at most what one does on each loop, and every one inflates the same event.
        first = GzipEventStream(d, "g.many")
        publisher = LineClient(d.port)
        assert publisher.request({"op": "auth", "token": TOKEN})["ok"]
        assert publisher.request({"op": "pub", "subject": "g.many", "value": {"warm": True}})["ok"]
        assert json.loads(data_of(first.event())) == {"warm": True}
        one = poll_until(lambda: stats(d), lambda s: s["compression"]["event_streams"] == 1, "one stream")
        streams = [first] + [GzipEventStream(d, "g.many") for _ in range(19)]
        plain = GzipEventStream(d, "g.many", accept_encoding="identity")
        assert not plain.gzipped
        many = poll_until(lambda: stats(d), lambda s: s["compression"]["event_streams"] == 20, "twenty streams")
        value = {"metrics": [{"host": f"h{n}", "cpu": n / 7, "mem": n * 1024} for n in range(300)]}
        assert publisher.request({"op": "pub", "subject": "g.many", "value": value})["ok"]
        for stream in streams + [plain]:
            assert json.loads(data_of(stream.event())) == value
        after = stats(d)
        loops = after["loops"]
        assert one["compression"]["memory_bytes"] > 0, one
        for later in (many, after):
            assert one["compression"]["memory_bytes"] <= later["compression"]["memory_bytes"], (one, later)
            assert later["compression"]["memory_bytes"] <= loops * one["compression"]["memory_bytes"], (one, later)
        for stream in streams + [plain]:
            stream.close()
        poll_until(lambda: stats(d), lambda s: s["compression"]["event_streams"] == 0, "streams gone")
        publisher.close()

    def test_websockets_with_permessage_deflate_are_counted(self, d):
        before = stats(d)
        metrics = httpx.get(d.url + "/metrics", headers=AUTH).text
        assert 'runnel_compressed_streams{transport="websocket"} 0' in metrics, metrics
        with websocket_connect(d.ws_url + f"?token={TOKEN}") as compressed, \
                websocket_connect(d.ws_url + f"?token={TOKEN}", compression=None) as plain:
            for websocket in (compressed, plain):
                websocket.send(json.dumps({"op": "ping", "ref": 1}))
                assert json.loads(websocket.recv(timeout=5))["ok"]
            now = stats(d)
            assert now["compression"]["websockets"] == 1, now
            # Its own deflater (context takeover) and inflater, zlib's bytes counted as allocated.
            assert now["compression"]["memory_bytes"] > before["compression"]["memory_bytes"], (before, now)
            metrics = httpx.get(d.url + "/metrics", headers=AUTH).text
            assert 'runnel_compressed_streams{transport="websocket"} 1' in metrics
        # Less than while it was open: the connection's own inflater (and deflater) given back.
        # A loop's shared compressors stay for the process's life and may first be made during
        # this check, so the figure may settle above `before`; earlier checks' streams still
        # freeing theirs on other loops only lower it.
        opened = now["compression"]["memory_bytes"]
        poll_until(lambda: stats(d), lambda s: s["compression"]["websockets"] == 0
                   and s["compression"]["memory_bytes"] < opened, f"memory given back (before {before}, open {now})")

    def test_clean_stop(self, d):
        assert_clean_stop(d)


@pytest.mark.daemon(CONFIG)
class TestDrain:
    """The drain (SIGTERM) ending a gzip'd stream."""

    def test_the_drain_ends_a_gzipped_stream_whole(self, d):
        # SIGTERM: the values queued before it still arrive, then the gzip member's end.
        stream = GzipEventStream(d, "g.drain")
        publisher = LineClient(d.port)
        assert publisher.request({"op": "auth", "token": TOKEN})["ok"]
        for n in range(100):
            publisher.send({"op": "pub", "subject": "g.drain", "value": n})
        assert publisher.request({"op": "ping"})["ok"]
        d.process.send_signal(signal.SIGTERM)
        assert [data_of(stream.event()) for _ in range(100)] == [str(n) for n in range(100)]
        stream.assert_ended_whole()
        publisher.close()
        stream.close()
        assert d.process.wait(timeout=30) == 0

    def test_clean_stop(self, d):
        assert_clean_stop(d)


@pytest.mark.daemon("compression = false\n" + CONFIG)
class TestOff:
    """`compression = false`."""

    def test_compression_off_sends_everything_as_it_is(self, d):
        status, headers, body = raw_get(d, "/stats", "gzip")
        assert "content-encoding" not in headers and "vary" not in headers, headers
        assert json.loads(body)["compression"] == {"websockets": 0, "event_streams": 0, "memory_bytes": 0}
        stream = GzipEventStream(d, "g.off")
        assert not stream.gzipped and "content-encoding" not in stream.headers, stream.headers
        publisher = LineClient(d.port)
        assert publisher.request({"op": "auth", "token": TOKEN})["ok"]
        assert publisher.request({"op": "pub", "subject": "g.off", "value": 1})["ok"]
        assert data_of(stream.event()) == "1"
        stream.close()
        publisher.close()

    def test_clean_stop(self, d):
        assert_clean_stop(d)
