"""Per-token permissions (docs/protocol.md, "Permissions per token") against a real runneld, over
every transport: TCP (the line protocol), WebSocket (websockets, a client no one here wrote),
Server-Sent Events and HTTP publish (httpx).

    python3 -m pytest Tests/blackbox/test_permissions.py [--runneld PATH]

Starts its own runneld on free loopback ports with `[[tokens]]` tables (one given as its SHA-256
digest) beside `auth_tokens`, and checks: every right (publish, subscribe, manage) on every
request and transport, each refusal `unauthorized` naming the missing right; `list` and
`/subjects` showing only what a token may read or publish to; pattern subscriptions that meet
subjects they may not read, present and created later; stages that reach a forbidden subject
at `sub` time (`merge`, `zipWith`) and at run time (`flattenMap`, `switchToLatest`), which ends
only that subscription; hashed tokens (the token works, its digest does not, a bad table is a
config error naming its index); then a SIGHUP reload that grants and revokes, seen by
connections already open on each transport (`error` events, an event stream's `event: error`,
and a removed token's `closing` line: a WebSocket then closes with 1008, an event stream ends
with `event: closing`). Needs websockets (13 or later) and httpx, as test_websocket.py does.
"""

import hashlib
import json
import os
import signal
import time

import httpx
import pytest
from runneld_process import EventStream, LineClient, assert_clean_stop, check_config, expect_closing
from websockets.sync.client import connect

HASHED = "hashed-writer"
CONFIG = f"""
auth_tokens = ["admin"]

[[tokens]]
token = "reader"
subscribe = ["sensors.>", "alerts"]

[[tokens]]
sha256 = "{hashlib.sha256(HASHED.encode()).hexdigest()}"
publish = ["sensors.*", "orders.eu.*"]

[[tokens]]
token = "manager"
manage = true

[[tokens]]
token = "doomed"
publish = [">"]
subscribe = [">"]
"""

# What the reload check rewrites the file to: the reader loses sensors.> (keeping sensors.a),
# the writer gains alerts, the doomed token goes.
RELOADED = f"""
auth_tokens = ["admin"]

[[tokens]]
token = "reader"
subscribe = ["sensors.a", "alerts"]

[[tokens]]
sha256 = "{hashlib.sha256(HASHED.encode()).hexdigest()}"
publish = ["sensors.*", "orders.eu.*", "alerts"]

[[tokens]]
token = "manager"
manage = true
"""


def refused(message, stage=None):
    """The error a refusal carries (reply, error object or event), `code` and `message`."""
    error = {"code": "unauthorized", "message": message}
    if stage is not None:
        error["stage"] = stage
    return error


def error_of(line):
    return {key: line[key] for key in ("code", "message", "stage") if key in line}


def tcp(d, token):
    client = LineClient(d.port)
    reply = client.request({"op": "auth", "token": token})
    assert reply == {"ok": True, "ref": 1}, reply
    return client


def ws(d, token):
    return connect(d.ws_url + f"?token={token}", open_timeout=5)


def ws_request(socket, request):
    """Sends `request` with ref 1 and returns its reply."""
    socket.send(json.dumps(dict(request, ref=1)))
    while True:
        line = json.loads(socket.recv(timeout=5))
        if line.get("ref") == 1:
            return line


def bearer(token):
    return {"Authorization": f"Bearer {token}"}


def publish_as_admin(d, subject, value):
    response = httpx.post(d.url + "/pub/" + subject, json=value, headers=bearer("admin"))
    assert response.status_code == 200, response.text


def event_stream(d, subject, token, **query):
    """GET /events on `subject` with `token`, checked to be open."""
    stream = EventStream(d, dict(subject=subject, token=token, **query))
    assert stream.response.status_code == 200, stream.response.status_code
    return stream


def wait_for_stream(d, subject, count=1):
    """Waits until `subject` has `count` subscribers that name it (an SSE stream's `sub` is in)."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        listed = httpx.get(d.url + "/subjects", params={"prefix": subject}, headers=bearer("admin")).json()
        if any(entry["subject"] == subject and entry["subscribers"] >= count for entry in listed):
            return
        time.sleep(0.02)
    raise AssertionError(f"no stream subscribed to {subject}")


def reload(d, toml):
    lines_before = len(d.log)
    with open(os.path.join(d.directory, "runneld.toml"), "w") as file:
        file.write(toml)
    d.process.send_signal(signal.SIGHUP)
    deadline = time.monotonic() + 10
    while not any("configuration reloaded: tokens" in line for line in d.log[lines_before:]):
        assert time.monotonic() < deadline, "no reload in the log:\n" + "\n".join(d.log[-10:])
        time.sleep(0.02)


@pytest.mark.daemon(CONFIG)
class TestMain:
    """Every right on every transport, hashed tokens, then a reload, against one daemon."""

    # The line protocol over TCP.

    def test_tcp_each_request_needs_its_right(self, d):
        reader, writer, manager = tcp(d, "reader"), tcp(d, HASHED), tcp(d, "manager")
        assert error_of(reader.request({"op": "pub", "subject": "sensors.a", "value": 1})) == refused(
            "token may not publish to sensors.a")
        assert error_of(writer.request({"op": "pub", "subject": "orders.us.1", "value": 1})) == refused(
            "token may not publish to orders.us.1")
        assert writer.request({"op": "pub", "subject": "orders.eu.1", "value": 1})["ok"]
        assert error_of(writer.request({"op": "sub", "subject": "orders.eu.1"})) == refused(
            "token may not subscribe to orders.eu.1")
        assert error_of(reader.request({"op": "sub", "subject": "orders.eu.1"})) == refused(
            "token may not subscribe to orders.eu.1")
        assert reader.request({"op": "sub", "subject": "sensors.tcp", "sid": "s"})["ok"]
        for op, extra, right in [("create", {"kind": "replay"}, "create subjects"), ("complete", {},
                                                                                     "complete subjects"),
                                 ("error", {"message": "m"}, "error subjects"), ("delete", {}, "delete subjects")]:
            for client in (reader, writer):
                reply = client.request(dict({"op": op, "subject": "sensors.tcp"}, **extra))
                assert error_of(reply) == refused(f"token may not {right} (it lacks manage)"), reply
        assert error_of(reader.request({"op": "stats"})) == refused("token may not read the server's stats (it lacks manage)")
        assert "connections" in manager.request({"op": "stats"})
        assert manager.request({"op": "create", "subject": "managed", "kind": "subject"})["ok"]
        assert error_of(manager.request({"op": "sub", "subject": "managed"}))["code"] == "unauthorized"
        # Nothing was created by a refusal; `list` shows what each token may read or publish to.
        names = lambda client: [entry["subject"] for entry in client.request({"op": "list"})["subjects"]]
        assert names(reader) == ["sensors.tcp"], names(reader)
        assert names(writer) == ["orders.eu.1", "sensors.tcp"], names(writer)
        assert names(manager) == [], names(manager)
        assert "orders.us.1" not in names(tcp(d, "admin"))
        assert reader.request({"op": "ping"}) == {"ok": True, "ref": 1}
        for client in (reader, writer, manager):
            client.close()

    def test_tcp_hashed_tokens(self, d):
        client = LineClient(d.port)
        digest = hashlib.sha256(HASHED.encode()).hexdigest()
        for wrong in (digest, HASHED + "x", HASHED[:-1], ""):
            assert error_of(client.request({"op": "auth", "token": wrong})) == refused("invalid token"), wrong
        assert error_of(client.request({"op": "ping"}))["code"] == "unauthorized"
        assert client.request({"op": "auth", "token": HASHED}) == {"ok": True, "ref": 1}
        assert client.request({"op": "pub", "subject": "sensors.h", "value": 1})["ok"]
        client.close()

    def test_config_errors_name_the_table(self, d):
        cases = [
            ('[[tokens]]\npublish = ["a"]', "key 'tokens[0]': needs token"),
            ('[[tokens]]\ntoken = "a"\n[[tokens]]\ntoken = "b"\nsha256 = "' + "0" * 64 + '"',
             "key 'tokens[1]': has both token and sha256"),
            ('[[tokens]]\nsha256 = "' + "g" * 64 + '"', "key 'tokens[0].sha256': must be 64 hex digits"),
            ('[[tokens]]\ntoken = "a"\nsubscribe = ["ok", "a.>.b"]', "key 'tokens[0].subscribe[1]'"),
        ]
        binary = d.process.args[0]
        for toml, expected in cases:
            result = check_config(binary, toml)
            assert result.returncode == 2 and expected in result.stderr, (result.returncode, result.stderr)

    def test_tcp_patterns_meet_only_readable_subjects(self, d):
        publish_as_admin(d, "orders.eu.p", 0)
        publish_as_admin(d, "sensors.p", 0)
        reader = tcp(d, "reader")
        assert reader.request({"op": "sub", "subject": ">", "sid": "all"})["ok"]
        assert error_of(reader.request({"op": "sub", "subject": "orders.>"})) == refused(
            "token may not subscribe to any subject matching orders.>")
        # Subjects created after the `sub`, readable and not, in one publisher's order.
        for subject, value in [("orders.eu.later", 1), ("sensors.later", 2), ("orders.x", 3), ("alerts", 4),
                               ("sensors.p", 5), ("orders.eu.p", 6), ("sensors.deep.er", 7)]:
            publish_as_admin(d, subject, value)
        seen = [(line["subject"], line["value"]) for line in (reader.line() for _ in range(4))]
        assert seen == [("sensors.later", 2), ("alerts", 4), ("sensors.p", 5), ("sensors.deep.er", 7)], seen
        assert reader.request({"op": "ping"}) == {"ok": True, "ref": 1}
        reader.close()

    def test_tcp_stages_reach_only_readable_subjects(self, d):
        reader = tcp(d, "reader")
        for stage in [{"op": "merge", "subjects": ["alerts", "orders.x"]}, {"op": "zipWith", "subject": "orders.x"},
                      {"op": "combineLatestWith", "subject": "orders.x"}]:
            reply = reader.request({"op": "sub", "subject": "alerts", "ops": [{"op": "take", "count": 9}, stage]})
            assert error_of(reply) == refused("token may not subscribe to orders.x", stage=1), reply
        assert reader.request({"op": "sub", "subject": "sensors.names", "sid": "fm",
                               "ops": [{"op": "flattenMap", "expr": "."}]})["ok"]
        assert reader.request({"op": "sub", "subject": "sensors.names", "sid": "sw",
                               "ops": [{"op": "switchToLatest"}]})["ok"]
        assert reader.request({"op": "sub", "subject": "alerts", "sid": "plain"})["ok"]
        publish_as_admin(d, "sensors.names", "orders.x")
        ended = {line["sid"]: error_of(line) for line in (reader.line() for _ in range(2))}
        assert ended == {"fm": refused("token may not subscribe to orders.x", 0),
                         "sw": refused("token may not subscribe to orders.x", 0)}, ended
        # The connection and its other subscription go on.
        publish_as_admin(d, "alerts", "still")
        assert reader.line() == {"ev": "next", "sid": "plain", "value": "still"}
        assert reader.request({"op": "ping"}) == {"ok": True, "ref": 1}
        reader.close()

    # WebSocket.

    def test_websocket_each_request_needs_its_right(self, d):
        with ws(d, "reader") as socket:
            assert error_of(ws_request(socket, {"op": "pub", "subject": "sensors.w", "value": 1})) == refused(
                "token may not publish to sensors.w")
            assert error_of(ws_request(socket, {"op": "sub", "subject": "orders.w"})) == refused(
                "token may not subscribe to orders.w")
            assert error_of(ws_request(socket, {"op": "delete", "subject": "sensors.w"})) == refused(
                "token may not delete subjects (it lacks manage)")
            assert error_of(ws_request(socket, {"op": "stats"}))["code"] == "unauthorized"
            assert ws_request(socket, {"op": "sub", "subject": "sensors.*", "sid": "p"})["ok"]
            publish_as_admin(d, "orders.w", 1)
            publish_as_admin(d, "sensors.w", 2)
            assert json.loads(socket.recv(timeout=5)) == {"ev": "next", "sid": "p", "subject": "sensors.w", "value": 2}
            socket.send(json.dumps({"op": "sub", "subject": "sensors.ws.names", "sid": "fm",
                                    "ops": [{"op": "flattenMap", "expr": "."}], "ref": 2}))
            assert json.loads(socket.recv(timeout=5))["ok"]
            publish_as_admin(d, "sensors.ws.names", "orders.w")
            assert error_of(json.loads(socket.recv(timeout=5))) == refused("token may not subscribe to orders.w", 0)
        # Without a token in the URL: `auth` first, with the hashed one.
        with connect(d.ws_url, open_timeout=5) as socket:
            assert ws_request(socket, {"op": "pub", "subject": "sensors.w", "value": 1})["code"] == "unauthorized"
            assert ws_request(socket, {"op": "auth", "token": HASHED})["ok"]
            assert ws_request(socket, {"op": "pub", "subject": "sensors.w", "value": 1})["ok"]
            assert error_of(ws_request(socket, {"op": "pub", "subject": "alerts", "value": 1})) == refused(
                "token may not publish to alerts")

    # Server-Sent Events and HTTP.

    def test_sse_subscribe_right(self, d):
        response = httpx.get(d.url + "/events", params={"subject": "orders.s", "token": "reader"})
        assert response.status_code == 401 and error_of(response.json()) == refused(
            "token may not subscribe to orders.s"), response.text
        response = httpx.get(d.url + "/events", params={"subject": "sensors.s", "token": HASHED})
        assert response.status_code == 401 and response.json()["code"] == "unauthorized"
        response = httpx.get(d.url + "/events", params={"subject": "orders.>", "token": "reader"})
        assert response.status_code == 401
        # A pattern stream (its `sub` is in once the head has come) meets subjects created later.
        stream = event_stream(d, ">", "reader")
        try:
            for subject, value in [("orders.s", 0), ("sensors.s", 1), ("orders.s", 2), ("sensors.s", 3)]:
                publish_as_admin(d, subject, value)
            assert stream.event() == {"data": "1"}
            assert stream.event() == {"data": "3"}
        finally:
            stream.close()
        # A stage that reaches a forbidden subject at run time ends the stream with `event: error`.
        stream = event_stream(d, "sensors.sse.names", "reader", ops='[{"op":"switchToLatest"}]')
        try:
            publish_as_admin(d, "sensors.sse.names", "orders.s")
            assert stream.event() == {"event": "error", "data": json.dumps(
                refused("token may not subscribe to orders.s", 0), separators=(",", ":"))}
            assert stream.event() is None
        finally:
            stream.close()

    def test_http_publish_and_reading_rights(self, d):
        response = httpx.post(d.url + "/pub/sensors.h", json=1, headers=bearer("reader"))
        assert response.status_code == 401 and error_of(response.json()) == refused(
            "token may not publish to sensors.h"), response.text
        response = httpx.post(d.url + "/pub/orders.us.h", json=1, headers=bearer(HASHED))
        assert response.status_code == 401 and error_of(response.json()) == refused(
            "token may not publish to orders.us.h")
        response = httpx.post(d.url + "/pub/orders.eu.h", content=b"1\n2\n", headers=dict(
            bearer(HASHED), **{"Content-Type": "application/x-ndjson"}))
        assert response.json() == {"ok": True, "published": 2}, response.text
        for path in ("/stats", "/metrics"):
            for token in ("reader", HASHED):
                response = httpx.get(d.url + path, headers=bearer(token))
                assert response.status_code == 401 and response.json()["message"].endswith("(it lacks manage)"), path
            assert httpx.get(d.url + path, headers=bearer("manager")).status_code == 200
        listed = lambda token: [entry["subject"] for entry in
                                httpx.get(d.url + "/subjects", headers=bearer(token)).json()]
        assert all(name.startswith("sensors.") or name == "alerts" for name in listed("reader")), listed("reader")
        assert "orders.eu.h" in listed(HASHED) and "alerts" not in listed(HASHED)
        assert listed("manager") == []
        assert httpx.get(d.url + "/healthz").status_code == 200

    # Reload, last: it rewrites the configuration.

    def test_reload_grants_and_revokes_on_open_connections(self, d):
        publish_as_admin(d, "sensors.b", 0)
        reader, writer, doomed = tcp(d, "reader"), tcp(d, HASHED), tcp(d, "doomed")
        for sid, subject in [("a", "sensors.a"), ("b", "sensors.b"), ("al", "alerts"), ("p", "sensors.>")]:
            assert reader.request({"op": "sub", "subject": subject, "sid": sid})["ok"]
        assert error_of(writer.request({"op": "pub", "subject": "alerts", "value": 0})) == refused(
            "token may not publish to alerts")
        with ws(d, "doomed") as doomed_ws:
            assert ws_request(doomed_ws, {"op": "sub", "subject": "x", "sid": "x"})["ok"]
            doomed_sse = event_stream(d, "doomed.s", "doomed")
            wait_for_stream(d, "doomed.s")
            narrowed_sse = event_stream(d, "sensors.b", "reader")
            wait_for_stream(d, "sensors.b", 2)
            bystander = tcp(d, "admin")

            reload(d, RELOADED)

            reason = "(permissions changed by a reload)"
            ended = {line["sid"]: line["message"] for line in (reader.line() for _ in range(2))}
            assert ended == {"b": f"token may no longer subscribe to sensors.b {reason}",
                             "p": f"token may no longer subscribe to sensors.b {reason}"}, ended
            closing = {"ev": "closing", "code": "unauthorized",
                       "message": "the token was removed from the configuration"}
            expect_closing(closing, line=doomed, websockets=[doomed_ws], stream=doomed_sse)
            assert narrowed_sse.event() == {"event": "error", "data": json.dumps(
                refused(f"token may no longer subscribe to sensors.b {reason}"), separators=(",", ":"))}
            assert narrowed_sse.event() is None
            narrowed_sse.close()
            # Granted: the writer may publish to alerts now, and the reader's kept subscriptions get it.
            assert writer.request({"op": "pub", "subject": "alerts", "value": 5}) == {"ok": True, "ref": 1,
                                                                                      "receivers": 1}
            assert reader.line() == {"ev": "next", "sid": "al", "value": 5}
            publish_as_admin(d, "sensors.a", 6)
            assert reader.line() == {"ev": "next", "sid": "a", "value": 6}
            assert error_of(reader.request({"op": "sub", "subject": "sensors.b"}))["code"] == "unauthorized"
            # A removed token is refused from now on; others go on.
            assert error_of(LineClient(d.port).request({"op": "auth", "token": "doomed"})) == refused("invalid token")
            assert bystander.request({"op": "ping"}) == {"ok": True, "ref": 1}
            for client in (reader, writer, bystander):
                client.close()

    def test_clean_stop(self, d):
        assert_clean_stop(d)
