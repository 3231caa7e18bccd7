"""Many event loops (docs/protocol.md, "Every core"): runneld with `--loops 4` against real clients over real sockets.

Connections land on the loops in turn (the fewest first), so a handful of clients covers every
loop; the checks read `/metrics` to make sure they did. The whole suite of the other scripts
also runs with `RUNNEL_TEST_LOOPS=4` (`make test`); these are the checks that are about the
loops themselves: values from many publishers reaching subscribers on every loop, in order, none
lost or twice; limits and counts for the whole process; a drain and a reload with every loop
busy.

    python3 -m pytest Tests/blackbox/test_loops.py [--runneld PATH]
"""

import json
import re
import signal
import threading
import urllib.request

import pytest

from runneld_process import Daemon, EventStream, LineClient, assert_clean_stop, expect_closing, poll_until, stats

LOOPS = 4


def metrics(d):
    """`/metrics` as a dict of sample name (with its labels) to value."""
    with urllib.request.urlopen(d.url + "/metrics", timeout=10) as response:
        text = response.read().decode()
    samples = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            samples[name] = float(value)
    return samples


def connections_per_loop(d):
    samples = metrics(d)
    return [samples[f'runnel_loop_connections{{loop="{loop}"}}'] for loop in range(LOOPS)]


def refused_message():
    return "too many connections: the server is at max_connections (12); try again later"


CONFIG = """
max_connections = 12
max_subjects = 20
"""


RELOAD_CONFIG = """
[[tokens]]
token = "kept-token"
subscribe = ["*"]

[[tokens]]
token = "dropped-token"
subscribe = ["*"]
"""


@pytest.mark.daemon("", loops=LOOPS)
class TestOrder:
    """Values from eight publishers reaching subscribers on every loop."""

    def test_values_from_many_publishers_reach_every_loop_in_order(self, d):
        # Eight TCP subscribers, one SSE stream and one pattern subscriber, then eight publishers:
        # every loop holds subscribers and publishers both.
        subscribers = [LineClient(d.port) for _ in range(8)]
        for client in subscribers:
            assert client.request({"op": "sub", "subject": "order.x"})["ok"]
        pattern = LineClient(d.port)
        assert pattern.request({"op": "sub", "subject": "order.*"})["ok"]
        stream = EventStream(d, {"subject": "order.x"})
        publishers = [LineClient(d.port) for _ in range(8)]
        per_publisher = 2000
        assert all(count >= 4 for count in connections_per_loop(d)), connections_per_loop(d)

        def publish(index, client):
            lines = b"".join(
                json.dumps({"op": "pub", "subject": "order.x", "value": {"p": index, "n": n}}).encode() + b"\n"
                for n in range(per_publisher))
            client.socket.sendall(lines)

        threads = [threading.Thread(target=publish, args=(index, client)) for index, client in enumerate(publishers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

        def expect_every_value_once_in_order(values, who):
            seen = [0] * len(publishers)
            for value in values:
                p, n = value["p"], value["n"]
                assert n == seen[p], f"{who}: publisher {p} sent {seen[p]} next, got {n}"
                seen[p] += 1
            assert seen == [per_publisher] * len(publishers), f"{who}: {seen}"

        total = per_publisher * len(publishers)
        for index, client in enumerate(subscribers + [pattern]):
            expect_every_value_once_in_order([client.next_value() for _ in range(total)], f"subscriber {index}")
        expect_every_value_once_in_order([json.loads(stream.event()["data"]) for _ in range(total)], "the SSE stream")
        after = stats(d)
        assert after["published"] >= total and after["delivered"] >= total * 10, after
        for client in subscribers + publishers + [pattern]:
            client.close()
        stream.close()

    def test_clean_stop(self, d):
        assert_clean_stop(d)


@pytest.mark.daemon(CONFIG, loops=LOOPS)
class TestLimits:
    """Limits and counts for the whole process, whichever loop a connection is on."""

    def test_connections_are_counted_and_refused_for_the_whole_process(self, d):
        # max_connections = 12 (CONFIG): the twelfth is let in, whichever loop it lands on, and
        # the thirteenth refused; the per-loop counts add up to the process's. One client watches
        # throughout (a connection closes a moment after its client has gone).
        observer = LineClient(d.port)
        poll_until(lambda: observer.request({"op": "stats"}), lambda s: s["connections"] == 1, "only the observer")
        clients = [LineClient(d.port) for _ in range(11)]
        assert all(client.request({"op": "ping"})["ok"] for client in clients)
        refused = LineClient(d.port)
        expect_closing({"ev": "closing", "code": "limit", "message": refused_message()}, line=refused)
        refused.close()
        clients.pop().close()
        after = poll_until(lambda: observer.request({"op": "stats"}), lambda s: s["connections"] == 11, "one let go")
        assert after["loops"] == LOOPS, after
        # The scrape's own connection is the twelfth (the refused one's socket closes a moment after
        # its client's).
        per_loop = poll_until(lambda: connections_per_loop(d), lambda counts: sum(counts) == 12, "connections per loop")
        assert min(per_loop) >= 2, per_loop
        for client in clients:
            client.close()
        # Room again for the next check.
        poll_until(lambda: observer.request({"op": "stats"}), lambda s: s["connections"] == 1, "the clients gone")
        observer.close()

    def test_subjects_are_limited_for_the_whole_process(self, d):
        # max_subjects = 20 (CONFIG): creations from connections on every loop share it.
        clients = [LineClient(d.port)]
        poll_until(lambda: clients[0].request({"op": "stats"}), lambda s: s["connections"] == 1,
                   "the last check's gone")
        clients += [LineClient(d.port) for _ in range(LOOPS - 1)]
        refusals = []
        for n in range(30):
            reply = clients[n % LOOPS].request({"op": "create", "subject": f"limits.s{n}", "kind": "replay"})
            if not reply["ok"]:
                refusals.append(reply["code"])
        assert clients[0].request({"op": "stats"})["subjects"] == 20
        assert refusals == ["limit"] * 10, refusals
        for client in clients:
            client.close()

    def test_clean_stop(self, d):
        assert_clean_stop(d)


class TestLifecycle:
    """A drain and a reload with every loop busy, each on a daemon of its own."""

    def test_a_drain_flushes_every_loop_before_the_exit(self, binary):
        # Subscribers on every loop hold a burst's values unread when SIGTERM comes: each gets all
        # of them, then its connection closes, and runneld exits with status 0.
        d = Daemon(binary, "", loops=LOOPS)
        try:
            subscribers = [LineClient(d.port) for _ in range(6)]
            for client in subscribers:
                assert client.request({"op": "sub", "subject": "drain"})["ok"]
            publisher = LineClient(d.port)
            count = 5000
            publisher.socket.sendall(b"".join(
                json.dumps({"op": "pub", "subject": "drain", "value": n}).encode() + b"\n" for n in range(count)))
            assert publisher.request({"op": "ping"})["ok"]
            d.process.send_signal(signal.SIGTERM)
            for index, client in enumerate(subscribers):
                values = []
                try:
                    while True:
                        line = client.line()
                        if line.get("ev") == "next":
                            values.append(line["value"])
                except (EOFError, ConnectionResetError):
                    pass
                assert values == list(range(count)), f"subscriber {index}: {len(values)} values"
            assert d.process.wait(timeout=30) == 0, "\n".join(d.log[-20:])
        finally:
            if d.process.poll() is None:
                d.process.kill()
                d.process.wait()

    def test_a_reload_reaches_connections_on_every_loop(self, binary):
        # Connections on every loop under a token that a reload removes: each gets its closing
        # line; those under the kept token go on.
        d = Daemon(binary, RELOAD_CONFIG, loops=LOOPS)
        try:
            clients = []
            for n in range(8):
                client = LineClient(d.port)
                token = "dropped-token" if n % 2 == 0 else "kept-token"
                assert client.request({"op": "auth", "token": token})["ok"]
                assert client.request({"op": "sub", "subject": "reload"})["ok"]
                clients.append((token, client))
            with open(d.directory + "/runneld.toml", "w") as file:
                file.write(RELOAD_CONFIG.split("[[tokens]]\ntoken = \"dropped-token\"")[0])
            d.process.send_signal(signal.SIGHUP)
            for token, client in clients:
                if token == "dropped-token":
                    closing = client.last_line()
                    assert closing["ev"] == "closing" and closing["code"] == "unauthorized", closing
                else:
                    assert client.request({"op": "ping"})["ok"]
                    client.close()
            # The log comes through a reader thread of the test's: polled, not read once.
            poll_until(lambda: "\n".join(d.log), lambda log: re.search("configuration reloaded", log),
                       "the reload's log line", 5)
        finally:
            assert d.stop() == 0
