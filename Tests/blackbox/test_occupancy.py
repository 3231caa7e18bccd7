"""Occupancy and the server's `$` names against a real runneld over real sockets
(docs/protocol.md, "Occupancy").

    python3 -m pytest Tests/blackbox/test_occupancy.py [--runneld PATH]

`$sys.occupancy.S` over TCP: its value is how many subscriptions S has (patterns matching S
included), told at once when it goes from 0 to 1 and back, other changes coalesced (subscriptions
made in one burst give one value after the first); a storm of connections that subscribe and
close leaves it at 0. `$sys.occupancy.>` over a WebSocket (websockets) names each subject's
occupancy subject; `GET /events` (httpx) streams one. Writes to `$` names are refused over the
line protocol and HTTP, other `$` names are unknown, and `list` does not show the server's
subjects. No timings but deadlines.
"""

import json
import socket

import httpx
import pytest
from runneld_process import EventStream, LineClient, poll_until
from websockets.sync.client import connect


def occupancy(line):
    assert line.get("ev") == "next", line
    return line["value"]["subscribers"]


def watch(d, subject, timeout=10):
    """A connection subscribed to `$sys.occupancy.<subject>`, and the count it got first; a
    count late by `timeout` seconds is taken for lost."""
    watcher = LineClient(d.port, timeout=timeout)
    assert watcher.request({"op": "sub", "subject": f"$sys.occupancy.{subject}", "sid": "o"})["ok"]
    return watcher, occupancy(watcher.line())


def counts_until(watcher, final):
    """The counts `watcher` gets until one is `final`."""
    seen = []
    while not seen or seen[-1] != final:
        seen.append(occupancy(watcher.line()))
    return seen


@pytest.mark.daemon("")
class TestOccupancy:
    def test_the_first_and_last_subscriber_are_told_and_a_burst_is_coalesced(self, d):
        watcher, first = watch(d, "occ.a")
        assert first == 0
        subscriber = LineClient(d.port, no_delay=True)
        # Five subscriptions in one write: 0 -> 1 at once, then the rest within 100 ms as one.
        subscriber.socket.sendall(b"".join(
            json.dumps({"op": "sub", "subject": "occ.a", "sid": f"s{n}"}).encode() + b"\n" for n in range(5)))
        seen = counts_until(watcher, 5)
        assert seen[0] == 1 and seen == sorted(seen) and len(seen) <= 3, seen
        # A pattern that matches counts too; one that does not, does not.
        patterns = LineClient(d.port)
        assert patterns.request({"op": "sub", "subject": "occ.>", "sid": "p"})["ok"]
        assert patterns.request({"op": "sub", "subject": "other.>", "sid": "q"})["ok"]
        assert counts_until(watcher, 6)[-1] == 6
        subscriber.close()
        patterns.close()
        assert counts_until(watcher, 0)[-1] == 0
        watcher.close()

    def test_a_storm_of_connections_ends_at_zero(self, d):
        watcher, first = watch(d, "occ.storm")
        assert first == 0
        for _ in range(5):
            clients = [LineClient(d.port) for _ in range(20)]
            for client in clients:
                client.send({"op": "sub", "subject": "occ.storm"})
            for client in clients:
                assert client.line()["ok"]
            for client in clients:
                client.socket.shutdown(socket.SHUT_RDWR)
                client.close()
        # Quiet again: a late reader gets 0 (its count is the one sent last, so wait for it).
        poll_until(lambda: watch(d, "occ.storm"), lambda late: late[0].close() or late[1] == 0, "quiet", 10)
        # The first reader got every change up to that 0: each a change (no value twice in a
        # row), the first a 0 -> N, the last N -> 0.
        seen = []
        watcher.socket.settimeout(1)
        try:
            while True:
                seen.append(occupancy(watcher.line()))
        except TimeoutError:
            pass
        assert seen and seen[0] > 0 and seen[-1] == 0, seen
        assert all(a != b for a, b in zip(seen, seen[1:])), seen
        watcher.close()

    def test_an_occupancy_pattern_names_each_subject_over_a_websocket(self, d):
        with connect(d.ws_url, open_timeout=10, close_timeout=5) as ws:
            ws.send(json.dumps({"op": "sub", "subject": "$sys.occupancy.occ.ws.*", "sid": "w", "ref": 1}))
            assert json.loads(ws.recv(timeout=10))["ok"]
            subscriber = LineClient(d.port)
            assert subscriber.request({"op": "sub", "subject": "occ.ws.one"})["ok"]
            event = json.loads(ws.recv(timeout=10))
            assert event == {"ev": "next", "sid": "w", "subject": "$sys.occupancy.occ.ws.one",
                             "value": {"subscribers": 1}}, event
            subscriber.close()
            event = json.loads(ws.recv(timeout=10))
            assert event["subject"] == "$sys.occupancy.occ.ws.one" and event["value"] == {"subscribers": 0}, event

    def test_an_occupancy_subject_streams_over_sse(self, d):
        stream = EventStream(d, {"subject": "$sys.occupancy.occ.sse"}, timeout=10)
        assert json.loads(stream.event()["data"]) == {"subscribers": 0}
        subscriber = LineClient(d.port)
        assert subscriber.request({"op": "sub", "subject": "occ.sse"})["ok"]
        assert json.loads(stream.event()["data"]) == {"subscribers": 1}
        subscriber.close()
        stream.close()

    def test_the_servers_names_are_read_only_and_only_occupancy_exists(self, d):
        client = LineClient(d.port)
        for request in ({"op": "pub", "subject": "$sys.occupancy.occ.a", "value": 1},
                        {"op": "create", "subject": "$mine", "kind": "replay"},
                        {"op": "delete", "subject": "$sys.occupancy.occ.a"}):
            reply = client.request(request)
            assert reply["ok"] is False and reply["code"] == "unauthorized", (request, reply)
        for subject in ("$mine", "$sys.other", "$sys.>"):
            reply = client.request({"op": "sub", "subject": subject})
            assert reply["ok"] is False and reply["code"] == "unknown_subject", (subject, reply)
        answer = httpx.post(f"{d.url}/pub/$sys.occupancy.occ.a", json=1, timeout=10)
        assert answer.status_code == 401 and answer.json()["code"] == "unauthorized", answer.text
        # A subject's occupancy is not among the subjects `list` and `GET /subjects` give,
        # unless asked for by prefix.
        watcher, _ = watch(d, "occ.listed")
        names = [entry["subject"] for entry in client.request({"op": "list"})["subjects"]]
        assert not any(name.startswith("$") for name in names), names
        names = [entry["subject"] for entry in httpx.get(f"{d.url}/subjects", timeout=10).json()]
        assert not any(name.startswith("$") for name in names), names
        listed = client.request({"op": "list", "prefix": "$sys.occupancy.occ.listed"})["subjects"]
        assert [entry["subject"] for entry in listed] == ["$sys.occupancy.occ.listed"], listed
        answer = httpx.get(f"{d.url}/subjects", params={"prefix": "$sys.occupancy.occ.listed"}, timeout=10)
        assert answer.json() == listed, answer.text
        watcher.close()
        poll_until(lambda: client.request({"op": "list", "prefix": "$sys.occupancy.occ.listed"})["subjects"],
                   lambda subjects: subjects == [], "the occupancy subject let go once unread")
        client.close()
