"""The HTTP front door against a real runneld, with a real HTTP client no one here wrote
(httpx) and, for what a well-behaved client never sends, raw sockets.

    python3 -m pytest Tests/blackbox/test_http.py [--runneld PATH]

Starts its own runneld processes on free loopback ports (the protocol and HTTP both), one per
configuration, and checks docs/protocol.md's "The HTTP front door": every status the routes
/healthz, /stats, /subjects and POST /pub/SUBJECT can answer, keep-alive and pipelining,
chunked bodies, NDJSON published in order as it arrives, request smuggling refused, the head
limits (431, 10 s to finish a head, slowloris), max_connections, authentication, origins and
CORS (and the log's hint, once, about an origin it refuses), /metrics, linted by promtool, GET
/events (Server-Sent Events: ids, terminal and dropped events, resume, 204, bad queries,
heartbeats, disposal on close), and the files of http_static_dir (types, index.html, 304,
gzip, HEAD, the size limit, traversal and links out refused, runneld's own paths first, the
folder checked at start and on reload). Needs httpx (Debian: python3-httpx) and promtool
(Debian: prometheus).
"""

import gzip
import json
import os
import re
import signal
import socket
import subprocess
import tempfile
import threading
import time

import httpx
import pytest
from runneld_process import TEST_LOOPS, EventStream, LineClient, assert_clean_stop, check_config, poll_until

TOKEN = "s3cret"
ALLOWED = "https://dash.example"


def raw_exchange(port, data, timeout=5):
    """Sends `data` on a new socket and returns everything read until the server closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as raw:
        raw.sendall(data)
        received = b""
        while True:
            chunk = raw.recv(65536)
            if not chunk:
                return received
            received += chunk


def status_of(response_bytes):
    return int(response_bytes.split(b" ", 2)[1])


def answers_in(response_bytes):
    """How many answers (status lines) `response_bytes` holds."""
    return len(re.findall(rb"HTTP/1\.1 \d{3} ", response_bytes))


def expect_error(response, status, code):
    assert response.status_code == status, (response.status_code, response.text)
    body = response.json()
    assert body["ok"] is False and body["code"] == code and isinstance(body["message"], str), body
    return body


AUTH = {"Authorization": f"Bearer {TOKEN}"}


def stats(d):
    return httpx.get(d.url + "/stats", headers=AUTH).json()


def wait_for_stats(d, predicate, what):
    """Polls /stats (for up to 5 s) until `predicate` holds; returns those stats."""
    return poll_until(lambda: stats(d), predicate, what)



def subscribe(d, subject):
    tcp = LineClient(d.port)
    assert tcp.request({"op": "auth", "token": TOKEN})["ok"]
    assert tcp.request({"op": "sub", "subject": subject})["ok"]
    return tcp


def scrape(d):
    """GET /metrics as Prometheus would: the samples by name and labels, after promtool (from
    Debian's prometheus package) has found nothing to complain about."""
    response = httpx.get(d.url + "/metrics", headers=AUTH)
    assert response.status_code == 200, response
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4"), response.headers
    lint = subprocess.run(["promtool", "check", "metrics"], input=response.content, capture_output=True)
    assert lint.returncode == 0 and not lint.stdout and not lint.stderr, (lint, response.text)
    samples = {}
    for line in response.text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            samples[name] = float(value)
    return samples


MAIN_CONFIG = f"""
auth_tokens = ["{TOKEN}"]
http_allowed_origins = ["{ALLOWED}"]
max_body_bytes = 4096
max_line_bytes = 128
data_dir = "DATA_DIR"
fsync = "always"
log_level = "info"

[[subjects]]
name = "dur"
kind = "replay"
capacity = 10
durable = true
"""



def stats_on(sock):
    """GET /stats on an open keep-alive socket: the answer's JSON."""
    sock.sendall(b"GET /stats HTTP/1.1\r\nHost: x\r\n\r\n")
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(4096)
    head, body = data.split(b"\r\n\r\n", 1)
    length = int(re.search(rb"Content-Length: (\d+)", head).group(1))
    while len(body) < length:
        body += sock.recv(4096)
    return json.loads(body)


LIMITS_CONFIG = """
auto_create = false
max_connections = 3

[[subjects]]
name = "known"

[[subjects]]
name = "ended"
"""


def events_query(subject, **more):
    return dict(subject=subject, token=TOKEN, **more)


SSE_CONFIG = f"""
auth_tokens = ["{TOKEN}"]
slow_consumer = "drop"
max_pending_bytes = 65536

[[subjects]]
name = "sse.rep"
kind = "replay"
capacity = 10

[[subjects]]
name = "sse.fin"
kind = "replay"
capacity = 10
"""


# The static suite's folder of pages.

SITE_FILES = {
    "index.html": b"<!doctype html><title>team</title>",
    "app.js": b"export const answer = 42;\n" * 200,
    "style.css": b"body { margin: 0 }",
    "data.json": b'{"a": 1}',
    "app.js.map": b'{"version": 3}',
    "logo.svg": b"<svg xmlns='http://www.w3.org/2000/svg'/>",
    "logo.png": b"\x89PNG\r\n\x1a\n" + b"\0" * 4000,
    "photo.jpg": b"\xff\xd8\xff" + b"\0" * 100,
    "favicon.ico": b"\0\0\1\0",
    "notes.txt": b"notes",
    "module.wasm": b"\0asm\1\0\0\0",
    "blob.bin": b"\1\2\3",
    "ops/index.html": b"<p>ops</p>",
    ".env": b"SECRET=hidden",
    "big.js": b"x" * (4 * 1024 * 1024 + 1),
    # Decoys where runneld's own paths are: never served.
    "runnel.js": b"decoy", "healthz": b"decoy", "stats": b"decoy", "subjects": b"decoy", "metrics": b"decoy",
    "events": b"decoy", "ws": b"decoy", "pub/x": b"decoy",
}

SITE_TYPES = {
    "index.html": "text/html; charset=utf-8", "app.js": "text/javascript; charset=utf-8",
    "style.css": "text/css; charset=utf-8", "data.json": "application/json", "app.js.map": "application/json",
    "logo.svg": "image/svg+xml", "logo.png": "image/png", "photo.jpg": "image/jpeg", "favicon.ico": "image/x-icon",
    "notes.txt": "text/plain; charset=utf-8", "module.wasm": "application/wasm", "blob.bin": "application/octet-stream",
}


def make_site(directory):
    """`site/` in `directory` (SITE_FILES, a link to app.js, links out of the folder, a FIFO)
    and `secret.txt` beside it; returns the folder's path."""
    site = os.path.join(directory, "site")
    for name, content in SITE_FILES.items():
        os.makedirs(os.path.dirname(os.path.join(site, name)), exist_ok=True)
        with open(os.path.join(site, name), "wb") as file:
            file.write(content)
    with open(os.path.join(directory, "secret.txt"), "w") as file:
        file.write("SECRET")
    os.symlink("app.js", os.path.join(site, "alias.js"))
    os.symlink("../secret.txt", os.path.join(site, "out.txt"))
    os.symlink(directory, os.path.join(site, "up"))
    os.mkfifo(os.path.join(site, "pipe.js"))
    return site


STATIC_CONFIG = f"""
auth_tokens = ["{TOKEN}"]
http_static_dir = "SITE"
log_level = "info"
"""


@pytest.mark.daemon(MAIN_CONFIG)
class TestMain:
    """The main daemon: tokens, allowed origin, small limits, a durable subject."""

    def test_healthz_needs_no_token(self, d):
        response = httpx.get(d.url + "/healthz")
        assert response.status_code == 200 and response.text == "ok", response

    def test_index(self, d):
        # The dashboard page holds no data: it needs no token (it asks for one over /ws).
        response = httpx.get(d.url + "/")
        assert response.status_code == 200, response
        assert response.headers["content-type"] == "text/html; charset=utf-8", response.headers
        # The dashboard's script, in line, talks to runneld through the client it serves.
        assert response.text.startswith("<!doctype html>") and '"/runnel.js"' in response.text, response.text[:200]
        head = httpx.head(d.url + "/")
        assert head.status_code == 200 and head.content == b"", head
        # As GET's (gzip'd for both: httpx accepts gzip, test_gzip.py checks the rest).
        assert head.headers["content-length"] == response.headers["content-length"], head.headers
        # Only GET and HEAD: a POST to / still needs the token.
        expect_error(httpx.post(d.url + "/", json=1), 401, "unauthorized")

    def test_auth(self, d):
        expect_error(httpx.get(d.url + "/stats"), 401, "unauthorized")
        expect_error(httpx.get(d.url + "/stats", headers={"Authorization": "Bearer wrong"}), 401, "unauthorized")
        expect_error(httpx.get(d.url + "/stats?token=wrong"), 401, "unauthorized")
        expect_error(httpx.post(d.url + "/pub/a", json=1), 401, "unauthorized")
        # Authentication comes first: an unknown path without a token is 401 too.
        expect_error(httpx.get(d.url + "/nowhere"), 401, "unauthorized")
        assert httpx.get(d.url + "/stats", headers=AUTH).status_code == 200
        assert httpx.get(d.url + "/stats", params={"token": TOKEN}).status_code == 200

    def test_stats_is_the_stats_reply(self, d):
        tcp = LineClient(d.port)
        assert tcp.request({"op": "auth", "token": TOKEN})["ok"]
        reply = tcp.request({"op": "stats"})
        stats = httpx.get(d.url + "/stats", headers=AUTH).json()
        assert set(stats) == set(reply) - {"ok", "ref"}, (stats, reply)
        # The HTTP client's connection and this TCP one.
        assert stats["connections"] >= 2, stats
        tcp.close()

    def test_metrics(self, d):
        before = scrape(d)
        tcp = subscribe(d, "metrics.a")
        expect_error(httpx.post(d.url + "/pub/metrics.a", content=b"{nope", headers=AUTH), 400, "bad_json")
        assert httpx.post(d.url + "/pub/metrics.a", json=1, headers=AUTH).status_code == 200
        assert tcp.next_value() == 1
        assert tcp.request({"op": "frobnicate"})["code"] == "unknown_op"
        after = scrape(d)
        grew = {name: after.get(name, 0) - before.get(name, 0) for name in after}
        assert grew["runnel_published_total"] == 1 and grew["runnel_delivered_total"] == 1, grew
        assert grew['runnel_request_errors_total{code="bad_json"}'] == 1, grew
        assert grew['runnel_request_errors_total{code="unknown_op"}'] == 1, grew
        assert grew['runnel_http_responses_total{status="400"}'] == 1, grew
        # The POST and the first scrape, answered 200 between the two scrapes.
        assert grew['runnel_http_responses_total{status="200"}'] == 2, grew
        assert after['runnel_connections{transport="tcp"}'] >= 1, after
        assert after['runnel_connections{transport="http"}'] >= 1, after
        assert after["runnel_subscriptions"] >= 1 and after["process_resident_memory_bytes"] > 0, after
        loops = tcp.request({"op": "stats"})["loops"]
        assert loops == int(TEST_LOOPS), (loops, TEST_LOOPS)
        for loop in range(loops):
            turns = after[f'runnel_loop_turn_duration_seconds_count{{loop="{loop}"}}']
            assert turns > 0 and after[f'runnel_loop_turn_duration_seconds_bucket{{loop="{loop}",le="+Inf"}}'] == turns, after
            assert f'runnel_loop_handoffs_total{{loop="{loop}"}}' in after, after
        # Every connection open now is on one loop or another: the TCP client and this scrape's.
        on_loops = sum(after[f'runnel_loop_connections{{loop="{loop}"}}'] for loop in range(loops))
        assert on_loops == after['runnel_connections{transport="tcp"}'] + after['runnel_connections{transport="http"}'], after
        assert "runnel_journal_size_bytes" in after, "the config has a data_dir: the journal's figures are there"
        tcp.close()

    def test_subjects_is_the_list_reply(self, d):
        tcp = LineClient(d.port)
        assert tcp.request({"op": "auth", "token": TOKEN})["ok"]
        for subject in ["list.a", "list.b", "other.c"]:
            assert tcp.request({"op": "pub", "subject": subject, "value": 1})["ok"]
        listed = httpx.get(d.url + "/subjects", params={"prefix": "list."}, headers=AUTH).json()
        assert listed == tcp.request({"op": "list", "prefix": "list."})["subjects"], listed
        assert [entry["subject"] for entry in listed] == ["list.a", "list.b"], listed
        everything = httpx.get(d.url + "/subjects", headers=AUTH).json()
        assert {"list.a", "list.b", "other.c"} <= {entry["subject"] for entry in everything}
        tcp.close()

    def test_publish_one_value(self, d):
        tcp = subscribe(d, "one")
        response = httpx.post(d.url + "/pub/one", json={"x": [1, 2]}, headers=AUTH)
        assert response.status_code == 200 and response.json() == {"ok": True, "receivers": 1}, response.text
        assert tcp.next_value() == {"x": [1, 2]}
        # No Content-Type is JSON too; a pretty-printed value still travels as one line.
        response = httpx.post(d.url + "/pub/one", content=b'{\n  "y": "a b"\n}\n', headers=AUTH)
        assert response.json() == {"ok": True, "receivers": 1}, response.text
        assert tcp.next_value() == {"y": "a b"}
        tcp.close()

    def test_publish_percent_decoded_subject(self, d):
        tcp = subscribe(d, "café.x")
        response = httpx.post(d.url + "/pub/caf%C3%A9%2E%78", json=7, headers=AUTH)
        assert response.json() == {"ok": True, "receivers": 1}, response.text
        assert tcp.next_value() == 7
        tcp.close()

    def test_publish_errors(self, d):
        expect_error(httpx.post(d.url + "/pub/e", content=b"", headers=AUTH), 400, "bad_json")
        expect_error(httpx.post(d.url + "/pub/e", content=b"{nope", headers=AUTH), 400, "bad_json")
        expect_error(httpx.post(d.url + "/pub/e", content=b"1 2", headers=AUTH), 400, "bad_json")
        expect_error(httpx.post(d.url + "/pub/a..b", json=1, headers=AUTH), 400, "bad_request")
        expect_error(httpx.post(d.url + "/pub/e", content=b"1", headers=dict(AUTH, **{"Content-Type": "text/csv"})),
                     400, "bad_request")
        expect_error(httpx.post(d.url + "/pub/%ff", json=1, headers=AUTH), 400, "bad_request")

    def test_head(self, d):
        # HEAD answers as GET would, without the body; a stream (or a publish) is GET or POST only.
        with socket.create_connection(("127.0.0.1", d.http_port), timeout=5) as sock:
            sock.sendall(b"HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            received = b""
            while received.count(b"HTTP/1.1 200") < 2 or not received.endswith(b"ok"):
                chunk = sock.recv(4096)
                assert chunk, received
                received += chunk
            head_answer, get_answer = received.split(b"HTTP/1.1 200")[1:]
            assert head_answer.endswith(b"\r\n\r\n") and b"Content-Length: 2\r\n" in head_answer, received
            assert get_answer.endswith(b"\r\n\r\nok"), received
        response = httpx.head(d.url + "/stats", headers=AUTH)
        assert response.status_code == 200 and response.content == b"", response
        assert int(response.headers["content-length"]) > 2, response.headers
        assert httpx.head(d.url + "/events?subject=x", headers=AUTH).status_code == 405

    def test_not_found_and_method_not_allowed(self, d):
        expect_error(httpx.get(d.url + "/nowhere", headers=AUTH), 404, "not_found")
        response = expect_error(httpx.get(d.url + "/pub/x", headers=AUTH), 405, "method_not_allowed")
        assert response and "POST" in httpx.get(d.url + "/pub/x", headers=AUTH).headers["allow"]
        expect_error(httpx.post(d.url + "/stats", headers=AUTH), 405, "method_not_allowed")
        expect_error(httpx.delete(d.url + "/subjects", headers=AUTH), 405, "method_not_allowed")

    def test_body_limit(self, d):
        # max_body_bytes = 4096 here: by Content-Length, and by a chunked body that grows past it.
        response = httpx.post(d.url + "/pub/big", content=b"1" * 5000, headers=AUTH)
        expect_error(response, 413, "limit")

        def chunks():
            yield b"["
            for _ in range(10):
                yield b"1," * 300
            yield b"1]"

        expect_error(httpx.post(d.url + "/pub/big", content=chunks(), headers=AUTH), 413, "limit")
        # An NDJSON body too: its lines are short, the whole is not.
        ndjson = dict(AUTH, **{"Content-Type": "application/x-ndjson"})
        body = expect_error(httpx.post(d.url + "/pub/big", content=(b"1\n" for _ in range(3000)), headers=ndjson),
                            413, "limit")
        assert body["published"] == 2048, body

    def test_ndjson_streams_in_order(self, d):
        tcp = subscribe(d, "nd")
        received = []

        def body():
            # Each line is sent only once the previous one has reached the subscriber: the server
            # publishes as lines arrive, not once the body is complete.
            for number in range(1, 6):
                yield json.dumps({"n": number}).encode() + b"\n"
                received.append(tcp.next_value())
                if number == 2:
                    yield b"\n   \n"  # blank lines are skipped

        response = httpx.post(d.url + "/pub/nd", content=body(),
                              headers=dict(AUTH, **{"Content-Type": "application/x-ndjson"}))
        assert response.status_code == 200 and response.json() == {"ok": True, "published": 5}, response.text
        assert received == [{"n": n} for n in range(1, 6)], received
        # A last line without its newline counts; \r\n line ends work.
        response = httpx.post(d.url + "/pub/nd", content=b'"a"\r\n"b"',
                              headers=dict(AUTH, **{"Content-Type": "application/x-ndjson"}))
        assert response.json() == {"ok": True, "published": 2}, response.text
        assert [tcp.next_value(), tcp.next_value()] == ["a", "b"]
        tcp.close()

    def test_ndjson_bad_line(self, d):
        tcp = subscribe(d, "ndbad")
        response = httpx.post(d.url + "/pub/ndbad", content=b"1\n2\n{bad\n4\n",
                              headers=dict(AUTH, **{"Content-Type": "application/x-ndjson"}))
        body = expect_error(response, 400, "bad_json")
        assert body["published"] == 2, body
        long_line = b"[" + b"0," * 100 + b"0]\n"  # over max_line_bytes = 128
        response = httpx.post(d.url + "/pub/ndbad", content=b"3\n" + long_line + b"5\n",
                              headers=dict(AUTH, **{"Content-Type": "application/x-ndjson"}))
        body = expect_error(response, 413, "line_too_long")
        assert body["published"] == 1, body
        # Nothing after a bad line was published: the next value after 1, 2, 3 is the marker.
        assert httpx.post(d.url + "/pub/ndbad", json="marker", headers=AUTH).status_code == 200
        assert [tcp.next_value() for _ in range(4)] == [1, 2, 3, "marker"]
        tcp.close()

    def test_durable_publish(self, d):
        tcp = subscribe(d, "dur")
        response = httpx.post(d.url + "/pub/dur", json={"kept": True}, headers=AUTH)
        assert response.json() == {"ok": True, "receivers": 1}, response.text
        assert tcp.next_value() == {"kept": True}
        response = httpx.post(d.url + "/pub/dur", content=b"1\n2\n",
                              headers=dict(AUTH, **{"Content-Type": "application/x-ndjson"}))
        assert response.json() == {"ok": True, "published": 2}, response.text
        listed = httpx.get(d.url + "/subjects", params={"prefix": "dur"}, headers=AUTH).json()
        assert listed[0]["durable"] is True and listed[0]["published"] == 3, listed
        tcp.close()

    def test_half_close_is_answered(self, d):
        # A client that sends its requests and half-closes (printf ... | nc) gets every answer,
        # one that waits for the disk (fsync = "always") too, then the connection closes.
        body = b'{"half":"closed"}'
        request = (b"POST /pub/dur HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + TOKEN.encode()
                   + b"\r\nContent-Type: application/json\r\nContent-Length: " + str(len(body)).encode()
                   + b"\r\n\r\n" + body)
        with socket.create_connection(("127.0.0.1", d.http_port), timeout=5) as sock:
            sock.sendall(request + request.replace(b'"closed"', b'"again!"'))
            sock.shutdown(socket.SHUT_WR)
            received = b""
            while chunk := sock.recv(4096):
                received += chunk
        answers = received.count(b'{"ok":true,"receivers":0}')
        assert received.startswith(b"HTTP/1.1 200") and answers == 2, received

    def test_keep_alive_and_pipelining(self, d):
        with httpx.Client(headers=AUTH) as client:
            for _ in range(5):
                assert client.get(d.url + "/healthz").status_code == 200
                assert client.post(d.url + "/pub/ka", json=1).status_code == 200
            # Errors that read the whole request keep the connection too.
            expect_error(client.get(d.url + "/nowhere"), 404, "not_found")
            assert client.get(d.url + "/healthz").status_code == 200
        # One socket, request after request, each answer read whole before the next is sent.
        with socket.create_connection(("127.0.0.1", d.http_port), timeout=5) as raw:
            for number in range(3):
                raw.sendall(b"POST /pub/ka HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + TOKEN.encode()
                            + b"\r\nContent-Type: application/json\r\nContent-Length: 1\r\n\r\n" + str(number).encode())
                answer = b""
                while not answer.endswith(b"}"):
                    chunk = raw.recv(4096)
                    assert chunk, f"the connection closed after {number} answers"
                    answer += chunk
                assert answer.startswith(b"HTTP/1.1 200 OK") and b"Connection: close" not in answer, answer
        request = (b"POST /pub/pipe HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + TOKEN.encode()
                   + b"\r\nContent-Length: 1\r\n\r\n1"
                   + b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
                   + b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        answer = raw_exchange(d.http_port, request)
        assert answers_in(answer) == 3 and answer.count(b"HTTP/1.1 200 OK") == 3, answer
        assert answer.index(b'{"ok":true,"receivers":0}') < answer.index(b"\r\n\r\nok"), answer

    def test_chunked_single_value(self, d):
        def body():
            yield b'{"chunked":'
            yield b" true}"

        response = httpx.post(d.url + "/pub/chunky", content=body(), headers=AUTH)
        assert response.json() == {"ok": True, "receivers": 0}, response.text

    def test_smuggling_refused(self, d):
        both = (b"POST /pub/s HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n"
                b"0\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        answer = raw_exchange(d.http_port, both)
        assert status_of(answer) == 400 and answers_in(answer) == 1, answer
        assert b"Connection: close" in answer
        two_lengths = (b"POST /pub/s HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n12")
        answer = raw_exchange(d.http_port, two_lengths)
        assert status_of(answer) == 400 and answers_in(answer) == 1, answer
        not_chunked = b"POST /pub/s HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n1"
        assert status_of(raw_exchange(d.http_port, not_chunked)) == 400
        assert status_of(raw_exchange(d.http_port, b"NONSENSE\r\n\r\n")) == 400

    def test_head_over_16_kib(self, d):
        answer = raw_exchange(d.http_port, b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 17000 + b"\r\n\r\n")
        assert status_of(answer) == 431 and b'"code":"limit"' in answer, answer[:200]
        # Just under the limit is fine.
        answer = raw_exchange(d.http_port, b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Big: "
                              + b"a" * 16000 + b"\r\n\r\n")
        assert status_of(answer) == 200, answer[:200]

    def test_origins_and_cors(self, d):
        evil = dict(AUTH, Origin="https://evil.example")
        expect_error(httpx.post(d.url + "/pub/o", json=1, headers=evil), 403, "forbidden_origin")
        # A GET from another origin is answered (its browser keeps the answer from the page).
        response = httpx.get(d.url + "/stats", headers=evil)
        assert response.status_code == 200 and "access-control-allow-origin" not in response.headers
        response = httpx.post(d.url + "/pub/o", json=1, headers=dict(AUTH, Origin=ALLOWED))
        assert response.status_code == 200, response.text
        assert response.headers["access-control-allow-origin"] == ALLOWED, response.headers
        # The server's own origin (a page it served).
        response = httpx.post(d.url + "/pub/o", json=1, headers=dict(AUTH, Origin=d.url))
        assert response.status_code == 200, response.text
        # A preflight needs no token.
        response = httpx.options(d.url + "/pub/o", headers={"Origin": ALLOWED, "Access-Control-Request-Method": "POST"})
        assert response.status_code == 204, response
        assert response.headers["access-control-allow-origin"] == ALLOWED
        assert "POST" in response.headers["access-control-allow-methods"]
        assert "Authorization" in response.headers["access-control-allow-headers"]
        response = httpx.options(d.url + "/pub/o", headers={"Origin": "https://evil.example"})
        assert response.status_code == 204 and "access-control-allow-origin" not in response.headers

    def test_refused_origin_is_named_once(self, d):
        """The log says, once per origin, how to allow a page http_allowed_origins refuses: its
        changes (403) and its reads (answered without CORS fields) alike."""
        origin = "https://hint.example"
        hint = f"refused a request from origin {origin}: add it to http_allowed_origins to allow it"

        def named():
            expect_error(httpx.post(d.url + "/pub/o", json=1, headers=dict(AUTH, Origin=origin)), 403,
                         "forbidden_origin")
            assert httpx.get(d.url + "/stats", headers=dict(AUTH, Origin=origin)).status_code == 200
            return sum(hint in line for line in d.log)

        # At most one origin a second is named: an earlier check's may have just been.
        poll_until(named, lambda count: count > 0, "no hint for " + origin)
        for _ in range(10):
            named()
        time.sleep(0.2)
        assert sum(hint in line for line in d.log) == 1, [line for line in d.log if "refused a request" in line]
        # Listed origins and the server's own are not refused; a page opened from a file has no
        # origin to list, and is told so.
        assert httpx.post(d.url + "/pub/o", json=1, headers=dict(AUTH, Origin=ALLOWED)).status_code == 200
        assert httpx.post(d.url + "/pub/o", json=1, headers=dict(AUTH, Origin=d.url)).status_code == 200
        def log_after_a_page_from_a_file():
            expect_error(httpx.post(d.url + "/pub/o", json=1, headers=dict(AUTH, Origin="null")), 403,
                         "forbidden_origin")
            return d.log

        poll_until(log_after_a_page_from_a_file,
                   lambda log: any("origin null (a page opened from a file" in line for line in log), "no hint for null")
        refused = [line for line in d.log if "refused a request from origin" in line]
        assert not any(ALLOWED in line or d.url in line for line in refused), refused

    def test_slow_heads_are_closed(self, d):
        """A head not finished within 10 s of its first byte is closed, however slowly it keeps
        coming (slowloris); meanwhile and afterwards both front doors serve others."""
        started = time.monotonic()
        stalled = socket.create_connection(("127.0.0.1", d.http_port), timeout=20)
        stalled.sendall(b"GET /healthz HTTP/1.1\r\n")
        dribblers = [socket.create_connection(("127.0.0.1", d.http_port), timeout=20) for _ in range(20)]
        for dribbler in dribblers:
            dribbler.sendall(b"GET /healthz HTTP/1.1\r\nX-Slow: ")
        closed = {}

        def watch(name, sock):
            try:
                while sock.recv(1024):
                    pass
            except OSError:
                pass
            closed[name] = time.monotonic() - started

        watchers = [threading.Thread(target=watch, args=("stalled", stalled))]
        watchers += [threading.Thread(target=watch, args=(index, s)) for index, s in enumerate(dribblers)]
        for watcher in watchers:
            watcher.start()
        tcp = LineClient(d.port)
        assert tcp.request({"op": "auth", "token": TOKEN})["ok"]
        while len(closed) < len(watchers) and time.monotonic() - started < 15:
            for dribbler in dribblers:
                try:
                    dribbler.sendall(b"a")
                except OSError:
                    pass
            assert tcp.request({"op": "ping"})["ok"]
            assert httpx.get(d.url + "/healthz").status_code == 200
            time.sleep(0.5)
        for watcher in watchers:
            watcher.join(timeout=5)
        assert len(closed) == len(watchers), closed
        assert all(9.5 <= seconds <= 12.5 for seconds in closed.values()), closed
        assert tcp.request({"op": "ping"})["ok"]
        assert httpx.get(d.url + "/stats", headers=AUTH).json()["connections"] == 2
        tcp.close()

    def test_clean_stop(self, d):
        assert_clean_stop(d)


@pytest.mark.daemon(LIMITS_CONFIG)
class TestLimits:
    """A second daemon: no auto_create, three connections at most, no tokens."""

    def test_unknown_and_terminated_subjects(self, d):
        expect_error(httpx.post(d.url + "/pub/absent", json=1), 404, "unknown_subject")
        tcp = LineClient(d.port)
        assert tcp.request({"op": "complete", "subject": "ended"})["ok"]
        expect_error(httpx.post(d.url + "/pub/ended", json=1), 409, "terminated")
        body = expect_error(httpx.post(d.url + "/pub/ended", content=b"1\n",
                                       headers={"Content-Type": "application/x-ndjson"}), 409, "terminated")
        assert body["published"] == 0, body
        assert httpx.post(d.url + "/pub/known", json=1).json() == {"ok": True, "receivers": 0}
        tcp.close()

    def test_max_connections(self, d):
        # max_connections = 3: two idle HTTP connections and one TCP one fill it, once the server
        # has seen the earlier checks' connections close, which the first of them asks until it
        # is the only one (a new connection for each question could itself still be open).
        idle = [socket.create_connection(("127.0.0.1", d.http_port), timeout=5)]
        poll_until(
            lambda: stats_on(idle[0]), lambda s: s["connections"] == 1, "the earlier checks' connections did not close")
        idle.append(socket.create_connection(("127.0.0.1", d.http_port), timeout=5))
        tcp = LineClient(d.port)
        assert tcp.request({"op": "ping"})["ok"]
        # With several loops a connection is admitted by the loop it was placed on, in that
        # loop's turn: the second idle one may not count yet when the ping is answered.
        poll_until(lambda: stats_on(idle[0]), lambda s: s["connections"] == 3, "the limit's connections not counted")
        answer = raw_exchange(d.http_port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        assert status_of(answer) == 503 and b'"code":"limit"' in answer, answer
        refused = LineClient(d.port)
        assert refused.line()["ev"] == "closing"
        refused.close()
        assert stats_on(idle[0])["connections"] == 3
        for sock in idle:
            sock.close()
        tcp.close()
        wait_for_stats(d, lambda s: s["connections"] == 1, "the connections closed")

    def test_clean_stop(self, d):
        assert_clean_stop(d)


@pytest.mark.daemon(SSE_CONFIG)
class TestSse:
    """GET /events (Server-Sent Events) against a third daemon: tokens, the `drop` slow-consumer
    policy with a small max_pending_bytes, a replay subject to resume from."""

    def test_sse_events_carry_data_and_id(self, d):
        stream = EventStream(d, events_query("sse.a"))
        try:
            assert stream.response.status_code == 200, stream.response.status_code
            assert stream.response.headers["content-type"] == "text/event-stream", stream.response.headers
            assert stream.response.headers["cache-control"] == "no-cache", stream.response.headers
            tcp = LineClient(d.port)
            tcp.send({"op": "auth", "token": TOKEN})
            assert tcp.request({"op": "pub", "subject": "sse.a", "value": 1})["ok"]
            assert tcp.request({"op": "pub", "subject": "sse.a", "value": {"x": [1, "two"]}})["ok"]
            first, second = stream.event(), stream.event()
            assert first["data"] == "1" and re.fullmatch(r"[A-Za-z0-9_-]+:1", first["id"]), first
            # The value's bytes as published (json.dumps's spaces included), on one line.
            assert second == {"id": first["id"][:-1] + "2", "data": '{"x": [1, "two"]}'}, second
            assert "event" not in first, first
            # A value over 4 KiB is written by reference rather than copied: the same event.
            large = "y" * 5000
            assert tcp.request({"op": "pub", "subject": "sse.a", "value": large})["ok"]
            assert stream.event() == {"id": first["id"][:-1] + "3", "data": json.dumps(large)}
            # JSON allows a raw CR between tokens, and a TCP line may carry one: it becomes a space,
            # since in SSE it would end the data line.
            tcp.socket.sendall(b'{"op":"pub","subject":"sse.a","value":[1,\r2],"ref":2}\n')
            assert tcp.line() == {"ok": True, "ref": 2, "receivers": 1}
            assert stream.event() == {"id": first["id"][:-1] + "4", "data": "[1, 2]"}
            tcp.close()
        finally:
            stream.close()

    def test_sse_shortcuts_ops_and_take(self, d):
        query = events_query("sse.b", filter=". > 1", map=". * 10", take="2", ops='[{"op":"map","expr":". + 1"}]')
        stream = EventStream(d, query)
        try:
            assert stream.response.status_code == 200, stream.response.text
            for value in [1, 2, 0, 3, 4]:
                assert httpx.post(d.url + "/pub/sse.b", json=value, headers=AUTH).status_code == 200
            assert stream.event()["data"] == "21"
            assert stream.event()["data"] == "31"
            assert stream.event() == {"event": "completed", "data": "{}"}
            assert stream.event() is None  # the response ends after the terminal event
        finally:
            stream.close()

    def test_sse_error_event(self, d):
        stream = EventStream(d, events_query("sse.err"))
        try:
            tcp = LineClient(d.port)
            tcp.send({"op": "auth", "token": TOKEN})
            assert tcp.request({"op": "error", "subject": "sse.err", "message": "boom"})["ok"]
            event = stream.event()
            assert event["event"] == "error", event
            assert json.loads(event["data"]) == {"code": "subject_error", "message": "boom"}, event
            assert stream.event() is None
            tcp.close()
        finally:
            stream.close()

    def test_sse_resume_from_and_last_event_id(self, d):
        tcp = LineClient(d.port)
        tcp.send({"op": "auth", "token": TOKEN})
        for value in [1, 2, 3]:
            assert tcp.request({"op": "pub", "subject": "sse.rep", "value": value})["ok"]
        epoch = next(s for s in tcp.request({"op": "list", "prefix": "sse.rep"})["subjects"])["pos"].split(":")[0]
        stream = EventStream(d, events_query("sse.rep", take="2", **{"from": f"{epoch}:1"}))
        try:
            assert [stream.event(), stream.event()] == [
                {"id": f"{epoch}:2", "data": "2"}, {"id": f"{epoch}:3", "data": "3"}]
        finally:
            stream.close()
        # A reconnecting browser sends the original URL again and Last-Event-ID: the header wins.
        stream = EventStream(d, events_query("sse.rep", take="1", **{"from": f"{epoch}:1"}),
                             headers={"Last-Event-ID": f"{epoch}:2"})
        try:
            assert stream.event() == {"id": f"{epoch}:3", "data": "3"}
        finally:
            stream.close()
        tcp.close()

    def test_sse_204_after_the_end(self, d):
        tcp = LineClient(d.port)
        tcp.send({"op": "auth", "token": TOKEN})
        for value in [1, 2]:
            assert tcp.request({"op": "pub", "subject": "sse.fin", "value": value})["ok"]
        assert tcp.request({"op": "complete", "subject": "sse.fin"})["ok"]
        last = tcp.request({"op": "list", "prefix": "sse.fin"})["subjects"][0]["pos"]
        response = httpx.get(d.url + "/events", params=events_query("sse.fin", **{"from": last}))
        assert response.status_code == 204 and response.content == b"", response
        response = httpx.get(d.url + "/events", params=events_query("sse.fin"), headers={"Last-Event-ID": last})
        assert response.status_code == 204, response
        # From an earlier position, the rest and then the end.
        epoch = last.split(":")[0]
        stream = EventStream(d, events_query("sse.fin", **{"from": f"{epoch}:1"}))
        try:
            assert stream.event() == {"id": last, "data": "2"}
            assert stream.event() == {"event": "completed", "data": "{}"}
        finally:
            stream.close()
        tcp.close()

    def test_sse_bad_queries(self, d):
        def bad(params, code, status=400):
            response = httpx.get(d.url + "/events", params=dict(params, token=TOKEN))
            expect_error(response, status, code)
            assert "data:" not in response.text
        bad({}, "bad_request")
        bad({"subject": "x", "take": "-1"}, "bad_request")
        bad({"subject": "x", "take": "1.5"}, "bad_request")
        bad({"subject": "x", "take": "two"}, "bad_request")
        bad({"subject": "x", "throttle": "0"}, "bad_request")
        bad({"subject": "x", "throttle": "\"1\""}, "bad_request")
        bad({"subject": "x", "ops": "[{"}, "bad_json")
        bad({"subject": "x", "ops": "{}"}, "bad_request")
        bad({"subject": "x", "ops": '[{"op":"nope"}]'}, "bad_operator")
        bad({"subject": "x", "filter": ". >"}, "bad_expr")
        bad({"subject": "bad..name"}, "bad_request")
        bad({"subject": "x.*", "from": "e:1"}, "bad_request")
        bad({"subject": "x", "from": "not a position"}, "bad_request")

    def test_sse_auth(self, d):
        expect_error(httpx.get(d.url + "/events", params={"subject": "x"}), 401, "unauthorized")
        expect_error(httpx.get(d.url + "/events", params={"subject": "x", "token": "wrong"}), 401, "unauthorized")
        stream = EventStream(d, {"subject": "sse.auth"}, headers=AUTH)
        try:
            assert stream.response.status_code == 200
        finally:
            stream.close()

    def test_sse_pattern_without_ids(self, d):
        stream = EventStream(d, events_query("sse.pat.*", map="[$subject, .]"))
        try:
            assert stream.response.status_code == 200, stream.response.text
            for subject, value in [("sse.pat.a", 1), ("sse.pat.b", 2)]:
                assert httpx.post(d.url + "/pub/" + subject, json=value, headers=AUTH).status_code == 200
            assert [stream.event(), stream.event()] == [{"data": '["sse.pat.a",1]'}, {"data": '["sse.pat.b",2]'}]
        finally:
            stream.close()

    def test_sse_counts_once_and_disposes_on_close(self, d):
        before = wait_for_stats(d, lambda s: s["connections"] == 1, "only the /stats request is open")
        stream = EventStream(d, events_query("sse.close", throttle="30"))
        try:
            # The throttle's timer is armed by a value.
            assert httpx.post(d.url + "/pub/sse.close", json=1, headers=AUTH).status_code == 200
            during = stats(d)
            assert during["connections"] == 2, during
            assert during["subscriptions"] == before["subscriptions"] + 1, (before, during)
            assert during["timers"] > before["timers"], (before, during)
            metrics = httpx.get(d.url + "/metrics", headers=AUTH).text
            assert 'runnel_connections{transport="sse"} 1' in metrics, metrics
        finally:
            stream.close()
        wait_for_stats(d, lambda s: (s["connections"], s["subscriptions"], s["timers"])
                       == (before["connections"], before["subscriptions"], before["timers"]),
                       f"back to {before}")

    def test_sse_dropped_under_drop_policy(self, d):
        # A client that does not read: values pile up past max_pending_bytes and are dropped; the
        # count comes as `event: dropped` before the next event that fits.
        raw = socket.create_connection(("127.0.0.1", d.http_port), timeout=10)
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        raw.sendall(f"GET /events?subject=sse.slow&token={TOKEN} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        received = b""
        while b"\r\n\r\n" not in received:
            received += raw.recv(4096)
        tcp = LineClient(d.port)
        tcp.send({"op": "auth", "token": TOKEN})
        value = "x" * 8000
        for _ in range(1000):
            tcp.send({"op": "pub", "subject": "sse.slow", "value": value})
        assert tcp.request({"op": "ping"})["ok"]
        wait_for_stats(d, lambda s: s["dropped"] > 0, "values dropped")
        raw.settimeout(0.5)
        received = b""
        try:
            while chunk := raw.recv(1 << 20):  # what was queued, and what fitted after the drops
                received += chunk
        except socket.timeout:
            pass
        assert tcp.request({"op": "pub", "subject": "sse.slow", "value": "end"})["ok"]
        raw.settimeout(5)
        while b'data: "end"\n\n' not in received:
            chunk = raw.recv(1 << 20)
            assert chunk, received[-200:]
            received += chunk
        # The count comes before the next event that fits: "end", or one of the burst's that fitted
        # once the socket's loop (with several loops) had handed more to the kernel.
        match = re.search(rb'event: dropped\ndata: \{"count":(\d+)\}\n\n(id: [^\n]+\n)?data: ', received)
        assert match and int(match.group(1)) > 0, received[-300:]
        assert received.endswith(b'data: "end"\n\n'), received[-300:]
        raw.close()
        tcp.close()

    def test_sse_heartbeat(self, d):
        stream = EventStream(d, events_query("sse.idle"), timeout=20)
        try:
            started = time.monotonic()
            for line in stream.lines:
                if line.startswith(":"):
                    break
            waited = time.monotonic() - started
            assert waited <= 16, waited  # 15 s, and a second for a loaded machine
        finally:
            stream.close()

    def test_clean_stop(self, d):
        assert_clean_stop(d)


class TestStatic:
    """http_static_dir against a fourth daemon: tokens (which its files do not need), a folder of
    pages beside a secret that links in the folder point at."""

    @pytest.fixture(scope="class")
    def d(self, runneld):
        """A daemon whose http_static_dir is a site `make_site` made in its directory."""
        directory = tempfile.mkdtemp(prefix="runneld-test-")
        site = make_site(directory)
        daemon = runneld(STATIC_CONFIG.replace("SITE", site), directory=directory)
        daemon.site = site
        return daemon

    def test_static_files_have_their_types(self, d):
        for name, media_type in SITE_TYPES.items():
            response = httpx.get(f"{d.url}/{name}")  # no token: the files need none
            assert response.status_code == 200, (name, response)
            assert response.headers["content-type"] == media_type, (name, response.headers)
            assert response.content == SITE_FILES[name], name
            assert response.headers["x-content-type-options"] == "nosniff", response.headers
            assert response.headers["etag"].startswith('W/"'), response.headers
        # A link inside the folder is followed.
        assert httpx.get(d.url + "/alias.js").content == SITE_FILES["app.js"]

    def test_static_index_html_and_folders(self, d):
        response = httpx.get(d.url + "/ops/")
        assert response.status_code == 200 and response.content == SITE_FILES["ops/index.html"], response
        assert response.headers["content-type"] == "text/html; charset=utf-8"
        for path, location in [("/ops", "/ops/"), ("/ops?x=1", "/ops/?x=1")]:
            response = httpx.get(d.url + path)
            assert response.status_code == 301 and response.headers["location"] == location, (path, response.headers)
        assert httpx.get(d.url + "/index.html").content == SITE_FILES["index.html"]
        # / is still the dashboard.
        assert '"/runnel.js"' in httpx.get(d.url + "/").text

    def test_static_missing_and_other_methods(self, d):
        expect_error(httpx.get(d.url + "/missing.js"), 404, "not_found")
        expect_error(httpx.get(d.url + "/missing/"), 404, "not_found")
        response = expect_error(httpx.post(d.url + "/app.js", headers=AUTH), 405, "method_not_allowed")
        assert httpx.put(d.url + "/app.js", headers=AUTH).headers["allow"] == "GET, HEAD, OPTIONS", response
        # Only reading needs no token.
        expect_error(httpx.post(d.url + "/app.js"), 401, "unauthorized")

    def test_static_traversal_and_links_out_refused(self, d):
        for target in [b"/../secret.txt", b"/ops/../../secret.txt", b"/%2e%2e/secret.txt", b"/%2E%2E%2Fsecret.txt",
                       b"/ops/%2e%2e/%2e%2e/secret.txt", b"/out.txt", b"/up/secret.txt", b"/.env",
                       b"/%2eenv", b"/app.js%00.png", b"/pipe.js", b"//app.js"]:
            answer = raw_exchange(d.http_port, b"GET " + target + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            assert status_of(answer) == 404 and b"SECRET" not in answer, (target, answer[:300])

    def test_static_own_routes_win(self, d):
        assert httpx.get(d.url + "/runnel.js").text.startswith("//"), "the client module, not the decoy"
        assert httpx.get(d.url + "/healthz").text == "ok"
        for path in ["/stats", "/subjects", "/metrics", "/events", "/pub/x"]:
            response = httpx.get(d.url + path)
            assert response.status_code == 401 and b"decoy" not in response.content, (path, response)
        assert httpx.get(d.url + "/ws").status_code == 426
        assert httpx.get(d.url + "/stats", headers=AUTH).json()["connections"] >= 1

    def test_static_head_gzip_and_not_modified(self, d):
        plain = httpx.get(d.url + "/app.js", headers={"Accept-Encoding": "identity"})
        assert "content-encoding" not in plain.headers and plain.headers["vary"] == "Accept-Encoding", plain.headers
        head = httpx.head(d.url + "/app.js", headers={"Accept-Encoding": "identity"})
        assert head.status_code == 200 and head.content == b"", head
        assert head.headers["content-length"] == str(len(SITE_FILES["app.js"])) == plain.headers["content-length"]
        with httpx.Client() as client:
            request = client.build_request("GET", d.url + "/app.js", headers={"Accept-Encoding": "gzip"})
            zipped = client.send(request, stream=True)
            raw = b"".join(zipped.iter_raw())
        assert zipped.headers["content-encoding"] == "gzip" and gzip.decompress(raw) == SITE_FILES["app.js"], zipped.headers
        assert len(raw) < len(SITE_FILES["app.js"]) // 10, len(raw)
        # A PNG is compressed already: sent as it is.
        png = httpx.get(d.url + "/logo.png", headers={"Accept-Encoding": "gzip"})
        assert "content-encoding" not in png.headers and "vary" not in png.headers, png.headers
        # The ETag: 304 with nothing, weak or not, until the file changes.
        tag = plain.headers["etag"]
        for listed in [tag, tag[2:], f'"x", {tag}', "*"]:
            again = httpx.get(d.url + "/app.js", headers={"If-None-Match": listed})
            assert again.status_code == 304 and again.content == b"" and again.headers["etag"] == tag, again.headers
            assert "content-length" not in again.headers, again.headers
        with open(os.path.join(d.site, "app.js"), "ab") as file:
            file.write(b"// changed\n")
        changed = httpx.get(d.url + "/app.js", headers={"If-None-Match": tag})
        assert changed.status_code == 200 and changed.content.endswith(b"// changed\n"), changed
        assert changed.headers["etag"] != tag

    def test_static_size_limit(self, d):
        # Over 4 MiB: refused, not read; the server goes on serving.
        body = expect_error(httpx.get(d.url + "/big.js"), 403, "limit")
        assert "4194304" in body["message"], body
        assert httpx.get(d.url + "/notes.txt").content == b"notes"

    def test_static_folder_checked_at_start_and_reload(self, d):
        binary = d.process.args[0]
        result = check_config(binary, 'http_static_dir = "/nonexistent/site"\n')
        assert result.returncode == 2, result
        assert "key 'http_static_dir': \"/nonexistent/site\": does not exist" in result.stderr + result.stdout, result
        result = check_config(binary, f'http_static_dir = "{d.site}/notes.txt"\n')
        assert result.returncode == 2 and "is not a directory" in result.stderr + result.stdout, result
        config = os.path.join(d.directory, "runneld.toml")
        with open(config) as file:
            original = file.read()

        def reload_with(text, logged):
            with open(config, "w") as file:
                file.write(text)
            count = sum(logged in line for line in d.log)
            d.process.send_signal(signal.SIGHUP)
            poll_until(lambda: d.log, lambda log: sum(logged in line for line in log) > count, "not " + logged)

        try:
            # A folder that is gone is a reload error: the running folder stays.
            reload_with(original.replace(d.site, d.site + "-gone"), "reload failed, keeping the running configuration")
            assert httpx.get(d.url + "/notes.txt").content == b"notes"
            # Off by a reload: the path is nobody's now (and without a token, not even that is said).
            reload_with(original.replace(f'"{d.site}"', '""'), "configuration reloaded: http_static_dir")
            expect_error(httpx.get(d.url + "/notes.txt"), 401, "unauthorized")
            expect_error(httpx.get(d.url + "/notes.txt", headers=AUTH), 404, "not_found")
        finally:
            reload_with(original, "configuration reloaded")
        assert httpx.get(d.url + "/notes.txt").content == b"notes"

    def test_clean_stop(self, d):
        assert_clean_stop(d)
